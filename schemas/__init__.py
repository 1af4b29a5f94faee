"""Data contracts: records as dataclasses and their pyarrow schemas, settings, errors."""
