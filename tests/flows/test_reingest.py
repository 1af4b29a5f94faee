"""Re-ingestion against the manifest: unchanged files skipped (not parsed, not embedded), changed
ones replaced, removed ones deleted from DuckDB, Chroma and BM25; every run records its counts."""
from __future__ import annotations

import shutil

import pytest

from flows.ingest import ingest
from schemas.errors import NothingLandedError
from schemas.settings import load_settings
from tasks.index import vector_index
from tasks.index.bm25 import BM25Index
from tasks.index.sync import check
from warehouse import db


def _ids(settings, kb: str, source: str) -> dict[str, set[str]]:
    duck = {r[0] for r in db.query(settings.db_path, "SELECT chunk_id FROM chunks WHERE kb = ? AND source = ?",
                                   [kb, source])[1]}
    col = vector_index.collection(settings, kb)
    chroma = set(col.get(where={"source": source}, include=[])["ids"])
    bm25 = {i for i in BM25Index.load(settings.bm25_dir / kb).chunk_ids if i.rsplit("_", 1)[0] == source}
    return {"duckdb": duck, "chroma": chroma, "bm25": bm25}


def _run_row(settings, run_id: str) -> tuple:
    return db.query(settings.db_path, "SELECT files_added, files_changed, files_removed, files_skipped, files_failed "
                                      "FROM ingest_runs WHERE run_id = ?", [run_id])[1][0]


def _manifest(settings, kb: str) -> dict[str, tuple[str, str]]:
    return {source: (status, md5) for source, status, md5 in db.query(
        settings.db_path, "SELECT source, status, md5 FROM manifest WHERE kb = ?", [kb])[1]}


