"""Chunk-quality views (warehouse/quality.sql): chunk_quality, chunk_length_hist, section_stats."""
from __future__ import annotations

import json
import statistics
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from schemas.chunk import Chunk, assign_ids, chunks_path
from schemas.ingest import Document
from tasks.ingest.land import write_chunks
from warehouse import db

QUALITY_COLUMNS = ["kb", "source", "total_chunks", "text_chunks", "table_chunks", "image_chunks",
                   "heading_only_chunks", "heading_only_share", "fragments", "median_text_chars",
                   "max_text_chars", "heading_chains", "longest_heading_chain"]


def _doc(kb: str, md5: str, source: str, parquet: Path, n: int) -> Document:
    return Document(kb=kb, doc_md5=md5, source=source, path=f"/x/{source}", doc_type="text", size_bytes=1,
                    parse_backend="text", parser_version="1", parsed_dir="", chunks_path=str(parquet),
                    chunk_count=n, items_total=n, dropped_empty=0, dropped_furniture=0, dropped_ghost=0,
                    parse_seconds=0.0, parse_cached=False, run_id="r1", ingested_at=datetime.now(timezone.utc))


def _land(tmp_path: Path, chunks: list[Chunk], *, kb: str = "kb", md5: str = "a" * 32,
          source: str = "a.docx") -> Path:
    assign_ids(chunks, kb=kb, doc_md5=md5, source=source)
    parquet = write_chunks(chunks, chunks_path(tmp_path / "chunks", kb, md5))
    db.replace_document(tmp_path / "w.duckdb", _doc(kb, md5, source, parquet, len(chunks)), parquet)
    return tmp_path / "w.duckdb"


def H(text: str = "第一章 总则", level: int = 2, **kw) -> Chunk:
    return Chunk(content=text, chunk_type="heading", text_level=level, title=text, **kw)


def T(text: str = "正文" * 60, **kw) -> Chunk:
    return Chunk(content=text, chunk_type="text", **kw)


def _quality(w: Path) -> list[dict]:
    columns, rows = db.query(w, "SELECT * FROM chunk_quality")
    return [dict(zip(columns, row)) for row in rows]


def test_chunk_quality_columns_and_counts(tmp_path):
    chunks = [
        H("一、总则"),                                   # heading-only (4 chars)
        T("短"),                                         # fragment (1)
        T("x" * 99),                                     # fragment (99)
        T("x" * 100),                                    # not a fragment (100)
        Chunk(content="| a | b |", chunk_type="table"),
        Chunk(content="图1 结构", chunk_type="image"),
        Chunk(content="", chunk_type="chart"),
        Chunk(content="a\nb", chunk_type="list"),
        Chunk(content="E=mc^2", chunk_type="equation"),
        Chunk(content="print(1)", chunk_type="code"),
        H("x" * 20),                                     # a heading of 20 chars: not heading-only
        H("x" * 19),                                     # heading-only (19)
    ]
    w = _land(tmp_path, chunks)
    columns, _ = db.query(w, "SELECT * FROM chunk_quality")
    assert columns == QUALITY_COLUMNS
    (row,) = _quality(w)
    assert row == {
        "kb": "kb", "source": "a.docx",
        "total_chunks": 12,
        "text_chunks": 9,  # everything but table/image/chart: headings, lists, equations, code count as text
        "table_chunks": 1,
        "image_chunks": 2,  # image + chart
        "heading_only_chunks": 2,
        "heading_only_share": 0.222,  # 2 / 9 text chunks
        "fragments": 2,
        "median_text_chars": 19.0,  # text, heading, list lengths: 1, 3, 4, 19, 20, 99, 100
        "max_text_chars": 100,
        "heading_chains": 1,  # the last two headings (20 and 19 chars)
        "longest_heading_chain": 2,
    }


