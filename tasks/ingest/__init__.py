"""Ingest: files → parsed MinerU output → chunks → Parquet and DuckDB rows."""
