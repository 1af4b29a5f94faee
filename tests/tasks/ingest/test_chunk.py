"""Chunk: a real MinerU sample → final chunks (ids, BM25 tokens, semantic_content), written as the
document's Parquet file; a document with nothing to index is an EmptyDocumentError, not a landing."""
from __future__ import annotations

import json

import pytest

from schemas.chunk import chunks_path
from schemas.errors import EmptyDocumentError
from schemas.settings import load_settings
from tasks.common.text import tokenize_many
from tasks.ingest.chunk import build_chunks, chunk_document
from tasks.ingest.discover import SourceFile, discover
from tasks.ingest.parse import parse_source
from tests.conftest import CVPR_DIR, parsed_dir_of


@pytest.fixture(scope="module")
def cvpr(tmp_path_factory):
    home = tmp_path_factory.mktemp("cvpr") / "home"
    return parsed_dir_of(CVPR_DIR, home), load_settings(home)


def test_real_sample_gets_ids_tokens_and_semantic_content(cvpr):
    parsed_dir, settings = cvpr
    doc = build_chunks(parsed_dir, settings, kb="kb", doc_md5="m5", source="papers/ccsam.pdf")
    chunks = doc.chunks
    assert len(chunks) > 50
    assert [c.chunk_id for c in chunks] == [f"papers/ccsam.pdf_{i}" for i in range(len(chunks))]
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {(c.kb, c.doc_md5, c.source) for c in chunks} == {("kb", "m5", "papers/ccsam.pdf")}
    assert all(c.semantic_content.strip() for c in chunks)
    # the BM25 terms are those of semantic_content, computed once here and stored with the chunk
    assert all(c.tokens for c in chunks)
    assert [c.tokens for c in chunks] == tokenize_many([c.semantic_content for c in chunks], None)
    assert {"text", "table", "equation"} <= {c.chunk_type for c in chunks}
    assert all(c.table_html.startswith("<table") for c in chunks if c.chunk_type == "table")
    assert sum(bool(c.section_path) for c in chunks) > len(chunks) // 2
    n = doc.normalized  # every content-list item is kept or counted as dropped
    assert n.items_total == len(n.chunks) + n.dropped_empty + n.dropped_furniture + n.dropped_ghost
    assert n.dropped_furniture > 0


def test_the_same_input_gives_the_same_chunks(cvpr):
    parsed_dir, settings = cvpr

    def fingerprint():
        chunks = build_chunks(parsed_dir, settings, kb="kb", doc_md5="m5", source="ccsam.pdf").chunks
        return [(c.chunk_id, c.content, c.semantic_content, c.section_path, c.tokens) for c in chunks]

    assert fingerprint() == fingerprint()


def test_chunk_document_writes_the_documents_parquet(cvpr):
    parsed_dir, settings = cvpr
    src = SourceFile(CVPR_DIR, "ccsam", "cvprmd5", 1, "mineru_output", "mineru")
    landed = chunk_document(src, parsed_dir, "kb", settings)
    assert landed.chunks_path == chunks_path(settings.chunks_dir, "kb", "cvprmd5") and landed.chunks_path.is_file()
    doc = build_chunks(parsed_dir, settings, kb="kb", doc_md5="cvprmd5", source="ccsam")
    n = doc.normalized
    assert (landed.chunk_count, landed.items_total, landed.dropped_empty, landed.dropped_furniture,
            landed.dropped_ghost) == (len(doc.chunks), n.items_total, n.dropped_empty, n.dropped_furniture,
                                      n.dropped_ghost)
    assert (landed.enrich_calls, landed.enrich_fallbacks) == (0, 0)  # offline: no endpoint configured


def test_a_blank_text_file_is_an_empty_document(tmp_path, settings):
    blank = tmp_path / "blank.txt"
    blank.write_text("  \n\n  ", encoding="utf-8")
    (src,) = discover([blank], settings).sources
    parsed = parse_source(src, settings)
    with pytest.raises(EmptyDocumentError) as caught:
        chunk_document(src, parsed.parsed_dir, "kb", settings)
    assert caught.value.path == str(blank) and caught.value.stage == "chunk"
    assert caught.value.reason == ("no content to index: the parser found 0 items (0 empty, 0 page furniture "
                                   "dropped) and no text, table or image")
    assert not chunks_path(settings.chunks_dir, "kb", src.md5).exists()  # nothing to land


def test_only_empty_items_and_page_furniture_is_an_empty_document(tmp_path, settings):
    parsed_dir = tmp_path / "parsed"
    parsed_dir.mkdir()
    (parsed_dir / "content_list.json").write_text(json.dumps([
        {"type": "text", "text": "   ", "page_idx": 0}, {"type": "header", "text": "ACME Corp", "page_idx": 0},
        {"type": "page_number", "text": "1", "page_idx": 0}, {"type": "image", "img_path": "", "page_idx": 0},
    ]), encoding="utf-8")
    src = SourceFile(tmp_path / "scan.pdf", "scan.pdf", "md5", 1, "mineru", "pdf")
    with pytest.raises(EmptyDocumentError, match=r"found 4 items \(2 empty, 2 page furniture dropped\)"):
        chunk_document(src, parsed_dir, "kb", settings)