def test_added_changed_removed_skipped_across_runs(prefect_harness, tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.md").write_text("# 甲\n\n第一版的正文，讲水库的日常巡查。\n", encoding="utf-8")
    (corpus / "b.md").write_text("# 乙\n\n关于闸门维护的说明。\n", encoding="utf-8")
    (corpus / "sub" / "c.txt").write_text("防汛物资储备清单。\n\n第二段。", encoding="utf-8")
    home = tmp_path / "home"
    settings = load_settings(home)

    first = ingest(paths=[str(corpus)], kb="kb", home=str(home))
    assert (first.added, first.changed, first.skipped, first.removed, first.failed) == (3, 0, 0, 0, 0)
    assert _run_row(settings, first.run_id) == (3, 0, 0, 0, 0)
    assert {s: v[0] for s, v in _manifest(settings, "kb").items()} == {
        "a.md": "indexed", "b.md": "indexed", "sub/c.txt": "indexed"}
    c_ids = _ids(settings, "kb", "sub/c.txt")
    assert c_ids["duckdb"] and c_ids["duckdb"] == c_ids["chroma"] == c_ids["bm25"]

    unchanged = ingest(paths=[str(corpus)], kb="kb", home=str(home))
    assert {o.status for o in unchanged.outcomes} == {"skipped"} and unchanged.skipped == 3
    assert unchanged.index.documents == 0 and unchanged.index.embedded == 0 and not unchanged.index.bm25_rebuilt
    assert _run_row(settings, unchanged.run_id) == (0, 0, 0, 3, 0)
    assert unchanged.index.bm25_chunks == check(settings, "kb").bm25  # (the quiet path: counted, not rebuilt)

    # Chroma lost a document behind the pipeline's back: `check` says so, and the next run repairs
    # it although no file changed (check marked the KB; the published counts still agree)
    vector_index.delete_ids(vector_index.collection(settings, "kb"), sorted(c_ids["chroma"]))
    assert not check(settings, "kb").ok
    repaired = ingest(paths=[str(corpus)], kb="kb", home=str(home))
    assert repaired.skipped == 3 and repaired.index.repaired == 1 and check(settings, "kb").ok

    (corpus / "a.md").write_text("# 甲\n\n第二版的正文，改为讲水库的汛期巡查。\n", encoding="utf-8")
    (corpus / "sub" / "c.txt").unlink()
    (corpus / "d.md").write_text("# 丁\n\n新增的溢洪道检查规程。\n", encoding="utf-8")
    third = ingest(paths=[str(corpus)], kb="kb", home=str(home))
    assert {o.source: (o.status, o.change) for o in third.outcomes} == {
        "a.md": ("landed", "changed"), "b.md": ("skipped", ""), "d.md": ("landed", "added"),
        "sub/c.txt": ("removed", "")}
    assert _run_row(settings, third.run_id) == (1, 1, 1, 1, 0)
    assert _ids(settings, "kb", "sub/c.txt") == {"duckdb": set(), "chroma": set(), "bm25": set()}
    assert "sub/c.txt" not in _manifest(settings, "kb")
    state = check(settings, "kb")
    assert state.ok and state.duckdb == state.chroma == state.bm25
    contents = [r[0] for r in db.query(settings.db_path, "SELECT content FROM chunks WHERE source = 'a.md'")[1]]
    assert any("第二版" in c for c in contents) and not any("第一版" in c for c in contents)
    (doc,) = db.query(settings.db_path, "SELECT semantic_content FROM chunks WHERE source = 'a.md'")[1]
    (chroma_doc,) = vector_index.collection(settings, "kb").get(where={"source": "a.md"})["documents"]
    assert chroma_doc == doc[0]  # Chroma holds the new text, not the old under the same id
    assert len(list((home / "chunks" / "kb=kb").glob("*.parquet"))) == 3  # old a.md and c.txt files gone

    # one file given on its own: everything else stays
    single = ingest(paths=[str(corpus / "b.md")], kb="kb", home=str(home))
    assert [(o.source, o.status) for o in single.outcomes] == [("b.md", "skipped")]
    assert check(settings, "kb").duckdb == state.duckdb

    # a rename: the document takes the new name (parse cached; not a delete + add), the old name
    # leaves every store
    (corpus / "b.md").rename(corpus / "e.md")
    renamed = ingest(paths=[str(corpus)], kb="kb", home=str(home))
    assert {o.source: (o.status, o.change) for o in renamed.outcomes if o.status != "skipped"} == {
        "e.md": ("landed", "renamed")}
    assert renamed.removed == 0 and renamed.added == 0
    assert _ids(settings, "kb", "b.md") == {"duckdb": set(), "chroma": set(), "bm25": set()}
    assert check(settings, "kb").ok

    # the same content under a second, existing name in another run: recorded as a duplicate
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(corpus / "e.md", other / "copy.md")
    with pytest.raises(NothingLandedError) as raised:  # its only file was rejected: the run fails
        ingest(paths=[str(other)], kb="kb", home=str(home))
    dup = raised.value.summary
    # (named relative to the KB's root, the folder of its first ingest)
    assert [(o.source, o.status) for o in dup.outcomes] == [("../other/copy.md", "rejected")]
    kind, reason = db.query(settings.db_path, "SELECT error_kind, reason FROM ingest_failures WHERE run_id = ?",
                            [dup.run_id])[1][0]
    assert kind == "DuplicateFileError" and "same content as e.md" in reason
    assert _manifest(settings, "kb")["e.md"][0] == "indexed" and check(settings, "kb").ok


def test_a_home_moved_elsewhere_keeps_its_documents_landed(prefect_harness, tmp_path):
    # a home restored from a backup or copied to another disk: its rows name the old folder's Parquet files
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# 甲\n\n水库的日常巡查。\n", encoding="utf-8")
    (corpus / "b.md").write_text("# 乙\n\n关于闸门维护的说明。\n", encoding="utf-8")
    first = ingest(paths=[str(corpus)], kb="kb", home=str(tmp_path / "home"))
    assert first.added == 2
    moved = tmp_path / "elsewhere" / "home"
    moved.parent.mkdir()
    shutil.move(str(tmp_path / "home"), str(moved))
    again = ingest(paths=[str(corpus)], kb="kb", home=str(moved))
    assert (again.added, again.changed, again.skipped) == (0, 0, 2)  # not re-chunked, not re-embedded
    assert again.index.embedded == 0
    assert check(load_settings(moved), "kb").ok


def test_an_emptied_folder_removes_nothing_and_settings_changes_reprocess(prefect_harness, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# 甲\n\n" + "水库巡查记录。" * 40 + "\n", encoding="utf-8")
    home = str(tmp_path / "home")
    settings = load_settings(home)
    ingest(paths=[str(corpus)], kb="kb", home=home)
    before = check(settings, "kb")

    # the chunking settings change: the file is chunked again (its parse is reused)
    monkeypatch.setenv("KBFLOW_MAX_CHUNK_SIZE", "120")
    rechunked = ingest(paths=[str(corpus)], kb="kb", home=home)
    assert [(o.status, o.change, o.parse_cached) for o in rechunked.outcomes] == [("landed", "changed", True)]
    assert check(settings, "kb").duckdb > before.duckdb
    monkeypatch.delenv("KBFLOW_MAX_CHUNK_SIZE")

    # the folder is there but empty (an unmounted share): nothing is removed
    moved = tmp_path / "moved"
    (corpus / "a.md").rename(moved)
    with pytest.raises(NothingLandedError) as raised:  # the one path came up empty: the run fails
        ingest(paths=[str(corpus)], kb="kb", home=home)
    emptied = raised.value.summary
    assert [o.status for o in emptied.outcomes] == ["rejected"] and emptied.removed == 0
    assert check(settings, "kb").ok and check(settings, "kb").duckdb > 0
