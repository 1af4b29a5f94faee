"""Parse: one source → MinerU-shaped output under `parsed/{md5[:12]}/`, parsed at most once.

The folder holds `content_list.json` (v1), `content_list_v2.json` when the parser gives one,
`middle.json`, `full.md`, `images/` and `parse.json`, the manifest whose key
(md5, backend, parser version, tier) decides whether a later run can reuse it.
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from schemas import errors
from schemas.settings import Settings
from tasks.discover import SourceFile

MANIFEST = "parse.json"
CONTENT_LIST = "content_list.json"
CONTENT_LIST_V2 = "content_list_v2.json"
MIDDLE_JSON = "middle.json"
MARKDOWN = "full.md"


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


def parse_key(src: SourceFile, settings: Settings) -> ParseKey:
    if src.kind == "mineru_output":
        from tasks.parse.mineru_import import IMPORT_VERSION
        return ParseKey(src.md5, "import", IMPORT_VERSION, "")
    if src.kind in ("markdown", "text"):
        from tasks.parse.text_reader import READER_VERSION
        return ParseKey(src.md5, src.kind, READER_VERSION, "")
    if settings.parse_backend != "mineru":
        raise errors.ParseError(str(src.path), f"unknown parse backend {settings.parse_backend!r}")
    from tasks.parse.mineru_local import mineru_version
    return ParseKey(src.md5, "mineru", mineru_version(), settings.mineru_tier)


def read_manifest(parsed_dir: Path) -> ParseKey | None:
    try:
        data = json.loads((parsed_dir / MANIFEST).read_text(encoding="utf-8"))
        return ParseKey(**data["key"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _run_backend(src: SourceFile, key: ParseKey, out: Path, settings: Settings) -> None:
    if key.backend == "import":
        from tasks.parse.mineru_import import import_mineru_output
        import_mineru_output(src.path, out)
    elif key.backend in ("markdown", "text"):
        from tasks.parse.text_reader import read_text_document
        read_text_document(src.path, out, markdown=key.backend == "markdown")
    else:
        from tasks.parse.mineru_local import parse_with_mineru
        parse_with_mineru(src.path, out, tier=key.tier, mineru_home=settings.mineru_home)


def parse_source(src: SourceFile, settings: Settings) -> ParsedOutput:
    """Parse `src` unless a finished output with the same key exists; the swap-in is atomic."""
    key = parse_key(src, settings)
    target = settings.parsed_dir / src.md5[:12]
    if read_manifest(target) == key:
        return ParsedOutput(target, key, cached=True, seconds=0.0)

    settings.parsed_dir.mkdir(parents=True, exist_ok=True)
    work = settings.parsed_dir / f".{src.md5[:12]}.partial"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    started = time.perf_counter()
    try:
        _run_backend(src, key, work, settings)
        if not (work / CONTENT_LIST).is_file() and not (work / CONTENT_LIST_V2).is_file():
            raise errors.ParseError(str(src.path), "parser produced no content list")
        seconds = time.perf_counter() - started
        manifest = {"key": asdict(key), "source": src.source, "seconds": round(seconds, 3)}
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
