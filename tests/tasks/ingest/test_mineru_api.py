"""The `mineru-api` backend against a local fake of the MinerU cloud API v4 (submit, PUT, poll, zip)."""
from __future__ import annotations

import io
import json
import threading
import zipfile
from pathlib import Path

import pytest

from schemas import errors
from tasks.ingest.content_list import normalize_parsed
from tasks.ingest.discover import discover
from tasks.ingest.parse import mineru_api, parse_keys, parse_source, read_manifest
from tasks.ingest.parse.mineru_api import MineruApiClient
from tests.conftest import CVPR_DIR, REPO, need
from tests.http_fakes import FakeServer, Reply

TOKEN = "mineru-SECRET-token-7f3a"
CVPR_PDF = CVPR_DIR.parent / "Zhou_Class-Conditional_Sharpness-Aware_Minimization_CVPR_2023_paper.pdf"
WATER_DOCX = REPO / "examples" / "corpus" / "water_management_policy.docx"


def cvpr_zip() -> bytes:
    """A result zip as mineru.net ships it, from the real cloud-API sample's files."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(need(CVPR_DIR).iterdir()):
            zf.write(path, path.name)
        zf.writestr("images/", "")
    return buf.getvalue()


def evil_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("x_content_list.json", "[]")
        zf.writestr("../../../evil.txt", "pwned")
    return buf.getvalue()


class FakeMinerU:
    """The four endpoints, with a scripted sequence of task states and an optional submit error."""

    def __init__(self, zip_bytes: bytes = b"", states=("waiting-file", "pending", "running", "converting", "done"),
                 submit_error: Reply | None = None, err_msg: str = ""):
        self.zip_bytes = zip_bytes
        self.states = list(states)
        self.submit_error = submit_error
        self.err_msg = err_msg
        self.uploaded = b""
        self.polls = 0
        self.lock = threading.Lock()
        self.server = FakeServer(self.handle)

    def __enter__(self) -> "FakeMinerU":
        self.server.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.server.__exit__(*exc)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def requests(self):
        return self.server.requests

    def handle(self, req) -> Reply:
        api = req.path.startswith("/api/")
        if api and req.headers.get("Authorization") != f"Bearer {TOKEN}":
            return Reply.json({"code": "A0202", "msg": "token error", "data": None}, 401)
        if not api and "Authorization" in req.headers:
            return Reply(400, b"pre-signed storage URLs take no Authorization header")
        if req.method == "POST" and req.path == "/api/v4/file-urls/batch":
            if self.submit_error is not None:
                return self.submit_error
            return Reply.json({"code": 0, "msg": "ok", "trace_id": "t",
                               "data": {"batch_id": "b-123", "file_urls": [f"{self.url}/oss/b-123/file?sig=abc"]}})
        if req.method == "PUT" and req.path.startswith("/oss/b-123/"):
            self.uploaded = req.body
            return Reply(200)
        if req.method == "GET" and req.path == "/api/v4/extract-results/batch/b-123":
            with self.lock:
                self.polls += 1
                state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            entry = {"file_name": "x", "state": state, "err_msg": ""}
            if state == "done":
                entry["full_zip_url"] = f"{self.url}/cdn/result.zip"
            if state == "failed":
                entry["err_msg"] = self.err_msg
            if state == "running":
                entry["extract_progress"] = {"extracted_pages": 3, "total_pages": 9}
            return Reply.json({"code": 0, "msg": "ok", "data": {"batch_id": "b-123", "extract_result": [entry]}})
        if req.method == "GET" and req.path == "/cdn/result.zip":
            return Reply(200, self.zip_bytes, {"Content-Type": "application/zip"})
        return Reply(404, b"no route")


def _client(fake: FakeMinerU, **kw) -> MineruApiClient:
    kw.setdefault("poll_interval_s", 0.01)
    kw.setdefault("timeout_s", 10)
    kw.setdefault("backoff_s", 0.001)
    return MineruApiClient(fake.url, TOKEN, **kw)


@pytest.fixture
def api_env(monkeypatch):
    monkeypatch.setenv(mineru_api.TOKEN_ENV, TOKEN)
    monkeypatch.setattr(mineru_api, "POLL_INTERVAL_S", 0.01)
    monkeypatch.setattr(mineru_api, "TIMEOUT_S", 10.0)
    monkeypatch.setattr(mineru_api, "BACKOFF_S", 0.001)
    monkeypatch.setattr(mineru_api.MineruApiClient, "backoff_s", 0.001)


def _source(path: Path, settings):
    found = discover([path], settings)
    assert not found.rejected, found.rejected
    return found.sources[0]


def _settings(home: Path, url: str, **kw):
    from schemas.settings import load_settings

    return load_settings(home, mineru_api_base_url=url, **kw)


def _no_secret(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_happy_path_through_parse_source(tmp_path, api_env):
    pdf = need(CVPR_PDF)
    with FakeMinerU(cvpr_zip()) as fake:
        settings = _settings(tmp_path / "home", fake.url)
        src = _source(pdf, settings)
        out = parse_source(src, settings)
        again = parse_source(src, settings)
    assert (out.key.backend, out.key.parser_version, out.key.tier) == ("mineru-api", "v4", "vlm")
    assert out.cached is False and again.cached is True and again.key == out.key
    assert out.parsed_dir == settings.parsed_dir / src.md5[:12]
    assert (out.parsed_dir / "middle.json").read_bytes() == (CVPR_DIR / "layout.json").read_bytes()
    assert (out.parsed_dir / "content_list.json").is_file() and (out.parsed_dir / "full.md").is_file()
    result = normalize_parsed(out.parsed_dir)
    assert result.format == "v2" and len(result.chunks) == 104  # as the import of the same zip
    assert read_manifest(out.parsed_dir) == out.key
    # the exchange: submit, PUT the exact bytes, four pending states then done, zip; nothing after the cache hit
    assert [(r.method, r.path.split("?")[0]) for r in fake.requests] == [
        ("POST", "/api/v4/file-urls/batch"), ("PUT", "/oss/b-123/file")] + \
        [("GET", "/api/v4/extract-results/batch/b-123")] * 5 + [("GET", "/cdn/result.zip")]
    submit = fake.requests[0].json()
    assert submit == {"files": [{"name": pdf.name, "data_id": src.md5}], "model_version": "vlm"}
    assert fake.uploaded == pdf.read_bytes()
    assert "Content-Type" not in fake.requests[1].headers  # the signature covers no content type
    assert not list(out.parsed_dir.glob(".*")) and not list(settings.parsed_dir.glob(".*"))
    _no_secret(settings.home)


def test_failed_state_is_an_error_with_the_reason(tmp_path):
    with FakeMinerU(states=("pending", "failed"), err_msg="file is encrypted") as fake:
        with pytest.raises(errors.MineruApiTaskFailedError, match="task failed .*file is encrypted"):
            _client(fake).parse(need(CVPR_PDF), tmp_path)
    assert fake.polls == 2 and not any(r.path.startswith("/cdn") for r in fake.requests)


def test_poll_has_an_overall_timeout(tmp_path):
    now = [0.0]  # a clock that only the client's sleeps move, so a loaded machine polls as often as an idle one

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with FakeMinerU(states=("running",)) as fake:
        with pytest.raises(errors.MineruApiTimeoutError, match="not finished after 1s .*'running'"):
            _client(fake, poll_interval_s=0.25, timeout_s=1, sleep=sleep, clock=lambda: now[0]).parse(
                need(CVPR_PDF), tmp_path)
    assert fake.polls == 5 and now[0] == 1.0  # polls at 0, 0.25, 0.5, 0.75 and 1.0; a sixth would pass the deadline


def test_zip_with_parent_entry_is_refused_and_nothing_escapes(tmp_path):
    out = tmp_path / "home" / "parsed" / ".abc.partial"
    out.mkdir(parents=True)
    with FakeMinerU(evil_zip()) as fake:
        with pytest.raises(errors.UnsafeArchiveError, match=r"unsafe entry '\.\./\.\./\.\./evil\.txt'") as info:
            _client(fake).parse(need(CVPR_PDF), out)
    assert info.value.path == str(CVPR_PDF) and "MinerU API result zip" in info.value.reason
    assert not list(tmp_path.rglob("evil.txt")) and not (tmp_path.parent / "evil.txt").exists()
    assert not (out / ".mineru_api_result.zip").exists()


@pytest.mark.parametrize("reply, kind, match", [
    (Reply.json({"code": "A0202", "msg": "token error"}, 401), errors.MineruApiAuthError, "token rejected.*MINERU_API_TOKEN"),
    (Reply.json({"code": "A0211", "msg": "token expired"}), errors.MineruApiAuthError, "token expired.*new one"),
    (Reply(403, b"forbidden"), errors.MineruApiAuthError, "HTTP 403.*MINERU_API_TOKEN"),
    (Reply.json({"code": -60005, "msg": "file size exceeds limit"}), errors.MineruApiFileRejectedError, "too large"),
    (Reply.json({"code": -60006, "msg": "pages exceed"}), errors.MineruApiFileRejectedError, "too many pages"),
    (Reply.json({"code": -60018, "msg": "daily limit"}), errors.MineruApiQuotaError, "daily parse limit"),
    (Reply.json({"code": -60009, "msg": "queue full"}), errors.MineruApiQuotaError, "queue is full"),
    (Reply.json({"code": -99999, "msg": "mystery"}), errors.MineruApiError, "code -99999; mystery"),
    (Reply(429, b"slow down", {"Retry-After": "0"}), errors.MineruApiQuotaError, "HTTP 429; slow down; try later"),
    (Reply(503, b"maintenance"), errors.MineruApiError, "submit failed .*HTTP 503: maintenance"),
])
def test_api_errors_are_mapped_and_never_show_the_token(tmp_path, reply, kind, match):
    with FakeMinerU(submit_error=reply) as fake:
        with pytest.raises(kind, match=match) as info:
            _client(fake, max_retries=2).parse(need(CVPR_PDF), tmp_path)
    assert type(info.value) is kind and TOKEN not in str(info.value)
    assert info.value.stage == "parse"
    submits = [r for r in fake.requests if r.method == "POST"]
    transient = "queue" in match or "HTTP 429" in match or "HTTP 503" in match
    assert len(submits) == (3 if transient else 1)  # only transient answers are retried


def test_wrong_token_never_echoed(tmp_path):
    with FakeMinerU() as fake:
        client = MineruApiClient(fake.url, "wrong-" + TOKEN, poll_interval_s=0.01)
        with pytest.raises(errors.MineruApiAuthError) as info:
            client.parse(need(CVPR_PDF), tmp_path)
    assert TOKEN not in str(info.value) and "token rejected (A0202)" in str(info.value)
    assert "wrong-" not in repr(client)


def test_transient_poll_errors_are_retried(tmp_path):
    with FakeMinerU(cvpr_zip()) as fake:
        real = fake.handle
        flaky = iter([Reply(503, b"busy"), Reply(502, b"gateway")])

        def handle(req):
            if req.path.startswith("/api/v4/extract-results"):
                nxt = next(flaky, None)
                if nxt is not None:
                    return nxt
            return real(req)

        fake.server.handler = handle
        out = tmp_path / "out"
        out.mkdir()
        _client(fake).parse(need(CVPR_PDF), out)
    assert (out / "content_list_v2.json").is_file()


def test_backend_chain(tmp_path, monkeypatch):
    settings = _settings(tmp_path / "home", "http://127.0.0.1:9")
    docx = _source(WATER_DOCX, settings)
    monkeypatch.delenv(mineru_api.TOKEN_ENV, raising=False)
    assert [k.backend for k in parse_keys(docx, settings)] == ["mineru"]
    monkeypatch.setenv(mineru_api.TOKEN_ENV, TOKEN)
    assert [k.backend for k in parse_keys(docx, settings)] == ["mineru-api", "mineru"]
    xlsx = tmp_path / "t.xlsx"
    from openpyxl import Workbook

    wb = Workbook()
    wb.active.append(["a", "b"])
    wb.save(xlsx)
    assert [k.backend for k in parse_keys(_source(xlsx, settings), settings)] == ["mineru"]  # the API takes no xlsx
    with pytest.raises(errors.ParseError, match="unknown parse backend 'gpu'"):
        parse_keys(docx, _settings(tmp_path / "home", "http://x", parse_backend="gpu"))


def test_api_failure_falls_back_to_local_mineru(tmp_path, api_env):
    with FakeMinerU(evil_zip()) as fake:
        settings = _settings(tmp_path / "home", fake.url)
        src = _source(WATER_DOCX, settings)
        out = parse_source(src, settings)
    assert out.key.backend == "mineru" and out.key.tier == settings.ingest.mineru_tier
    manifest = json.loads((out.parsed_dir / "parse.json").read_text(encoding="utf-8"))
    (failure,) = manifest["fallback_from"]
    assert failure["backend"] == "mineru-api" and failure["error"] == "UnsafeArchiveError"
    assert not (out.parsed_dir / ".unpacked").exists() and not list(tmp_path.rglob("evil.txt"))
    assert len(normalize_parsed(out.parsed_dir).chunks) > 10
    _no_secret(settings.home)
    # the local output is a valid cache entry for the chain: not sent to the cloud again
    n = len(fake.requests)
    assert parse_source(src, settings).cached is True and len(fake.requests) == n


def test_explicit_api_backend_without_token_falls_back_with_reason(tmp_path, monkeypatch):
    monkeypatch.delenv(mineru_api.TOKEN_ENV, raising=False)
    settings = _settings(tmp_path / "home", "http://127.0.0.1:9", parse_backend="mineru-api")
    out = parse_source(_source(WATER_DOCX, settings), settings)
    manifest = json.loads((out.parsed_dir / "parse.json").read_text(encoding="utf-8"))
    assert out.key.backend == "mineru"
    assert manifest["fallback_from"][0]["error"] == "MineruApiConfigError"
    assert "MINERU_API_TOKEN is not set" in manifest["fallback_from"][0]["reason"]


def test_both_backends_failing_names_both(tmp_path, api_env, monkeypatch):
    from tests.conftest import make_scanned_pdf

    with FakeMinerU(submit_error=Reply.json({"code": -60018, "msg": "limit"})) as fake:
        # a tier above flash: MinerU's own models are expected, so no OCR backend follows MinerU
        settings = _settings(tmp_path / "home", fake.url, mineru_tier="standard")
        src = _source(make_scanned_pdf(tmp_path / "scan.pdf"), settings)
        assert [k.backend for k in parse_keys(src, settings)] == ["mineru-api", "mineru"]
        with pytest.raises(errors.NeedsModelsError) as info:
            parse_source(src, settings)
    reason = info.value.reason
    assert reason.startswith("needs MinerU OCR/layout models") and "tried first: mineru-api" in reason
    assert "daily parse limit" in reason and TOKEN not in reason
    assert not (settings.parsed_dir / src.md5[:12]).exists() and not list(settings.parsed_dir.glob(".*"))
