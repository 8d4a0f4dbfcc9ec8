"""The contract between suites and reports: one row per case, written as Parquet (``schema``, ``writer``),
and the one way both sides read it back (the query layer below both): ``load`` checks run directories,
``rules`` and ``queries`` are the aggregations and the counts, written once as SQL, ``duckdb_sql`` and
``spark_sql`` run them (``spark`` starts the Spark session) into ``aggregates``, and ``counts`` is the
verdict tally every exit status is decided on. The suites never import the reports."""
