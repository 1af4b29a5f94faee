"""Shared fixtures. Tests that read ../shared skip with a clear reason when it is absent."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

# The suite starts hundreds of Python processes (xdist workers, `kbflow` runs, parse workers, Dask
# workers). Where PYTHONDONTWRITEBYTECODE is set (as on CI machines) and the venv was installed with
# --no-compile, each of them compiled torch, prefect, transformers… from source again: 30 s instead
# of 14 s to import what an ingest needs. Their bytecode goes to one cache outside the source tree
# instead (this process's children inherit it; a prefix the user set is kept).
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    sys.pycache_prefix = os.environ.setdefault("PYTHONPYCACHEPREFIX", str(
        Path(tempfile.gettempdir()) / f"kbflow-test-pycache-{getattr(os, 'getuid', lambda: 0)()}"))
    sys.dont_write_bytecode = False

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KBFLOW_SHARED", REPO.parent / "shared")).resolve()
DATA = SHARED / "data"
SAMPLES = DATA / "mineru_samples"
SVOLT_DIR = (SAMPLES / "mineru2.7.6_pipeline_local_svolt_datasheet" / "output"
             / "SVOLT-196Ah-3.2V-LiFePO4-Blade-Battery-Cell-SpecificationDatasheet" / "auto")
CVPR_DIR = SAMPLES / "mineru3.4.4_cloud_api_zip_cvpr2023_ccsam" / "zip_contents"
DOCS = DATA / "docs"


def need(path: Path) -> Path:
    """Return `path`, or skip the test when the shared data set is not beside the checkout."""
    if not path.exists():
        pytest.skip(f"shared data not found: {path} (CI places ../shared beside the checkout; "
                    "set KBFLOW_SHARED to its location)")
    return path


def parsed_dir_of(path: Path, home: Path) -> Path:
    """Parse one real document (skipping when ../shared is absent) and return its parsed folder."""
    from schemas.settings import load_settings
    from tasks.ingest.discover import discover
    from tasks.ingest.parse import parse_source

    settings = load_settings(home)
    found = discover([need(path)], settings)
    assert not found.rejected, found.rejected
    (src,) = found.sources
    return parse_source(src, settings).parsed_dir


@pytest.fixture
def settings(tmp_path):
    from schemas.settings import load_settings

    return load_settings(tmp_path / "home")


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect server for every flow test in the session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def make_scanned_pdf(path: Path) -> Path:
    """An image-only PDF (no text layer): what a scanner produces."""
    from PIL import Image, ImageDraw
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    img = Image.new("RGB", (800, 1000), "white")
    draw = ImageDraw.Draw(img)
    for i in range(20):
        draw.text((40, 40 + i * 45), f"Scanned line {i}: nothing here is selectable text", fill="black")
    pdf = canvas.Canvas(str(path))
    pdf.drawImage(ImageReader(img), 0, 0, width=595, height=842)
    pdf.showPage()
    pdf.save()
    return path


CMRC = DATA / "qa" / "cmrc2018_trial"
CMRC_PASSAGES = 60  # the first 60 passages of the trial set (233 questions have their gold among them)


def shared_temp(tmp_path_factory) -> Path:
    """A folder every xdist worker of this session sees (their base temps share a parent)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def cmrc_kb(prefect_harness, tmp_path_factory):
    """A knowledge base `cmrc` ingested by the `ingest` flow from cmrc2018 trial passages, one
    Markdown document per passage (`# title` + text, so the title is the section), plus the
    questions whose gold passage is in it as a JSONL file. Returns (home, questions_path).

    Ingested once per session under a lock, then copied to each worker (whose question runs write
    to their own home; its `documents` rows still name the shared Parquet files, which nothing
    writes): the two workers ran the same minute-long ingest each."""
    import json
    import shutil

    from filelock import FileLock

    from flows.ingest import ingest

    root = shared_temp(tmp_path_factory) / "cmrc"
    corpus, home, questions = root / "corpus", root / "home", root / "questions.jsonl"
    with FileLock(f"{root}.lock"):
        if not questions.exists():
            shutil.rmtree(root, ignore_errors=True)  # a build interrupted in an earlier attempt
            rows = [json.loads(line) for line in need(CMRC / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
            rows = rows[:CMRC_PASSAGES]
            corpus.mkdir(parents=True)
            for row in rows:
                (corpus / f"{row['pid']}.md").write_text(f"# {row['title']}\n\n{row['text']}\n", encoding="utf-8")
            summary = ingest(paths=[str(corpus)], kb="cmrc", home=str(home))
            assert summary.landed == len(rows) and not summary.failed
            pids = {row["pid"] for row in rows}
            kept = [line for line in (CMRC / "queries.jsonl").read_text(encoding="utf-8").splitlines()
                    if json.loads(line)["gold_pids"][0] in pids]
            questions.write_text("".join(line + "\n" for line in kept), encoding="utf-8")  # last: marks it built
    own = tmp_path_factory.mktemp("cmrc") / "home"
    shutil.copytree(home, own)
    return own, questions
