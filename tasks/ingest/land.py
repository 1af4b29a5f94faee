"""Land: a document's chunks as one Parquet file, written atomically (temp file + rename), then
swapped into DuckDB with its document and manifest rows in one transaction — a batch of documents
in one transaction, falling back to one per document when the batch fails; and the removal of
files gone from the folders they were found in."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from schemas.arrow import to_table
from schemas.chunk import Chunk, chunks_path
from schemas.errors import WarehouseBusyError
from schemas.ingest import Document, ManifestEntry
from schemas.settings import Settings
from tasks.common.files import write_parquet
from tasks.common.lock import clear_sync_pending, mark_sync_pending
from tasks.index import snapshot
from tasks.index.sync import rebuild_bm25, remove_document
from tasks.ingest.discover import SourceFile
from tasks.ingest.manifest import LANDED
from tasks.ingest.parse import ParsedOutput
from warehouse import db


@dataclass
class LandedChunks:
    """A document's chunks written to its Parquet file (not yet in DuckDB), with the counts of
    what chunking kept and dropped."""

    chunks_path: Path
    chunk_count: int
    items_total: int
    dropped_empty: int
    dropped_furniture: int
    dropped_ghost: int
    enrich_calls: int = 0  # VLM/LLM requests made (0 when everything came from the cache)
    enrich_fallbacks: int = 0
    # the rows as written, handed from the worker process to the index stream so that it does not read
    # the file back (~2 ms a small file); landing reads the file, which checks it
    rows: pa.Table | None = field(default=None, repr=False, compare=False)


# Below this many bytes of chunk rows, a document's Parquet is written plain: zstd, statistics and
# dictionaries cost ~20 ms per file (bench/ingest_scale.py --parquet) and save nothing on a few rows.
PLAIN_PARQUET_BYTES = 64 * 1024


def write_chunks(chunks: list[Chunk], path: Path) -> Path:
    return write_chunk_rows(to_table(chunks, Chunk), path)


def write_chunk_rows(table: pa.Table, path: Path) -> Path:
    if table.nbytes < PLAIN_PARQUET_BYTES:
        return write_parquet(table, path, compression="none", write_statistics=False, use_dictionary=False)
    return write_parquet(table, path)


def _rows(src: SourceFile, parsed: ParsedOutput, chunked: LandedChunks, kb: str, run_id: str,
          pipeline_key: str) -> tuple[Document, ManifestEntry]:
    now = datetime.now(timezone.utc)
    document = Document(
        kb=kb, doc_md5=src.md5, source=src.source, path=str(src.path), doc_type=src.doc_type,
        size_bytes=src.size_bytes, parse_backend=parsed.key.backend, parser_version=parsed.key.parser_version,
        parsed_dir=str(parsed.parsed_dir), chunks_path=str(chunked.chunks_path), chunk_count=chunked.chunk_count,
        items_total=chunked.items_total, dropped_empty=chunked.dropped_empty,
        dropped_furniture=chunked.dropped_furniture, dropped_ghost=chunked.dropped_ghost,
        parse_seconds=round(parsed.seconds, 3), parse_cached=parsed.cached, run_id=run_id, ingested_at=now,
    )
    entry = ManifestEntry(kb, str(src.path), src.source, src.md5, LANDED, chunked.chunk_count, pipeline_key,
                          run_id, now)
    return document, entry


def land_document(src: SourceFile, parsed: ParsedOutput, chunked: LandedChunks, kb: str, run_id: str,
                  settings: Settings, pipeline_key: str = "") -> list[str]:
    """Swap the document's new rows and its manifest row (status `landed`) in, in one transaction;
    then delete the Parquet files of the versions it replaced. Returns their MD5s."""
    document, entry = _rows(src, parsed, chunked, kb, run_id, pipeline_key)
    replaced = db.replace_document(settings.db_path, document, chunked.chunks_path, entry)
    for old_md5 in replaced:  # the old version's Parquet goes only after the new rows committed
        chunks_path(settings.chunks_dir, kb, old_md5).unlink(missing_ok=True)
    return replaced


def _retry_busy(write, attempts: int = 3, delay_s: float = 2.0):
    """DuckDB is a single file: a transient lock (a concurrent `kbflow sql`) is worth a retry."""
    for attempt in range(attempts):
        try:
            return write()
        except WarehouseBusyError:
            if attempt == attempts - 1:
                raise
            time.sleep(delay_s)


def land_documents(items: list[tuple[SourceFile, ParsedOutput, LandedChunks]], kb: str, run_id: str,
                   settings: Settings, pipeline_key: str = "") -> dict[str, Exception]:
    """Land many documents in one DuckDB transaction (each with its manifest row); when that fails
    (one bad Parquet file, a repeated MD5), land them one by one, so a bad document fails alone.
    Returns source → the error of each document that did not land (its old version stays whole)."""
    new_md5s = {src.md5 for src, _, _ in items}
    if len(items) > 1 and len(new_md5s) == len(items):  # (a batch cannot order two versions of one content)
        rows = [_rows(src, parsed, chunked, kb, run_id, pipeline_key) for src, parsed, chunked in items]
        try:
            replaced = _retry_busy(lambda: db.replace_documents(
                settings.db_path, [d for d, _ in rows], [chunked.chunks_path for _, _, chunked in items],
                [e for _, e in rows]))
        except Exception:  # rolled back as a whole: one by one below
            pass
        else:
            for old_md5s in replaced.values():  # the old versions' Parquet goes only after the commit
                for old_md5 in old_md5s:
                    if old_md5 not in new_md5s:  # (content that moved to another name in this batch stays)
                        chunks_path(settings.chunks_dir, kb, old_md5).unlink(missing_ok=True)
            return {}
    errors: dict[str, Exception] = {}
    for src, parsed, chunked in items:
        try:
            _retry_busy(lambda: land_document(src, parsed, chunked, kb, run_id, settings, pipeline_key))
        except Exception as exc:  # this document alone: the others land
            errors[src.source] = exc
    return errors


def remove_deleted(settings: Settings, kb: str, entries: list[ManifestEntry], held: set[str]) -> dict[str, str]:
    """Delete files gone from their folder from Chroma, DuckDB (rows, manifest) and Parquet; BM25
    follows in the index stage. A source name now held by another file found this run was already
    replaced by it: only the stale manifest row goes. Returns the error of each removal that failed."""
    errors: dict[str, str] = {}
    stale_rows = []  # manifest rows only: their source has no document of its own to remove
    for entry in entries:
        if not entry.source or entry.source in held:
            stale_rows.append(entry.path)
            continue
        try:
            remove_document(settings, kb, entry.source)  # its manifest rows go in the same transaction
        except Exception as exc:  # retried by the next run: the manifest row is still there
            errors[entry.path] = f"{type(exc).__name__}: {exc}"[:500]
    try:
        db.delete_manifest(settings.db_path, kb, stale_rows)
    except Exception as exc:
        errors.update({path: f"{type(exc).__name__}: {exc}"[:500] for path in stale_rows})
    return errors


def remove_sources(settings: Settings, kb: str, sources: list[str]) -> dict[str, int]:
    """`kbflow rm`: each source from Chroma, DuckDB and Parquet, then BM25; then publish what readers
    see (the caller holds the write lock). Returns the Chroma chunks removed per source."""
    mark_sync_pending(settings.home, kb)
    removed = {source: remove_document(settings, kb, source) for source in sources}
    rebuild_bm25(settings, kb)
    snapshot.publish(settings, kb)
    clear_sync_pending(settings.home, kb)
    return removed

