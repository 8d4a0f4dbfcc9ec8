"""The contract between suites and reports: one row per case, written as Parquet."""
