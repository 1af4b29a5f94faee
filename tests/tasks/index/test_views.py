"""Views of chunks longer than the embedding model reads (tasks.index.views), on the real SVOLT
datasheet: its main specification table is cut by the model after 4 of 15 rows."""
from __future__ import annotations

import numpy as np
import pytest

from schemas.chunk import TABLE, TEXT, Chunk
from schemas.settings import load_settings
from tasks.index.views import chunk_id_of, chunk_views, document_name, embedding_text, views_of
from tasks.qa.retriever import chunk_hits
from tests.tasks.index.test_e5_convert import shared_embedder
from tests.test_golden import chunks_of

CYCLE_LIFE = "What is the cycle life of the SVOLT cell?"  # row 10 of the main specification table
WEIGHT = "What is the weight of the SVOLT 196Ah blade cell?"  # row 14


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    return shared_embedder(tmp_path_factory)


@pytest.fixture(scope="module")
def svolt(tmp_path_factory):
    return chunks_of("svolt_mineru2.7.6", load_settings(tmp_path_factory.mktemp("views_home")))


def main_table(chunks: list[Chunk]) -> Chunk:
    (table,) = [c for c in chunks if c.chunk_type == TABLE and "循环寿命Cycle life" in c.content]
    return table


def test_a_table_longer_than_the_window_gets_views_of_its_rows_under_its_header(svolt, embedder):
    table = main_table(svolt)
    assert embedder.token_counts([embedding_text(table)])[0] > embedder.window  # the model would cut it
    views = views_of(svolt, embedder.token_counts, window=embedder.window, view_tokens=256)
    mine = [v for v in views if v.chunk is table]
    assert len(mine) >= 2 and [v.id for v in mine][:2] == [f"{table.chunk_id}#1", f"{table.chunk_id}#2"]
    header, *rows = table.content.split("\n")
    for view in mine:
        lead = view.text.split("\n")
        assert lead[0] == "文档：SVOLT-196Ah-3.2V-LiFePO4-Blade-Battery-Cell-SpecificationDatasheet"
        assert lead[1].startswith("主题：") and "Main Performance" in lead[1]
        assert view.text.count("No. | 参数Item") == 1  # the header row leads every window
        assert chunk_id_of(view.id) == table.chunk_id != view.id
    for row in rows:  # every row is in exactly one view
        assert sum(row.strip() in v.text for v in mine) == 1, row
    # a window holds at most view_tokens tokens unless it is a single row
    assert all(embedder.token_counts([v.text])[0] <= 256 or v.text.count("\n") <= 3 for v in mine)
    short = [c for c in svolt if len(embedding_text(c)) < 300]
    assert short and not any(v.chunk in short for v in views)  # a chunk that fits has its own vector only


def test_a_view_brings_a_late_row_within_reach_of_the_question(svolt, embedder):
    """Among the datasheet's 100 chunks the table ranked 81st and 23rd for questions about its rows 10
    and 14, which its own vector never read; its views bring it to the top few."""
    table = main_table(svolt)
    views = views_of(svolt, embedder.token_counts, window=embedder.window, view_tokens=256)
    ids = [c.chunk_id for c in svolt] + [v.id for v in views]
    vectors = embedder.embed_passages([embedding_text(c) for c in svolt] + [v.text for v in views])
    for question, at_most in ((CYCLE_LIFE, 6), (WEIGHT, 1)):
        cosines = vectors @ embedder.embed_queries([question])[0]
        alone = chunk_hits(ids[:len(svolt)], list(1.0 - cosines[:len(svolt)]))
        with_views = chunk_hits(ids, list(1.0 - cosines))
        assert len(with_views) == len(svolt)  # one hit per chunk, its views folded into it
        ranks = [[chunk_id for chunk_id, _ in hits].index(table.chunk_id) + 1 for hits in (alone, with_views)]
        assert ranks[1] <= at_most and ranks[0] >= 20, (question, ranks)


def test_text_gets_no_views_however_long_and_view_tokens_zero_turns_them_off(svolt, embedder):
    """Text is cut to size by the chunker; a table is kept whole for its cells, so it gets the views."""
    table = main_table(svolt)
    text = "第{}条 电池在存放期间应每三个月补电一次，补电电流不得超过零点二倍额定电流。" * 60
    prose = Chunk(content=text, chunk_type=TEXT, source="cell_manual.pdf", chunk_id="cell_manual.pdf_7")
    assert embedder.token_counts([text])[0] > embedder.window
    assert chunk_views(prose, text, embedder.token_counts, window=embedder.window, view_tokens=256) == []
    assert chunk_views(table, embedding_text(table), embedder.token_counts, window=embedder.window,
                       view_tokens=0) == []


def test_chunk_hits_keep_each_chunk_once_at_its_best_view():
    hits = chunk_hits(["a.md_1#2", "b.md_0", "a.md_1", "a.md_1#1", "c#1.md_3"], [0.1, 0.2, 0.5, 0.05, 0.3])
    assert hits == [("a.md_1", pytest.approx(0.95)), ("b.md_0", pytest.approx(0.8)), ("c#1.md_3", pytest.approx(0.7))]
    assert chunk_id_of("c#1.md_3") == "c#1.md_3" and chunk_id_of("c#1.md_3#12") == "c#1.md_3"


@pytest.mark.parametrize("source, name", [
    ("zh_pdf/byd_2025q1_quarterly_report.pdf", "byd_2025q1_quarterly_report"),
    ("../out/SVOLT-196Ah-3.2V-LiFePO4-Blade-Battery-Cell-SpecificationDatasheet",
     "SVOLT-196Ah-3.2V-LiFePO4-Blade-Battery-Cell-SpecificationDatasheet"),
    ("docs\\manual.v2.DOCX", "manual.v2"),
    ("notes.tar", "notes.tar"),
])
def test_document_name_drops_only_a_document_suffix(source, name):
    assert document_name(source) == name


def test_vectors_of_views_fold_into_their_chunk_in_the_snapshot_search(tmp_path):
    """Snapshot readers (ask/eval) search the exported vectors: a view id maps back there too."""
    from tasks.index.snapshot import SnapshotCollection

    ids = ["a.md_0", "a.md_0#1", "a.md_1"]
    vectors = np.eye(3, dtype=np.float32)
    meta = {"source": np.array(["a.md"] * 3, dtype=object), "chunk_type": np.array(["table"] * 3, dtype=object),
            "status": np.array(["active"] * 3, dtype=object)}
    got = SnapshotCollection(ids, meta, vectors).query(query_embeddings=[[0.0, 1.0, 0.1]], n_results=3)
    assert chunk_hits(got["ids"][0], got["distances"][0])[0][0] == "a.md_0"
