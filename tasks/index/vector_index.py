"""Vector index: one Chroma collection per knowledge base, ids = chunk_id (and "{chunk_id}#{n}" for
the views of a table longer than the model reads, `tasks.index.views`: same metadata as their chunk).

PersistentClient under the home by default; HttpClient when `chroma_url` is set (a Chroma server
for stores that outgrow one machine). Documents are the chunks' semantic_content; metadata is the
seed 000 §3.2 set (plus doc_md5, so a document can be found and removed), with no None values and
no large blobs. Embeddings are always given: Chroma's own embedding function (which would fetch a
model from a hub) is disabled.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Sequence
from urllib.parse import urlparse

import numpy as np

from schemas.chunk import Chunk
from schemas.settings import Settings
from tasks.index.views import View, chunk_id_of

# Chroma caps a single write (the client says how much: `max_batch`); larger batches go in slices.
MAX_BATCH = 4000
SOURCES_PER_GET = 500  # sources per `$in` lookup of existing ids
# records per `get` of a whole collection: Chroma's SQLite reads their metadata with one variable per
# id, and a single get of 50,000 chunks failed with "too many SQL variables" (limit 32,766)
GET_PAGE = 10_000
DOC_TYPES = {"pdf": "pdf", "docx": "word", "doc": "word", "pptx": "powerpoint", "xlsx": "excel", "md": "markdown",
             "txt": "text", "html": "html", "htm": "html"}


def collection_name(kb: str) -> str:
    # Chroma names: 3-63 chars of [a-zA-Z0-9._-], starting and ending alphanumeric
    return f"kbflow_{kb}"


def client(settings: Settings, *, create: bool = True):
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.runtime.chroma_url:
        url = urlparse(settings.runtime.chroma_url)
        return chromadb.HttpClient(host=url.hostname or "localhost", port=url.port or 8000,
                                   ssl=url.scheme == "https", settings=chroma_settings)
    if create:
        settings.chroma_dir.mkdir(parents=True, exist_ok=True)
    elif not settings.chroma_dir.is_dir():
        raise FileNotFoundError(f"no Chroma store at {settings.chroma_dir}")
    return chromadb.PersistentClient(path=str(settings.chroma_dir), settings=chroma_settings)


def collection(settings: Settings, kb: str):
    return client(settings).get_or_create_collection(
        collection_name(kb), configuration={"hnsw": {"space": "cosine"}}, embedding_function=None)


def chunk_metadata(chunk: Chunk, kb: str) -> dict[str, Any]:
    """Seed 000 §3.2 metadata: scalars only, no None, no table HTML."""
    suffix = chunk.source.rsplit(".", 1)[-1].lower() if "." in chunk.source else ""
    meta: dict[str, Any] = {
        "chunk_id": chunk.chunk_id,
        "chunk_index": chunk.chunk_index,
        "chunk_type": chunk.chunk_type,
        "source": chunk.source,
        "collection": kb,
        "doc_type": DOC_TYPES.get(suffix, suffix or "mineru"),
        "doc_md5": chunk.doc_md5,
        "page": chunk.page_start,
        "page_end": chunk.page_end,
        "section": chunk.section_path,
        "status": "active",
        "version": "v1",
        "images_json": json.dumps([{"id": name, "order": i + 1} for i, name in enumerate(chunk.images)],
                                  ensure_ascii=False),
        "image_path": chunk.image_path or "",
        "text_level": chunk.text_level,
        "table_type": chunk.table_type,
        "table_nest_level": chunk.table_nest_level,
        "sub_type": chunk.sub_type,
        "figure_number": chunk.figure_number,
    }
    if chunk.bbox:  # PDFs only; DOCX chunks have none and store none
        meta["bbox"] = json.dumps([round(v, 1) for v in chunk.bbox])
    return meta


@dataclass
class IndexUpdate:
    added: int
    removed: int


def upsert_document(col, kb: str, chunks: list[Chunk], vectors: np.ndarray, *, source: str,
                    views: Sequence[View] = ()) -> IndexUpdate:
    """Write a document's chunks (and views), then remove its ids that the new version no longer has.

    The new version is written before anything is deleted, so a failure midway leaves the old
    chunks searchable rather than none (the `kbflow check` consistency check reports it)."""
    return upsert_documents(col, kb, {source: chunks}, vectors, views)[source]


def max_batch(col) -> int:
    """The most records one write may carry for this collection's client (MAX_BATCH if it does not say)."""
    try:
        limit = int(col._client.get_max_batch_size())
    except Exception:  # noqa: BLE001 - an older client or a server without the pre-flight answer
        return MAX_BATCH
    return limit if limit > 0 else MAX_BATCH