def test_heading_chains_are_maximal_runs_of_two_or_more(tmp_path):
    # H,H,T,H,H,H,T,H → runs of 2 and 3 (the single trailing H is no chain)
    w = _land(tmp_path, [H(), H(), T(), H(), H(), H(), T(), H()])
    (row,) = _quality(w)
    assert (row["heading_chains"], row["longest_heading_chain"], row["heading_only_chunks"]) == (2, 3, 6)
    runs = db.query(w, "SELECT source, first_chunk_index, last_chunk_index, run_length FROM heading_runs "
                       "ORDER BY first_chunk_index")[1]
    assert runs == [("a.docx", 0, 1, 2), ("a.docx", 3, 5, 3), ("a.docx", 7, 7, 1)]


def test_long_headings_are_not_heading_only_but_still_chain(tmp_path):
    long_heading = H("第三条 本合同项下的所有货物均应符合国家标准")
    assert len(long_heading.content) == 22
    table = Chunk(content="| a |", chunk_type="table")
    # runs: H,long,H (3) | table | H,H,H,H (4) | text
    w = _land(tmp_path, [H(), long_heading, H(), table, H(), H(), H(), H(), T("短")])
    (row,) = _quality(w)
    assert (row["heading_only_chunks"], row["heading_chains"], row["longest_heading_chain"]) == (6, 2, 4)
    assert row["heading_only_share"] == round(6 / 8, 3)


def test_a_body_chunk_with_a_text_level_breaks_a_chain(tmp_path):
    # only chunk_type 'heading' chains; a text chunk never does, whatever its text_level
    w = _land(tmp_path, [H(), T("正文", text_level=0), H(), Chunk(content="图", chunk_type="image"), H()])
    (row,) = _quality(w)
    assert (row["heading_chains"], row["longest_heading_chain"]) == (0, 0)


def test_heading_chains_follow_chunk_index_not_insertion_order_and_stay_within_a_document(tmp_path):
    # two documents: the last heading of a.docx and the first of b.docx are no chain
    _land(tmp_path, [T(), H()], md5="a" * 32, source="a.docx")
    w = _land(tmp_path, [H(), T(), H(), H()], md5="b" * 32, source="b.docx")
    # the same document in another kb is counted on its own
    _land(tmp_path, [H(), H(), H()], kb="kb2", md5="a" * 32, source="a.docx")
    got = {(r["kb"], r["source"]): (r["heading_chains"], r["longest_heading_chain"]) for r in _quality(w)}
    assert got == {("kb", "a.docx"): (0, 0), ("kb", "b.docx"): (1, 2), ("kb2", "a.docx"): (1, 3)}


def test_heading_only_share_rounding_and_empty_documents(tmp_path):
    # 1 heading-only of 3 text chunks = 0.3333… → 0.333; 2 of 3 → 0.667
    _land(tmp_path, [H(), T(), T()], md5="a" * 32, source="a.docx")
    _land(tmp_path, [H(), H(), T(), Chunk(content="t", chunk_type="table")], md5="b" * 32, source="b.docx")
    # only tables: no text chunks → share, median and max are NULL, not a division error
    _land(tmp_path, [Chunk(content="t", chunk_type="table")], md5="c" * 32, source="c.docx")
    w = _land(tmp_path, [], md5="d" * 32, source="d.docx")  # a document that yielded no chunks
    got = {r["source"]: r for r in _quality(w)}
    assert got["a.docx"]["heading_only_share"] == 0.333
    assert got["b.docx"]["heading_only_share"] == 0.667
    assert (got["b.docx"]["text_chunks"], got["b.docx"]["table_chunks"]) == (3, 1)
    c = got["c.docx"]
    assert (c["total_chunks"], c["text_chunks"], c["heading_only_share"], c["median_text_chars"],
            c["max_text_chars"]) == (1, 0, None, None, None)
    d = got["d.docx"]
    assert (d["total_chunks"], d["heading_chains"], d["longest_heading_chain"]) == (0, 0, 0)




