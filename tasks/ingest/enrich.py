"""Enrichment (SPEC §2 item 8) and semantic_content (seed 000 §2.6).

semantic_content is the text that is embedded and indexed for each chunk. Rule-based and
offline: text chunks get a 主题 line, tables a rule-based summary, figures the lightweight
description of seed 003 §3.5 with the text around them. Unlike the seed (000 §13.3 失配1), a
heading never appears more than once: a title the content already starts with is not repeated in
the 主题 line.

`enrich_chunks` (optional: only when `llm_base_url` is set) asks an OpenAI-compatible endpoint
(`tasks.common.llm`) for a VLM description of each image/chart (`vlm_model`, the image sent as a data
URL) → `chunk.vlm_description`, and an LLM summary of each table (`llm_model`) →
`chunk.table_summary`; `build_semantic_content` then uses them. Answers are cached on disk under
`cache_dir/vlm/` and `cache_dir/llm/` by (model, prompt version, content md5), so re-ingesting
the same corpus makes no calls; a failed call leaves the offline text in place and is counted,
never failing the document. With no `llm_base_url` nothing here touches the network.
"""
from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from schemas.chunk import (CHART, FIGURE_AFTER, FIGURE_BEFORE, FIGURE_DATA, FIGURE_DESCRIPTION, FIGURE_LOCATED,
                           TABLE, Chunk)
from schemas.settings import Settings
from tasks.common.files import file_md5
from tasks.ingest.headings import SEPARATOR
from tasks.ingest.images import FIGURE_TYPES, split_caption
from tasks.common.llm import (
    ChatClient,
    DiskCache,
    LLMAuthError,
    LLMConfigError,
    LLMError,
    LLMUnavailableError,
    content_md5,
)
from tasks.ingest.tables import html_table_rows, table_text

log = logging.getLogger("kbflow.enrich")


def _norm(text: str) -> str:
    return " ".join(text.split())


def section_parts(section_path: str) -> list[str]:
    return [p.strip() for p in section_path.split(SEPARATOR) if p.strip()]


def topic(chunk: Chunk, *, max_levels: int = 3) -> str:
    """The section path worth stating for this chunk: its last `max_levels` levels, minus titles
    the content already shows (a heading chunk, or a chunk whose first line is its heading)."""
    parts = section_parts(chunk.section_path)
    content = _norm(chunk.content)
    while parts and content.startswith(_norm(parts[-1])):
        parts.pop()  # the content says it already; the parent path is what adds information
    first_line = _norm(chunk.content.split("\n", 1)[0])
    parts = [p for p in parts if _norm(p) != first_line]  # a parent with the same text as the heading
    return SEPARATOR.join(parts[-max_levels:])


def text_semantic(chunk: Chunk, *, max_levels: int = 3) -> str:
    """Text, heading, list, code, equation: "主题：…" (only when it adds information), then content."""
    lines = []
    section = topic(chunk, max_levels=max_levels)
    if section:
        lines.append(f"主题：{section}")
    if chunk.caption and _norm(chunk.caption) not in _norm(chunk.content):  # e.g. "算法 1 Euclid's algorithm"
        lines.append(chunk.caption.strip())
    lines.append(chunk.content.strip())
    return "\n".join(lines)


