"""Spark reports built from recorded cases."""