def test_median_of_an_even_count(tmp_path):
    w = _land(tmp_path, [T("x" * 10), T("x" * 15), H("x" * 4), Chunk(content="x" * 21, chunk_type="list"),
                         Chunk(content="x" * 500, chunk_type="table")])
    (row,) = _quality(w)
    assert (row["median_text_chars"], row["max_text_chars"]) == (12.5, 21)  # 4, 10, 15, 21; the table ignored


def test_replacing_a_document_replaces_its_quality_row(tmp_path):
    _land(tmp_path, [H(), H(), T()], md5="a" * 32, source="a.docx")
    w = _land(tmp_path, [T(), T()], md5="b" * 32, source="a.docx")  # the file changed
    assert [(r["source"], r["total_chunks"], r["heading_chains"]) for r in _quality(w)] == [("a.docx", 2, 0)]


def _hist(w: Path) -> dict[tuple[str, str], list[tuple[str, int]]]:
    rows = db.query(w, "SELECT kb, chunk_type, bucket, chunks FROM chunk_length_hist "
                       "ORDER BY kb, chunk_type, bucket_order")[1]
    out: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for kb, chunk_type, bucket, n in rows:
        out.setdefault((kb, chunk_type), []).append((bucket, n))
    return out


def test_chunk_length_hist_bucket_boundaries(tmp_path):
    lengths = [0, 19, 20, 49, 50, 99, 100, 199, 200, 399, 400, 799, 800, 999, 1000, 5000]
    _land(tmp_path, [T("x" * n) for n in lengths] + [H("x" * 19), H("x" * 20)], md5="a" * 32, source="a.docx")
    w = _land(tmp_path, [T("x" * 999), T("x" * 1000)], kb="kb2", md5="b" * 32, source="b.docx")
    hist = _hist(w)
    assert hist[("kb", "text")] == [("0-19", 2), ("20-49", 2), ("50-99", 2), ("100-199", 2), ("200-399", 2),
                                    ("400-799", 2), ("800-999", 2), ("1000+", 2)]
    # zero-filled: every bucket of every (kb, chunk_type) present
    assert hist[("kb", "heading")] == [("0-19", 1), ("20-49", 1), ("50-99", 0), ("100-199", 0), ("200-399", 0),
                                       ("400-799", 0), ("800-999", 0), ("1000+", 0)]
    assert dict(hist[("kb2", "text")]) == {"0-19": 0, "20-49": 0, "50-99": 0, "100-199": 0, "200-399": 0,
                                           "400-799": 0, "800-999": 1, "1000+": 1}
    assert set(hist) == {("kb", "text"), ("kb", "heading"), ("kb2", "text")}
    bounds = db.query(w, "SELECT DISTINCT bucket_order, bucket, min_chars, max_chars FROM chunk_length_hist "
                         "ORDER BY bucket_order")[1]
    assert bounds == [(1, "0-19", 0, 19), (2, "20-49", 20, 49), (3, "50-99", 50, 99), (4, "100-199", 100, 199),
                      (5, "200-399", 200, 399), (6, "400-799", 400, 799), (7, "800-999", 800, 999),
                      (8, "1000+", 1000, None)]


def test_chunk_length_counts_characters_not_bytes(tmp_path):
    w = _land(tmp_path, [T("汉" * 19), T("汉" * 20)])  # 57 and 60 bytes of UTF-8
    assert _hist(w)[("kb", "text")][:3] == [("0-19", 1), ("20-49", 1), ("50-99", 0)]


