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

PDFs on the local flash tier are judged page by page first
(`text_layer.judge_pdf`): pages with no text layer or a layer that is not text are OCR'd
(`ocr`), the others go through MinerU flash as a PDF of those pages only, and the two are merged
in page order (`mineru+ocr`; every page OCR'd: `ocr`). When MinerU flash refuses the file (it
wants its OCR models) or fails on it, the OCR backend reads the whole file. The manifest's `ocr`
record says which pages were OCR'd, by which engine and models; the key's version carries the
engine, layout rule, page rule and DPI. Other tiers (`mineru_tier`, for users who installed
MinerU's models) and the cloud API keep MinerU for every page. A PDF over `max_pdf_pages` fails.
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
OCR_TIER = "flash"  # the MinerU tier whose PDFs get page-level OCR (the others bring their own)

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


def _ocr_applies(src: SourceFile, settings: Settings) -> bool:
    return src.kind == "mineru" and src.doc_type == "pdf" and settings.ingest.mineru_tier == OCR_TIER


def _ocr_keys(src: SourceFile, settings: Settings) -> tuple[ParseKey, ParseKey]:
    """(MinerU flash + OCR'd pages, OCR only) for a PDF."""
    from tasks.ingest.parse.mineru_local import mineru_version
    from tasks.ingest.parse.ocr import ocr_version

    version = ocr_version(settings.runtime.ocr_dpi)
    return (ParseKey(src.md5, "mineru+ocr", f"{mineru_version()}+{version}", settings.ingest.mineru_tier),
            ParseKey(src.md5, "ocr", version, ""))


def parse_keys(src: SourceFile, settings: Settings) -> list[ParseKey]:
    """The backends to try for `src`, in order, each as the cache key its output would carry
    (for a flash-tier PDF: MinerU, then the OCR backend; which MinerU key is decided per page)."""
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
    if _ocr_applies(src, settings):
        keys.extend(_ocr_keys(src, settings))
    return keys


def _planned_keys(src: SourceFile, settings: Settings, keys: list[ParseKey]) -> tuple[list[ParseKey], list]:
    """The chain to run for `src` once its pages are judged, and the verdicts. A flash-tier PDF
    whose every page is text: MinerU, then OCR of all pages; some pages not text: MinerU on the
    others + OCR on those, then OCR of all; no page text: OCR only. The cloud API stays first."""
    if not _ocr_applies(src, settings):
        return keys, []
    from tasks.ingest.parse.text_layer import judge_pdf

    try:
        verdicts = judge_pdf(src.path)
    except Exception as exc:  # a PDF pypdfium2 cannot read: MinerU's own error will say why
        log.warning("%s: pages not judged (%s: %s); MinerU only", src.source, type(exc).__name__, exc)
        return [k for k in keys if k.backend in ("mineru-api", "mineru")], []
    ocr_needed = [v for v in verdicts if v.needs_ocr]
    mixed, ocr_only = _ocr_keys(src, settings)
    cloud = [k for k in keys if k.backend == "mineru-api"]
    if not ocr_needed:
        return [k for k in keys if k != mixed], verdicts
    if len(ocr_needed) == len([v for v in verdicts if v.verdict != "blank"]):
        return cloud + [ocr_only], verdicts
    return cloud + [mixed, ocr_only], verdicts


def _check_page_limit(src: SourceFile, settings: Settings) -> None:
    if src.doc_type != "pdf" or src.kind != "mineru":
        return
    from tasks.ingest.parse.text_layer import page_count

    try:
        pages = page_count(src.path)
    except Exception as exc:  # pypdfium2 refuses it: the parser will say why
        log.debug("%s: page count unavailable (%s)", src.source, exc)
        return
    if pages > settings.runtime.max_pdf_pages:
        raise errors.TooManyPagesError(str(src.path), f"{pages} pages, more than max_pdf_pages = "
                                                      f"{settings.runtime.max_pdf_pages}; split it or raise the limit")


def parse_key(src: SourceFile, settings: Settings) -> ParseKey:
    """The key of the preferred backend for `src`."""
    return parse_keys(src, settings)[0]


def read_manifest(parsed_dir: Path) -> ParseKey | None:
    try:
        data = json.loads((parsed_dir / MANIFEST).read_text(encoding="utf-8"))
        return ParseKey(**data["key"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _run_backend(src: SourceFile, key: ParseKey, out: Path, settings: Settings, verdicts: list = ()) -> dict | None:
    """Write `src`'s parse into `out`; returns the OCR record for the manifest, if pages were OCR'd."""
    if key.backend in ("ocr", "mineru+ocr"):
        from tasks.ingest.parse.merge import parse_pdf_with_ocr
        return parse_pdf_with_ocr(src.path, out, settings, verdicts, with_mineru=key.backend == "mineru+ocr")
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
    return None


def _run_chain(src: SourceFile, keys: list[ParseKey], work: Path, settings: Settings,
               verdicts: list = ()) -> tuple[ParseKey, list[dict], dict | None]:
    """Run the backends in order until one writes a content list into `work`: (its key, the
    failures before it, its OCR record). The last backend's failure is raised, naming the earlier ones."""
    failures: list[dict] = []
    for i, key in enumerate(keys):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            record = _run_backend(src, key, work, settings, verdicts)
            if not (work / CONTENT_LIST).is_file() and not (work / CONTENT_LIST_V2).is_file():
                raise errors.ParseError(str(src.path), "parser produced no content list")
            return key, failures, record
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

    _check_page_limit(src, settings)
    keys, verdicts = _planned_keys(src, settings, keys)
    settings.parsed_dir.mkdir(parents=True, exist_ok=True)
    work = settings.parsed_dir / f".{src.md5[:12]}.partial"
    started = time.perf_counter()
    try:
        key, failures, ocr_record = _run_chain(src, keys, work, settings, verdicts)
        seconds = time.perf_counter() - started
        manifest = {"key": asdict(key), "source": src.source, "seconds": round(seconds, 3)}
        if failures:
            manifest["fallback_from"] = failures
        if ocr_record is not None:
            manifest["ocr"] = ocr_record
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
