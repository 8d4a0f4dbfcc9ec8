"""NATS Streaming channel partitions, live: layouts of partitioned servers with one cluster ID on a NATS
network, compared with ``reference.channels`` (``docs/streaming-channel-partitioning.txt``).

``layouts`` holds the layout value and its JSON form (the ``source`` of every case), ``partitions`` runs a
layout and judges every server start and every request, ``strategies`` generates layouts and channels,
``replay`` runs one recorded case again; the tests are in ``test_channels.py`` and run once per session
against nats-streaming-server 0.25.6 (not per ``--server-version``, which names nats-server releases).
"""