def _header_and_rows(rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        return [], []
    width = max(len(r) for r in rows)
    # a one-cell first row over a wider table is a title ("主申请人-基本情况"), not the header
    if len(rows) > 1 and width > 1 and sum(1 for c in rows[0] if c.strip()) == 1 and len(rows[0]) < width:
        rows = rows[1:]
    return rows[0], rows[1:]


def _table_head(chunk: Chunk, section_levels: int) -> list[str]:
    """主题 (section path) and 表格 (caption) lines of a table's semantic_content."""
    lines = []
    section = SEPARATOR.join(section_parts(chunk.section_path)[-section_levels:])
    if section:
        lines.append(f"主题：{section}")
    if chunk.caption.strip():
        lines.append(f"表格：{chunk.caption.strip()}")
    return lines


def _table_body(chunk: Chunk) -> str:
    """The table one row per line, cells joined by " | " ("" when it only repeats the caption)."""
    body = table_text(chunk.table_html) if chunk.table_html else ""
    body = body or chunk.content.strip()
    return body if body and _norm(body) != _norm(chunk.caption) else ""


def table_summary(chunk: Chunk, *, max_fields: int = 20, max_example_fields: int = 8, section_levels: int = 3) -> str:
    """Rule-based table summary (seed 000 §2.6), the offline stand-in for an LLM summary.

    主题 / 表格(caption) / 字段(header cells) / 描述(row and column counts) / 示例(first data row),
    a blank line, then the table one row per line with cells joined by " | ".
    """
    rows = html_table_rows(chunk.table_html or "")
    header, data = _header_and_rows(rows)
    lines = _table_head(chunk, section_levels)
    fields = [c for c in header if c.strip()]
    if fields:
        shown = "、".join(fields[:max_fields]) + ("等" if len(fields) > max_fields else "")
        lines.append(f"字段：{shown}")
        columns = max(len(r) for r in [header, *data])  # a merged header is narrower than the body
        lines.append(f"描述：该表包含{len(data)}行数据，{columns}列")
    if data:
        first = data[0]
        if len(first) == len(header):  # merged header cells would misalign field=value pairs
            pairs = [f"{h}={v}" for h, v in zip(header, first) if h.strip() and v.strip()]
        else:
            pairs = [v for v in first if v.strip()]
        if pairs:
            lines.append("示例：" + ", ".join(pairs[:max_example_fields]))
    body = _table_body(chunk)
    if body:
        lines += ["", body]
    return "\n".join(lines).strip("\n")


def table_semantic(chunk: Chunk, *, section_levels: int = 3) -> str:
    """A table's semantic_content: with an LLM summary (`chunk.table_summary`), 主题 / 表格 /
    摘要 (the LLM's text in place of the rule-based 字段/描述/示例 lines), a blank line, then the
    table text; without one, the rule-based `table_summary`."""
    summary = chunk.table_summary.strip()
    if not summary:
        return table_summary(chunk, section_levels=section_levels)
    lines = _table_head(chunk, section_levels) + [f"摘要：{summary}"]
    body = _table_body(chunk)
    if body:
        lines += ["", body]
    return "\n".join(lines)


def _caption_parts(chunk: Chunk) -> list[str]:
    """["图2.1", "系统架构图"] from caption "图2.1 系统架构图": the number stated once."""
    number, rest = split_caption(chunk.caption)
    if number:
        return [number, rest] if rest else [number]
    caption = chunk.caption.strip()
    if chunk.figure_number and chunk.figure_number.replace(" ", "") not in caption.replace(" ", ""):
        return [chunk.figure_number] + ([caption] if caption else [])  # a number found elsewhere
    return [caption] if caption else []


def image_description(chunk: Chunk, *, section_levels: int = 3) -> str:
    """Lightweight figure description (seed 003 §3.5, 000 §2.6), no VLM needed.

    "图片：图2.1，系统架构图，位于「第一章 > 1.2 概述」，第5页", then 前文/后文 from the text around
    the figure, then the VLM description or chart data when the parser or an enrich step gave one.
    """
    label = "图表" if chunk.chunk_type == CHART else "图片"
    parts = _caption_parts(chunk)
    section = SEPARATOR.join(section_parts(chunk.section_path)[-section_levels:])
    if section:
        parts.append(f"{FIGURE_LOCATED}「{section}」")
    parts.append(f"第{chunk.page_start}页")
    lines = [f"{label}：{'，'.join(parts)}"]
    if chunk.footnote.strip():
        lines.append(f"注：{chunk.footnote.strip()}")
    if chunk.context_before.strip():
        lines.append(f"{FIGURE_BEFORE}：{chunk.context_before.strip()}")
    if chunk.context_after.strip():
        lines.append(f"{FIGURE_AFTER}：{chunk.context_after.strip()}")
    if chunk.vlm_description.strip() and _norm(chunk.vlm_description) != _norm(chunk.caption):
        lines.append(f"{FIGURE_DESCRIPTION}：{chunk.vlm_description.strip()}")
    data = chunk.chart_markdown.strip("\n")  # not strip(): a leading empty header cell matters
    if data.strip():
        lines.append(f"{FIGURE_DATA}：\n{data}")
    return "\n".join(lines)


def semantic_content(chunk: Chunk, *, section_levels: int = 3) -> str:
    if chunk.chunk_type == TABLE:
        return table_semantic(chunk, section_levels=section_levels)
    if chunk.chunk_type in FIGURE_TYPES:
        return image_description(chunk, section_levels=section_levels)
    return text_semantic(chunk, max_levels=section_levels)


def build_semantic_content(chunks: list[Chunk], *, section_levels: int = 3) -> list[Chunk]:
    """Set `semantic_content` on every chunk (in place) and return the chunks."""
    for chunk in chunks:
        chunk.semantic_content = semantic_content(chunk, section_levels=section_levels)
    return chunks


# ---------------------------------------------------------------- LLM/VLM enrichment

# Bump a version when its prompt changes: cached answers to the old prompt are then not reused.
VLM_PROMPT_VERSION = "vlm-1"
TABLE_PROMPT_VERSION = "table-1"
VLM_PROMPT = (
    "请描述这张图片的内容，供知识库检索使用：说明图的类型（照片、示意图、流程图、柱状图、折线图等），"
    "主要元素和其中的文字，图表的坐标轴、数据和趋势，以及图想表达的要点。只描述图中能看到的信息，不要编造。"
    "使用图中文字的语言作答（没有文字时用中文），不超过200字，直接输出描述。"
)
TABLE_PROMPT = (
    "下面是一张表格（每行一行，单元格以 | 分隔）。请用2到4句话概括它：记录的是什么、主要字段、"
    "数据范围或关键数值、值得注意的结论。只依据表格内容，不要编造。使用表格的语言作答，直接输出摘要。"
)
IMAGE_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
              ".webp": "image/webp", ".bmp": "image/bmp"}
