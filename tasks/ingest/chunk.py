"""Chunk: a parsed MinerU folder → the document's final chunks, through the named stages in order.

normalize (content_list v2/v1) → cross-page tables → heading levels → section paths → captions
→ post-processing passes → images copied by content MD5 → LLM/VLM enrichment (only when an
endpoint is configured) → semantic_content → BM25 tokens (stored with the chunk) → ids; then
written as the document's Parquet file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from schemas.arrow import to_table
from schemas.chunk import Chunk, assign_ids, chunks_path
from schemas.errors import EmptyDocumentError
from schemas.settings import Settings
from tasks.common.text import tokenize_many
from tasks.ingest.content_list import Normalized, normalize_parsed
from tasks.ingest.discover import SourceFile
from tasks.ingest.enrich import EnrichStats, build_semantic_content, enrich_chunks
from tasks.ingest.headings import HeadingRules, assign_heading_levels, assign_section_paths
from tasks.ingest.images import attach_captions, copy_images
from tasks.ingest.land import LandedChunks, write_chunk_rows
from tasks.ingest.postprocess import ChunkingSettings, postprocess
from tasks.ingest.tables import merge_cross_page_tables, title_tables


@dataclass
class ChunkedDocument:
    chunks: list[Chunk]
    normalized: Normalized  # counts of the items dropped at normalization
    items_normalized: int  # chunks before the passes (for before/after quality figures)
    images_copied: int
    images_missing: int
    enrichment: EnrichStats = field(default_factory=EnrichStats)  # VLM/LLM calls, cache hits, fallbacks


def chunking_settings(settings: Settings) -> ChunkingSettings:
    s = settings.ingest
    return ChunkingSettings(s.min_merge_size, s.max_merged_size, s.max_chunk_size)


def heading_rules(settings: Settings) -> HeadingRules:
    s = settings.ingest
    return HeadingRules(max_chars={1: s.heading_max_h1, 2: s.heading_max_h2, 3: s.heading_max_h3},
                        max_chars_deeper=s.heading_max_h3)


def structure(normalized: Normalized, settings: Settings) -> list[Chunk]:
    """Normalized items with merged tables, reliable heading levels, section paths, captions and
    statement titles."""
    chunks = merge_cross_page_tables(normalized.chunks)
    chunks = assign_section_paths(assign_heading_levels(chunks, heading_rules(settings)))
    chunks = attach_captions(chunks, max_caption_len=settings.ingest.caption_max_chars,
                             context_chars=settings.ingest.image_context_chars)
    return title_tables(chunks)


def build_chunks(parsed_dir: Path, settings: Settings, *, kb: str, doc_md5: str, source: str) -> ChunkedDocument:
    normalized = normalize_parsed(parsed_dir, keep_furniture=settings.ingest.keep_furniture)
    structured = structure(normalized, settings)
    items = len(structured)
    chunks = postprocess(structured, chunking_settings(settings))
    copied = copy_images(chunks, parsed_dir, settings.images_dir)
    enrichment = enrich_chunks(chunks, settings.images_dir, settings)
    build_semantic_content(chunks)
    for chunk, tokens in zip(chunks, tokenize_many([c.semantic_content for c in chunks],
                                                   settings.index.bm25_user_dict or None)):
        chunk.tokens = tokens
    assign_ids(chunks, kb=kb, doc_md5=doc_md5, source=source)
    return ChunkedDocument(chunks, normalized, items, copied.copied, len(copied.missing), enrichment)


def chunk_document(src: SourceFile, parsed_dir: Path, kb: str, settings: Settings) -> LandedChunks:
    """Build a parsed document's chunks and write them to its Parquet file (not yet in DuckDB)."""
    built = build_chunks(parsed_dir, settings, kb=kb, doc_md5=src.md5, source=src.source)
    n = built.normalized
    if not built.chunks:  # landing it would hide the problem: a document nobody can find
        raise EmptyDocumentError(str(src.path), f"no content to index: the parser found {n.items_total} items "
                                                f"({n.dropped_empty} empty, {n.dropped_furniture} page furniture "
                                                "dropped) and no text, table or image")
    rows = to_table(built.chunks, Chunk)
    path = write_chunk_rows(rows, chunks_path(settings.chunks_dir, kb, src.md5))
    return LandedChunks(path, len(built.chunks), n.items_total, n.dropped_empty, n.dropped_furniture, n.dropped_ghost,
                        built.enrichment.calls, built.enrichment.fallbacks, rows)
