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
    (root / "blank.txt").write_text("  \n\n  ", encoding="utf-8")  # fails on a worker, recorded by the flow
    return root


def test_dask_local_cluster_gives_the_default_runners_chunks(prefect_harness, corpus, tmp_path, capsys,
                                                              monkeypatch):
    from distributed import Client
    from prefect.settings import PREFECT_API_URL

    from flows import runners

    default_home, dask_home = tmp_path / "default", tmp_path / "dask"
    # The cluster `--runner dask` starts on its own: two single-threaded worker processes (PDFium
    # under MinerU is not thread-safe), non-daemonic so MinerU may start its page-rendering helpers,
    # here reporting to this session's Prefect server; made here so the test can ask its workers.
    cluster = runners._local_cluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                     env={"PREFECT_API_URL": PREFECT_API_URL.value()})
    with cluster, Client(cluster) as client:
        summary = ingest(paths=[str(corpus)], kb="kb", home=str(dask_home), runner="dask",
                         dask_address=cluster.scheduler_address)
        # the work ran on the workers: both executed tasks (6 files in 3 batches × parse-chunk, embed), and a
        # worker loads the embedding model once, not per document
        executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
        assert len(executed) == 2 and min(executed.values()) >= 1 and sum(executed.values()) >= 6
        models = client.run(lambda: len(__import__("tasks.index.sync", fromlist=["x"])._process_embedders))
        assert set(models.values()) <= {0, 1} and sum(models.values()) >= 1

    # the default runner's run, given the vectors the workers cached (the same model's vectors
    # either way; parsing and chunking are its own)
    shutil.copytree(dask_home / "cache" / "embeddings", default_home / "cache" / "embeddings")
    reference = ingest(paths=[str(corpus)], kb="kb", home=str(default_home))
    assert reference.landed == 5 and reference.failed == 1 and reference.runner == "default"
    assert reference.index.embedded == 0

    assert summary.runner == "dask" and summary.landed == 5 and summary.failed == 1
    assert [(o.source, o.status, o.chunks) for o in summary.outcomes] == [
        (o.source, o.status, o.chunks) for o in reference.outcomes]
    assert db.query(dask_home / "kbflow.duckdb", "SELECT stage, error_kind FROM ingest_failures")[1] == [
        ("chunk", "EmptyDocumentError")]
    assert _chunks(dask_home) == _chunks(default_home)  # ids, documents, contents, semantic contents
    for home in (default_home, dask_home):
        state = check(load_settings(home), "kb")
        assert state.ok and state.duckdb == len(_chunks(default_home))
    assert summary.index.embedded == len(_chunks(default_home))  # encoded on the workers
    assert db.query(dask_home / "kbflow.duckdb", "SELECT task_runner FROM ingest_runs")[1] == [("dask",)]

    # nothing to do (the failed file is gone, the others unchanged): `kbflow ingest --runner dask`
    # (no scheduler given) starts no cluster at all
    (corpus / "blank.txt").unlink()

    def no_cluster(**kwargs):
        raise AssertionError("a cluster was started for a run with nothing to do")

    monkeypatch.setattr(runners, "_local_cluster", no_cluster)
    assert main(["--home", str(dask_home), "ingest", str(corpus), "--kb", "kb", "--runner", "dask"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "0 added, 0 changed, 5 unchanged (skipped)" in out and "(task runner: dask)" in out
    assert check(load_settings(dask_home), "kb").ok


def test_cli_runner_dask_without_an_address_plans_a_local_cluster_of_single_threaded_processes():
    from flows import runners

    task_runner = runners.task_runner_for("dask", "", 3)
    assert task_runner.cluster_class is runners._local_cluster
    assert task_runner.cluster_kwargs == {"n_workers": 3, "threads_per_worker": 1, "processes": True,
                                          "dashboard_address": None}
    assert runners.task_runner_for("dask", "tcp://10.0.0.5:8786", 3).address == "tcp://10.0.0.5:8786"
    assert runners.task_runner_for("default", "", 3) is None
