"""Scale-out: `--runner dask` parses, chunks and embeds batches of files on a Dask cluster (a
LocalCluster with two worker processes here) and lands the same chunks as the default runner."""
from __future__ import annotations

import shutil

import pytest

from flows.cli import main
from flows.ingest import ingest
from schemas.settings import load_settings
from tasks.index.sync import check
from tests.conftest import DOCS, REPO, need
from warehouse import db

pytest.importorskip("prefect_dask", reason="the optional dask extra is not installed")


def _chunks(home) -> dict[str, tuple[str, str, str]]:
    return {cid: (md5, c, s) for cid, md5, c, s in db.query(
        home / "kbflow.duckdb", "SELECT chunk_id, doc_md5, md5(content), md5(semantic_content) FROM chunks")[1]}


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    shutil.copytree(REPO / "examples" / "corpus", root)  # TXT, text PDF, Markdown, DOCX
    shutil.copy(need(DOCS / "zh_docx" / "nbt_npp_psr_part1_drafting_notes.docx"), root)
    return root


def test_dask_local_cluster_gives_the_default_runners_chunks(prefect_harness, corpus, tmp_path):
    import dask
    from distributed import Client, LocalCluster
    from prefect.settings import PREFECT_API_URL

    default_home, dask_home = tmp_path / "default", tmp_path / "dask"
    reference = ingest(paths=[str(corpus)], kb="kb", home=str(default_home))
    assert reference.landed == 5 and reference.runner == "default"

    # Two worker processes (not threads: PDFium under MinerU is not thread-safe), non-daemonic so
    # MinerU may start its page-rendering helpers, reporting to this session's Prefect server.
    with dask.config.set({"distributed.worker.daemon": False}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               env={"PREFECT_API_URL": PREFECT_API_URL.value()})
    with cluster, Client(cluster) as client:
        summary = ingest(paths=[str(corpus)], kb="kb", home=str(dask_home), runner="dask",
                         dask_address=cluster.scheduler_address)
        # the work ran on the workers: both executed tasks (5 files in 3 batches × parse-chunk, embed), and a
        # worker loads the embedding model once, not per document
        executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
        assert len(executed) == 2 and min(executed.values()) >= 1 and sum(executed.values()) >= 6
        models = client.run(lambda: len(__import__("tasks.index.sync", fromlist=["x"])._process_embedders))
        assert set(models.values()) <= {0, 1} and sum(models.values()) >= 1

    assert summary.runner == "dask" and summary.landed == 5 and summary.failed == 0
    assert [(o.source, o.status, o.chunks) for o in summary.outcomes] == [
        (o.source, o.status, o.chunks) for o in reference.outcomes]
    assert _chunks(dask_home) == _chunks(default_home)  # ids, documents, contents, semantic contents
    for home in (default_home, dask_home):
        state = check(load_settings(home), "kb")
        assert state.ok and state.duckdb == len(_chunks(default_home))
    assert summary.index.embedded == len(_chunks(default_home))  # encoded on the workers
    assert db.query(dask_home / "kbflow.duckdb", "SELECT task_runner FROM ingest_runs")[1] == [("dask",)]


def test_cli_runner_dask_starts_its_own_cluster_and_skips_it_when_nothing_changed(prefect_harness, tmp_path,
                                                                                  capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# 甲\n\n水库巡查。\n", encoding="utf-8")
    (corpus / "b.txt").write_text("闸门维护。\n\n第二段。", encoding="utf-8")
    (corpus / "blank.txt").write_text("  \n\n  ", encoding="utf-8")  # fails on a worker, recorded here
    home = str(tmp_path / "home")
    assert main(["--home", home, "ingest", str(corpus), "--kb", "kb", "--runner", "dask"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 added, 0 changed, 0 unchanged (skipped), 0 removed (task runner: dask)" in out
    assert "2 landed, 1 failed or rejected" in out
    assert db.query(tmp_path / "home" / "kbflow.duckdb", "SELECT stage, error_kind FROM ingest_failures")[1] == [
        ("chunk", "EmptyDocumentError")]
    assert main(["--home", home, "ingest", str(corpus), "--kb", "kb", "--runner", "dask"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "0 added, 0 changed, 2 unchanged (skipped)" in out
    assert check(load_settings(home), "kb").ok