def upsert_chunks(col, kb: str, chunks: list[Chunk], vectors: np.ndarray, *, views: Sequence[View] = (),
                  batch: int | None = None) -> None:
    """Write chunks (of any number of documents) and views in slices as large as the client allows;
    `vectors`: the chunks' rows, then the views'."""
    batch = batch or max_batch(col)
    ids = [c.chunk_id for c in chunks] + [v.id for v in views]
    documents = [c.semantic_content for c in chunks] + [v.text for v in views]
    owners = list(chunks) + [v.chunk for v in views]
    for start in range(0, len(ids), batch):
        part = slice(start, start + batch)
        col.upsert(ids=ids[part], embeddings=vectors[part], documents=documents[part],
                   metadatas=[chunk_metadata(c, kb) for c in owners[part]])


def ids_by_source(col, sources: Iterable[str]) -> dict[str, set[str]]:
    """The ids Chroma holds for each of `sources` (one `$in` lookup per SOURCES_PER_GET sources)."""
    sources = list(dict.fromkeys(sources))
    found: dict[str, set[str]] = {s: set() for s in sources}
    for start in range(0, len(sources), SOURCES_PER_GET):
        part = sources[start:start + SOURCES_PER_GET]
        where = {"source": part[0]} if len(part) == 1 else {"source": {"$in": part}}
        got = col.get(where=where, include=["metadatas"])
        for chunk_id, meta in zip(got["ids"], got["metadatas"]):
            found.setdefault(meta["source"], set()).add(chunk_id)
    return found


def upsert_documents(col, kb: str, documents: dict[str, list[Chunk]], vectors: np.ndarray,
                     views: Sequence[View] = ()) -> dict[str, IndexUpdate]:
    """Write many documents' chunks and the views of their long tables (`vectors` in the order of their
    chunks, document after document, then of the views) in large slices, then remove each document's ids that its new version
    no longer has: as for one document, nothing is deleted before every new id is in. The counts are
    of chunks (a table and its views count once)."""
    chunks = [c for doc in documents.values() for c in doc]
    upsert_chunks(col, kb, chunks, vectors, views=views)
    held = ids_by_source(col, documents)
    written = {c.chunk_id for c in chunks} | {v.id for v in views}
    stale = {source: sorted(held.get(source, set()) - written) for source in documents}
    delete_ids(col, [i for ids in stale.values() for i in ids])
    return {source: IndexUpdate(added=len(doc), removed=len({chunk_id_of(i) for i in stale[source]}
                                                            - {c.chunk_id for c in doc}))
            for source, doc in documents.items()}


def delete_ids(col, ids: Iterable[str]) -> int:
    ids = list(ids)
    batch = max_batch(col) if ids else MAX_BATCH
    for start in range(0, len(ids), batch):
        col.delete(ids=ids[start:start + batch])
    return len(ids)


def delete_source(col, source: str) -> int:
    """Delete a source's vectors, views included; returns how many chunks they were."""
    ids = col.get(where={"source": source}, include=[])["ids"]
    delete_ids(col, ids)
    return len({chunk_id_of(i) for i in ids})


def get_pages(col, include: list[str]) -> Iterable[dict]:
    """The whole collection, GET_PAGE records per `get` (Chroma's own order, stable while nobody writes)."""
    offset = 0
    while True:
        got = col.get(include=include, limit=GET_PAGE, offset=offset)
        yield got
        if len(got["ids"]) < GET_PAGE:
            return
        offset += GET_PAGE


def all_ids(col) -> set[str]:
    """Every vector id of the collection, views included."""
    return {i for got in get_pages(col, include=[]) for i in got["ids"]}


def own_ids(ids: Iterable[str]) -> set[str]:
    """The chunk ids among vector ids: each chunk's own vector, not its views (which do not stand in
    for it: a chunk whose own vector is lost is indexed again)."""
    return {i for i in ids if chunk_id_of(i) == i}
