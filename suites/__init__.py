"""Differential suites: generated cases run on live servers and compared with the reference."""
