"""The pipeline on Spark (PySpark): export, ingest, replay and metrics for fleets of groups.

DuckDB stays the embedded default; these run the same work over Parquet on a Spark
cluster (or ``local[*]``). See docs/spark.md.
"""
