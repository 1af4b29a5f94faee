"""Parse: one source → MinerU-shaped output under `parsed/{md5[:12]}/`, parsed at most once.

The folder holds `content_list.json` (v1), `content_list_v2.json` when the parser gives one,
`middle.json`, `full.md`, `images/` and `parse.json`, the manifest whose key
(md5, backend, parser version, tier) decides whether a later run can reuse it.

Backends for documents (seed 000 §14.1, cloud first with local fallback): when the environment
holds `MINERU_API_TOKEN` (or `parse_backend = "mineru-api"`), a file the cloud API takes is sent
to the MinerU cloud API v4 first (`mineru_api`), and any failure there falls back to the embedded
local MinerU (`mineru_local`). The manifest records the backend that actually produced the output
(and, after a fallback, why the first one failed); a cached output of any backend in the chain is
reused, so a file parsed locally after a cloud failure is not sent to the cloud again.
"""
from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from schemas import errors
from schemas.settings import Settings
from tasks.ingest.discover import SourceFile

MANIFEST = "parse.json"
CONTENT_LIST = "content_list.json"
CONTENT_LIST_V2 = "content_list_v2.json"
MIDDLE_JSON = "middle.json"
MARKDOWN = "full.md"
BACKENDS = ("mineru", "mineru-api")  # the choices of settings.ingest.parse_backend

log = logging.getLogger("kbflow.parse")


@dataclass(frozen=True)
class ParseKey:
    md5: str
    backend: str
    parser_version: str
    tier: str


@dataclass(frozen=True)
class ParsedOutput:
    parsed_dir: Path
    key: ParseKey
    cached: bool
    seconds: float


def parse_keys(src: SourceFile, settings: Settings) -> list[ParseKey]:
    """The backends to try for `src`, in order, each as the cache key its output would carry."""
    if src.kind == "mineru_output":
        from tasks.ingest.parse.mineru_import import IMPORT_VERSION
        return [ParseKey(src.md5, "import", IMPORT_VERSION, "")]
    if src.kind in ("markdown", "text"):
        from tasks.ingest.parse.text_reader import READER_VERSION
        return [ParseKey(src.md5, src.kind, READER_VERSION, "")]
    if settings.ingest.parse_backend not in BACKENDS:
        raise errors.ParseError(str(src.path), f"unknown parse backend {settings.ingest.parse_backend!r} "
                                               f"(choose one of {', '.join(BACKENDS)})")
    from tasks.ingest.parse import mineru_api
    from tasks.ingest.parse.mineru_local import mineru_version
    keys = []
    if mineru_api.accepts(src.path) and (mineru_api.api_token() or settings.ingest.parse_backend == "mineru-api"):
        keys.append(ParseKey(src.md5, "mineru-api", mineru_api.API_VERSION, mineru_api.MODEL_VERSION))
    keys.append(ParseKey(src.md5, "mineru", mineru_version(), settings.ingest.mineru_tier))
    return keys


def parse_key(src: SourceFile, settings: Settings) -> ParseKey:
    """The key of the preferred backend for `src`."""
    return parse_keys(src, settings)[0]


def read_manifest(parsed_dir: Path) -> ParseKey | None:
    try:
        data = json.loads((parsed_dir / MANIFEST).read_text(encoding="utf-8"))
        return ParseKey(**data["key"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _run_backend(src: SourceFile, key: ParseKey, out: Path, settings: Settings) -> None:
    if key.backend == "mineru-api":
        from tasks.ingest.parse.mineru_api import parse_with_mineru_api
        parse_with_mineru_api(src.path, out, base_url=settings.runtime.mineru_api_base_url, data_id=src.md5)
    elif key.backend == "import":
        from tasks.ingest.parse.mineru_import import import_mineru_output
        import_mineru_output(src.path, out)
    elif key.backend in ("markdown", "text"):
        from tasks.ingest.parse.text_reader import read_text_document
        read_text_document(src.path, out, markdown=key.backend == "markdown")
    else:
        from tasks.ingest.parse.mineru_local import parse_with_mineru
        parse_with_mineru(src.path, out, tier=key.tier, mineru_home=settings.mineru_home)


def _run_chain(src: SourceFile, keys: list[ParseKey], work: Path, settings: Settings) -> tuple[ParseKey, list[dict]]:
    """Run the backends in order until one writes a content list into `work`: (its key, the
    failures before it). The last backend's failure is raised, naming the earlier ones."""
    failures: list[dict] = []
    for i, key in enumerate(keys):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            _run_backend(src, key, work, settings)
            if not (work / CONTENT_LIST).is_file() and not (work / CONTENT_LIST_V2).is_file():
                raise errors.ParseError(str(src.path), "parser produced no content list")
            return key, failures
        except Exception as exc:
            reason = exc.reason if isinstance(exc, errors.KbflowError) else f"{type(exc).__name__}: {str(exc)[:300]}"
            if i == len(keys) - 1:
                if not failures or not isinstance(exc, errors.KbflowError):
                    raise
                tried = "; ".join(f"{f['backend']}: {f['reason']}" for f in failures)
                raise type(exc)(exc.path, f"{exc.reason} (tried first: {tried})") from None
            failures.append({"backend": key.backend, "error": type(exc).__name__, "reason": reason})
            log.warning("%s: %s backend failed (%s); falling back to %s", src.source, key.backend, reason,
                        keys[i + 1].backend)
    raise AssertionError("no parse backend")  # keys is never empty


def parse_source(src: SourceFile, settings: Settings) -> ParsedOutput:
    """Parse `src` unless a finished output of one of its backends exists; the swap-in is atomic."""
    keys = parse_keys(src, settings)
    target = settings.parsed_dir / src.md5[:12]
    cached = read_manifest(target)
    if cached in keys:
        return ParsedOutput(target, cached, cached=True, seconds=0.0)

    settings.parsed_dir.mkdir(parents=True, exist_ok=True)
    work = settings.parsed_dir / f".{src.md5[:12]}.partial"
    started = time.perf_counter()
    try:
        key, failures = _run_chain(src, keys, work, settings)
        seconds = time.perf_counter() - started
        manifest = {"key": asdict(key), "source": src.source, "seconds": round(seconds, 3)}
        if failures:
            manifest["fallback_from"] = failures
        (work / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
        old = settings.parsed_dir / f".{src.md5[:12]}.old"
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            target.rename(old)
        work.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ParsedOutput(target, key, cached=False, seconds=seconds)
