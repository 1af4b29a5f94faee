"""Indexes: embeddings, the Chroma collection and the BM25 index of a knowledge base, kept in line with DuckDB."""
