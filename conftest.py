"""Root conftest: loads the nats-conformance pytest plugin (options, markers, server fixtures)."""

pytest_plugins = ["fixtures.plugin", "pytester"]
