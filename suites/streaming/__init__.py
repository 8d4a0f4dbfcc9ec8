"""NATS Streaming channel partitions, live: layouts of partitioned servers with one cluster ID on a NATS
network, compared with ``reference.channels`` (https://docs.nats.io/legacy/stan/nats-streaming-concepts/partitioning).

``layouts`` holds the layout value, its JSON form and its record column, ``strategies`` generates
layouts and channels, ``fault_tolerance`` is the document's FT-pairs example as a scenario (and its
replay). Running a layout and judging every server start and every request is the family's
(``suites.families.streaming``), which the campaign and replay go through too. Tests: ``test_channels.py``
(properties and the document's examples), ``test_fault_tolerance.py``,
``test_cluster_forming.py`` (running servers failing when their NATS servers join). They run once per
session against nats-streaming-server 0.25.6 (not per ``--server-version``, which names nats-server
releases); ``conftest.py`` provides the NATS network.
"""
