"""The re-ingestion plan: unchanged files skipped, changed/new processed, removals scoped to the
folders given, never triggered by a single file, an empty folder or a file that is merely bad."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from schemas.ingest import ManifestEntry
from schemas.settings import Settings, load_settings
from tasks.ingest import manifest as mf
from tasks.ingest.parse import ocr as ocr_backend
from tasks.ingest.discover import Discovery, Rejection, SourceFile

KEY = "k1"


def _src(path: Path, root: Path, md5: str) -> SourceFile:
    return SourceFile(path, path.relative_to(root).as_posix(), md5, 10, "markdown", "markdown")


def _entry(path: Path, source: str, md5: str, status: str = mf.INDEXED, key: str = KEY) -> ManifestEntry:
    return ManifestEntry("kb", str(path), source, md5, status, 3, key, "r0", datetime.now(timezone.utc))


def _corpus(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    files = {name: root / name for name in ("a.md", "b.md", "sub/c.md")}
    for p in files.values():
        p.write_text(p.name, encoding="utf-8")
    return root, files


def _landed(tmp_path: Path, parser_version: str = "4.0.12", **md5_by_source: str) -> dict[str, tuple[str, str, str]]:
    out = {}
    for source, md5 in md5_by_source.items():
        parquet = tmp_path / f"{md5}.parquet"
        parquet.write_bytes(b"x")
        out[source.replace("__", "/")] = (md5, str(parquet), parser_version)
    return out


def test_unchanged_changed_added_and_removed(tmp_path):
    root, f = _corpus(tmp_path)
    found = Discovery(sources=[_src(f["a.md"], root, "A"), _src(f["b.md"], root, "B2"), _src(f["sub/c.md"], root, "C")])
    gone = root / "gone.md"
    manifest = [_entry(f["a.md"], "a.md", "A"), _entry(f["b.md"], "b.md", "B1"), _entry(gone, "gone.md", "G")]
    landed = _landed(tmp_path, **{"a.md": "A", "b.md": "B1", "gone.md": "G"})

    plan = mf.plan_reingest([str(root)], found, manifest, landed, KEY)

    assert [s.source for s, _ in plan.skipped] == ["a.md"]
    assert [(t.src.source, t.change) for t in plan.todo] == [("b.md", mf.CHANGED), ("sub/c.md", mf.ADDED)]
    assert [e.source for e in plan.removed] == ["gone.md"]
    assert plan.reindex == []


def test_not_skipped_unless_landed_in_duckdb_with_the_same_settings(tmp_path):
    root, f = _corpus(tmp_path)
    found = Discovery(sources=[_src(f["a.md"], root, "A"), _src(f["b.md"], root, "B"), _src(f["sub/c.md"], root, "C")])
    manifest = [_entry(f["a.md"], "a.md", "A", key="old-settings"),  # chunking settings changed
                _entry(f["b.md"], "b.md", "B", status=mf.FAILED),  # last attempt failed: try again
                _entry(f["sub/c.md"], "sub/c.md", "C")]  # the manifest says indexed, DuckDB lost it
    landed = _landed(tmp_path, **{"a.md": "A", "b.md": "B"})
    plan = mf.plan_reingest([str(root)], found, manifest, landed, KEY)
    assert plan.skipped == []
    assert [(t.src.source, t.change) for t in plan.todo] == [
        ("a.md", mf.CHANGED), ("b.md", mf.CHANGED), ("sub/c.md", mf.ADDED)]


def test_landed_but_never_indexed_is_skipped_and_reindexed(tmp_path):
    root, f = _corpus(tmp_path)
    found = Discovery(sources=[_src(f["a.md"], root, "A")])
    plan = mf.plan_reingest([str(f["a.md"])], found, [_entry(f["a.md"], "a.md", "A", status=mf.LANDED)],
                            _landed(tmp_path, **{"a.md": "A"}), KEY)
    assert [s.source for s, _ in plan.reindex] == ["a.md"] and not plan.todo


def test_a_single_file_path_removes_nothing_else(tmp_path):
    root, f = _corpus(tmp_path)
    found = Discovery(sources=[SourceFile(f["a.md"], "a.md", "A", 10, "markdown", "markdown")])
    manifest = [_entry(f["a.md"], "a.md", "A"), _entry(f["b.md"], "b.md", "B"), _entry(f["sub/c.md"], "sub/c.md", "C")]
    plan = mf.plan_reingest([str(f["a.md"])], found, manifest, {}, KEY)
    assert plan.removed == []
    # a sub-folder given: only what was under it and is gone, nothing beside it
    d = root / "sub" / "d.md"
    manifest.append(_entry(d, "sub/d.md", "D"))
    found = Discovery(sources=[_src(f["sub/c.md"], root / "sub", "C")])
    plan = mf.plan_reingest([str(root / "sub")], found, manifest, {}, KEY)
    assert [e.source for e in plan.removed] == ["sub/d.md"]


def test_an_empty_or_missing_folder_removes_nothing(tmp_path):
    root, f = _corpus(tmp_path)
    manifest = [_entry(f["a.md"], "a.md", "A")]
    empty = Discovery(rejected=[Rejection(str(root), "", "MissingFileError", "folder holds no files")],
                      empty_roots=[str(root)])
    plan = mf.plan_reingest([str(root)], empty, manifest, {}, KEY)
    assert plan.removed == [] and plan.kept_roots == [str(root)]
    missing = tmp_path / "unmounted"
    gone = Discovery(rejected=[Rejection(str(missing), "", "MissingFileError", "no such file")])
    assert mf.plan_reingest([str(missing)], gone, [_entry(missing / "a.md", "a.md", "A")], {}, KEY).removed == []


def test_a_rejected_file_keeps_its_last_version_a_broken_link_does_not(tmp_path):
    root, f = _corpus(tmp_path)
    found = Discovery(sources=[_src(f["a.md"], root, "A")], rejected=[
        Rejection(str(f["b.md"]), "", "CorruptFileError", "binary content in a text file"),
        Rejection(str(f["sub/c.md"]), "", "MissingFileError", "broken symlink")])
    manifest = [_entry(f["a.md"], "a.md", "A"), _entry(f["b.md"], "b.md", "B"), _entry(f["sub/c.md"], "sub/c.md", "C")]
    plan = mf.plan_reingest([str(root)], found, manifest, _landed(tmp_path, **{"a.md": "A"}), KEY)
    assert [e.source for e in plan.removed] == ["sub/c.md"]


def test_same_content_under_another_existing_name_is_a_duplicate_a_rename_is_not(tmp_path):
    root, f = _corpus(tmp_path)
    copy = root / "copy of a.md"
    copy.write_text("a", encoding="utf-8")
    manifest = [_entry(f["a.md"], "a.md", "A")]
    landed = _landed(tmp_path, **{"a.md": "A"})
    found = Discovery(sources=[_src(f["a.md"], root, "A"), _src(copy, root, "A")])
    plan = mf.plan_reingest([str(root)], found, manifest, landed, KEY)
    assert plan.duplicates == [(found.sources[1], "a.md")] and not plan.todo
    # renamed: the old path is gone, so the document takes the new name (a rename, not a delete + add:
    # its landing replaces the old name's rows and manifest row in one transaction)
    f["a.md"].unlink()
    found = Discovery(sources=[_src(copy, root, "A")])
    plan = mf.plan_reingest([str(root)], found, manifest, landed, KEY)
    assert [(t.src.source, t.change) for t in plan.todo] == [("copy of a.md", mf.RENAMED)]
    assert plan.removed == []


def test_pipeline_key_follows_chunking_settings_only():
    base = Settings()
    assert mf.pipeline_key(base) == mf.pipeline_key(base.replace(home=Path("/elsewhere")))
    assert mf.pipeline_key(base) == mf.pipeline_key(base.replace(ingest_lock_wait_s=60.0,
                                                                         task_runner="dask"))
    assert mf.pipeline_key(base) != mf.pipeline_key(base.replace(max_chunk_size=500))
    assert mf.pipeline_key(load_settings()) == mf.pipeline_key(load_settings().replace(max_file_mb=1))


def test_a_scheduled_reingest_reads_again_what_an_older_ocr_layout_read_and_nothing_else(tmp_path):
    """An upgrade whose OCR backend lays pages out anew (tables' columns, layout version 2) reaches a KB
    re-ingested on a schedule: its scanned documents are read again, its text documents stay."""
    root, f = _corpus(tmp_path)
    found = Discovery(sources=[_src(f["a.md"], root, "A"), _src(f["b.md"], root, "B"), _src(f["sub/c.md"], root, "C")])
    manifest = [_entry(f["a.md"], "a.md", "A"), _entry(f["b.md"], "b.md", "B"), _entry(f["sub/c.md"], "sub/c.md", "C")]
    ocr = f"{ocr_backend.ENGINE}-0.0.22/det2400/layout{{}}/rule1/dpi144"
    landed = {**_landed(tmp_path, **{"a.md": "A"}),  # MinerU alone
              **_landed(tmp_path, "4.0.12+" + ocr.format("1"), **{"b.md": "B"}),  # scanned pages, layout 1
              **_landed(tmp_path, ocr.format(ocr_backend.LAYOUT_VERSION), **{"sub/c.md": "C"})}
    plan = mf.plan_reingest([str(root)], found, manifest, landed, KEY)
    assert sorted(s.source for s, _ in plan.skipped) == ["a.md", "sub/c.md"]
    assert [(t.src.source, t.change) for t in plan.todo] == [("b.md", mf.CHANGED)]
    assert ocr_backend.LAYOUT_VERSION != "1"  # this kbflow's layout is not the one that read b.md