MAX_IMAGE_BYTES = 10 * 1024 * 1024  # larger images are not sent (the offline description stays)
MAX_TABLE_CHARS = 6000  # a longer table is sent truncated
VLM_MAX_TOKENS = 512
TABLE_MAX_TOKENS = 400
MAX_ANSWER_CHARS = 2000
# After this many consecutive "unavailable" failures (or one refused key) the document's remaining
# requests are not sent: an endpoint that is down must not cost minutes of retries per image.
STOP_AFTER_UNAVAILABLE = 3


@dataclass
class EnrichStats:
    """What one document's enrichment did. A request shared by several chunks (the same image
    twice) counts once."""

    images: int = 0  # image/chart chunks seen
    tables: int = 0  # table chunks seen
    calls: int = 0  # requests attempted (each with its own retries); 0 on a fully cached re-run
    cache_hits: int = 0  # requests answered from the disk cache
    fallbacks: int = 0  # requests that failed or were not sent after the endpoint kept failing:
    #                     their chunks keep the offline text
    skipped: int = 0  # chunks not sent: no model set, image missing/unsupported/too large, no table text,
    #                   or a description the parser already gave
    errors: list[str] = field(default_factory=list)  # the first failures' reasons (key-free)

    @property
    def enriched(self) -> int:
        return self.calls - self.fallbacks + self.cache_hits


@dataclass
class _Job:
    kind: str  # "vlm" or "llm"
    model: str
    prompt_version: str
    md5: str
    build: Callable[[], list[dict]]  # the messages; the image is read only when the call is made
    max_tokens: int
    chunks: list[Chunk] = field(default_factory=list)

    def apply(self, text: str) -> None:
        text = text.strip()[:MAX_ANSWER_CHARS]
        for chunk in self.chunks:
            if self.kind == "vlm":
                chunk.vlm_description = text
            else:
                chunk.table_summary = text


def _image_file(chunk: Chunk, images_dir: Path) -> Path | None:
    """The copied image of a figure chunk (a bare name inside images_dir), or None."""
    name = chunk.image_path or ""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None  # copy_images leaves a missing file under its original relative path
    path = images_dir / name
    if path.suffix.lower() not in IMAGE_MIME or not path.is_file() or path.is_symlink():
        return None
    if path.stat().st_size > MAX_IMAGE_BYTES:
        return None
    return path


def _image_job(chunk: Chunk, images_dir: Path, model: str) -> _Job | None:
    if not model or chunk.vlm_description.strip():
        return None  # no VLM configured, or the parser (MinerU's VLM backend) described it already
    path = _image_file(chunk, images_dir)
    if path is None:
        return None
    caption = chunk.caption.strip()

    def build() -> list[dict]:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        prompt = VLM_PROMPT + (f"\n图题：{caption}" if caption else "")
        return [{"role": "user", "content": [
            {"type": "text", "text": prompt},
            {"type": "image_url", "image_url": {"url": f"data:{IMAGE_MIME[path.suffix.lower()]};base64,{data}"}},
        ]}]

    return _Job("vlm", model, VLM_PROMPT_VERSION, content_md5(file_md5(path), caption), build, VLM_MAX_TOKENS)