def test_section_stats_spans(tmp_path):
    chunks = [
        T("x" * 5, page_start=1, page_end=1),                                          # 0: before any heading
        H("第一章", level=1, section_path="第一章", page_start=1, page_end=1),           # 1
        T("x" * 10, section_path="第一章", page_start=1, page_end=2),                   # 2
        H("1.1", level=2, section_path="第一章 > 1.1", page_start=2, page_end=2),        # 3
        T("x" * 30, section_path="第一章 > 1.1", page_start=3, page_end=4),              # 4
        Chunk(content="x" * 7, chunk_type="table", section_path="第一章 > 1.1", page_start=5, page_end=6),  # 5
        H("第二章", level=1, section_path="第二章", page_start=7, page_end=7),           # 6
    ]
    w = _land(tmp_path, chunks)
    columns, rows = db.query(w, "SELECT * FROM section_stats")
    assert columns == ["kb", "source", "section_path", "chunks", "total_chars", "first_chunk_index",
                       "last_chunk_index", "first_page", "last_page"]
    assert rows == [
        ("kb", "a.docx", "", 1, 5, 0, 0, 1, 1),
        ("kb", "a.docx", "第一章", 2, 13, 1, 2, 1, 2),
        ("kb", "a.docx", "第一章 > 1.1", 3, 40, 3, 5, 2, 6),
        ("kb", "a.docx", "第二章", 1, 3, 6, 6, 7, 7),
    ]


def _python_heading_chains(chunks: list[Chunk]) -> tuple[int, int]:
    """Runs of >= 2 consecutive heading chunks, computed without SQL."""
    runs, current = [], 0
    for chunk in sorted(chunks, key=lambda c: c.chunk_index):
        if chunk.chunk_type == "heading":
            current += 1
        else:
            runs.append(current)
            current = 0
    runs.append(current)
    chains = [r for r in runs if r >= 2]
    return len(chains), max(chains, default=0)


def test_real_mineru_sample_through_normalization_and_landing(tmp_path):
    from tasks.ingest.content_list import normalize_v1
    from tasks.ingest.headings import assign_section_paths
    from tests.conftest import SVOLT_DIR, need

    (path,) = need(SVOLT_DIR).glob("*_content_list.json")
    chunks = assign_section_paths(normalize_v1(json.loads(path.read_text(encoding="utf-8"))).chunks)
    w = _land(tmp_path, chunks, source="svolt.pdf")
    (row,) = _quality(w)
    types = Counter(c.chunk_type for c in chunks)
    assert (row["total_chunks"], row["table_chunks"], row["image_chunks"]) == (
        len(chunks), types["table"], types["image"] + types["chart"]) == (180, 12, 1)
    assert row["text_chunks"] == 180 - 12 - 1
    heading_only = sum(c.chunk_type == "heading" and len(c.content) < 20 for c in chunks)
    assert row["heading_only_chunks"] == heading_only
    assert row["heading_only_share"] == round(heading_only / row["text_chunks"], 3)
    assert row["fragments"] == sum(c.chunk_type == "text" and len(c.content) < 100 for c in chunks)
    text_lengths = [len(c.content) for c in chunks if c.chunk_type in ("text", "heading", "list")]
    assert row["median_text_chars"] == round(statistics.median(text_lengths), 1)
    assert row["max_text_chars"] == max(text_lengths)
    chains, longest = _python_heading_chains(chunks)
    assert (row["heading_chains"], row["longest_heading_chain"]) == (chains, longest)
    # seven "1 样品电性能指标 Cell Performance" → "1.1 主要性能 Main Performance" pairs: bilingual headings
    # of >= 20 chars, so they chain although few of them are heading-only
    assert (chains, longest) == (7, 2)
    # every chunk falls in exactly one histogram bucket and one section
    assert db.query(w, "SELECT sum(chunks) FROM chunk_length_hist")[1] == [(180,)]
    assert db.query(w, "SELECT sum(chunks) FROM section_stats")[1] == [(180,)]
    sections = db.query(w, "SELECT count(*) FROM section_stats")[1][0][0]
    assert sections == len({c.section_path for c in chunks})


def test_views_are_recreated_on_connect_and_readable_read_only(tmp_path):
    w = _land(tmp_path, [H(), H()])
    views = {r[0] for r in db.query(w, "SELECT view_name FROM duckdb_views() WHERE NOT internal")[1]}
    assert {"document_stats", "chunk_quality", "chunk_length_hist", "section_stats", "heading_runs"} <= views
    with db.connect(w):  # a second writer connect re-runs the SQL files without error
        pass
    assert _quality(w)[0]["heading_chains"] == 1