def _table_job(chunk: Chunk, model: str) -> _Job | None:
    if not model:
        return None
    text = (table_text(chunk.table_html) if chunk.table_html else "").strip()
    if not text:
        return None  # an image-only table: nothing for a text model to read
    if len(text) > MAX_TABLE_CHARS:
        text = text[:MAX_TABLE_CHARS] + "\n…（表格过长，已截断）"
    caption = chunk.caption.strip()
    prompt = TABLE_PROMPT + (f"\n表题：{caption}" if caption else "") + f"\n\n{text}"
    return _Job("llm", model, TABLE_PROMPT_VERSION, content_md5(caption, text),
                lambda: [{"role": "user", "content": prompt}], TABLE_MAX_TOKENS)


def enrich_chunks(chunks: list[Chunk], images_dir: Path, settings: Settings, *,
                  client: ChatClient | None = None) -> EnrichStats:
    """VLM descriptions for figures and LLM summaries for tables, in place; returns the counts.

    Run after `copy_images` (images are read from `images_dir` by their content-addressed name)
    and before `build_semantic_content`. Without `settings.llm.llm_base_url` (and no `client`) it
    returns at once: no network, chunks unchanged. Requests run on at most
    `settings.runtime.enrich_concurrency` threads; any failure keeps the chunk's offline text.
    """
    stats = EnrichStats()
    if client is None and not settings.llm.llm_base_url.strip():
        return stats
    jobs: dict[tuple[str, str, str, str], _Job] = {}
    for chunk in chunks:
        if chunk.chunk_type in FIGURE_TYPES:
            stats.images += 1
            job = _image_job(chunk, images_dir, settings.llm.vlm_model)
        elif chunk.chunk_type == TABLE:
            stats.tables += 1
            job = _table_job(chunk, settings.llm.llm_model)
        else:
            continue
        if job is None:
            stats.skipped += 1
            continue
        jobs.setdefault((job.kind, job.model, job.prompt_version, job.md5), job).chunks.append(chunk)
    if not jobs:
        return stats

    caches = {kind: DiskCache(settings.cache_dir / kind) for kind in ("vlm", "llm")}
    pending = []
    for job in jobs.values():
        cached = caches[job.kind].get(job.model, job.prompt_version, job.md5)
        if cached is None:
            pending.append(job)
        else:
            stats.cache_hits += 1
            job.apply(cached)
    if not pending:
        return stats

    try:
        client = client or ChatClient.from_env(settings.llm.llm_base_url)
    except LLMError as exc:  # a malformed base URL: every request falls back
        stats.fallbacks += len(pending)
        stats.errors.append(str(exc))
        log.warning("enrichment disabled for this document: %s", exc)
        return stats

    stop = threading.Event()
    lock = threading.Lock()
    unavailable = 0  # consecutive LLMUnavailableError answers

    def run(job: _Job) -> str | None:
        nonlocal unavailable
        if stop.is_set():
            return None  # the endpoint is refusing or down: not sent
        try:
            text = client.chat(job.build(), model=job.model, temperature=0.0, max_tokens=job.max_tokens)
        except Exception as exc:
            with lock:  # decided here, in the worker, so the next queued job already sees it
                unavailable = unavailable + 1 if isinstance(exc, LLMUnavailableError) else 0
                if isinstance(exc, (LLMAuthError, LLMConfigError)) or unavailable >= STOP_AFTER_UNAVAILABLE:
                    stop.set()
            raise
        with lock:
            unavailable = 0
        return text

    workers = max(1, settings.runtime.enrich_concurrency)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="enrich") as pool:
        futures = {pool.submit(run, job): job for job in pending}
        for future in as_completed(futures):
            job = futures[future]
            try:
                text = future.result()
            except Exception as exc:  # LLMError, an unreadable image, a bug: never the document's failure
                stats.calls += 1
                stats.fallbacks += 1
                reason = str(exc) if isinstance(exc, LLMError) else f"{type(exc).__name__}: {str(exc)[:200]}"
                if len(stats.errors) < 5:
                    stats.errors.append(f"{job.kind}: {reason}")
                log.warning("%s enrichment failed, offline text kept: %s", job.kind, reason)
                continue
            if text is None:
                stats.fallbacks += 1
                continue
            stats.calls += 1
            caches[job.kind].put(job.model, job.prompt_version, job.md5, text)
            job.apply(text)
    if stop.is_set():
        log.warning("enrichment stopped early for this document: %s", stats.errors[-1] if stats.errors else "")
    return stats
