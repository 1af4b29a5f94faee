"""A PDF with OCR'd pages: MinerU flash on the pages whose text layer is text, OCR on the others,
merged into one MinerU-shaped output in page order (issue 14).

MinerU reads a PDF made of the good pages only (pypdfium2 copies them), so its `page_idx` are
renumbered back to the original pages; its content_list v2 (when it writes one) gets the OCR'd
pages as v2 pages, so both lists describe every page. `middle.json` stays MinerU's own, for its
pages (the manifest's `ocr.mineru_pages` maps them back).
"""
from __future__ import annotations

import json
from pathlib import Path

from schemas.settings import Settings
from tasks.ingest.parse.text_layer import PageText


def _subset_pdf(path: Path, pages: list[int], target: Path) -> None:
    import pypdfium2 as pdfium

    source = pdfium.PdfDocument(str(path))
    subset = pdfium.PdfDocument.new()
    try:
        subset.import_pages(source, pages)
        subset.save(str(target))
    finally:
        subset.close()
        source.close()


def parse_pdf_with_ocr(path: Path, out: Path, settings: Settings, verdicts: list[PageText], *,
                       with_mineru: bool) -> dict:
    """Parse `path` into `out`: OCR for the pages that need it (every drawn page unless
    `with_mineru`), MinerU flash for the rest. Returns the manifest's `ocr` record."""
    from tasks.ingest.parse import CONTENT_LIST, CONTENT_LIST_V2, MARKDOWN
    from tasks.ingest.parse.mineru_local import mineru_version, parse_with_mineru
    from tasks.ingest.parse.ocr import markdown, parse_with_ocr, v2_page, write_ocr_output
    from tasks.ingest.parse.text_layer import judge_pdf

    verdicts = list(verdicts) or judge_pdf(path)
    if with_mineru:
        ocr_pages = [v.page_idx for v in verdicts if v.needs_ocr]
        mineru_pages = [v.page_idx for v in verdicts if not v.needs_ocr]
    else:
        ocr_pages, mineru_pages = [v.page_idx for v in verdicts if v.verdict != "blank"], []
    runtime = settings.runtime
    mineru_items: list[dict] = []
    mineru_v2: list | None = None
    if mineru_pages:
        subset = out / ".text_pages.pdf"
        _subset_pdf(path, mineru_pages, subset)
        try:
            parse_with_mineru(subset, out, tier=settings.ingest.mineru_tier, mineru_home=settings.mineru_home)
        finally:
            subset.unlink(missing_ok=True)
        mineru_items = json.loads((out / CONTENT_LIST).read_text(encoding="utf-8"))
        for item in mineru_items:
            item["page_idx"] = mineru_pages[int(item.get("page_idx", 0))]
        if (out / CONTENT_LIST_V2).is_file():
            mineru_v2 = json.loads((out / CONTENT_LIST_V2).read_text(encoding="utf-8"))
    per_page, record = parse_with_ocr(path, ocr_pages, dpi=runtime.ocr_dpi, workers=runtime.ocr_workers,
                                      cache_dir=settings.cache_dir / "ocr")
    record["verdicts"] = {str(v.page_idx): v.as_dict() for v in verdicts if v.verdict != "text"}
    if not mineru_pages:
        write_ocr_output(out, per_page)
        return record

    record["mineru_version"] = mineru_version()
    record["mineru_pages"] = mineru_pages
    ocr_by_page = dict(zip(ocr_pages, per_page))
    items = sorted(mineru_items + [i for page in per_page for i in page], key=lambda i: int(i["page_idx"]))
    (out / CONTENT_LIST).write_text(json.dumps(items, ensure_ascii=False, indent=1), encoding="utf-8")
    if mineru_v2 is not None:
        pages: list[list[dict]] = [[] for _ in verdicts]
        for j, page in enumerate(mineru_v2):
            pages[mineru_pages[j]] = page
        for i, page_items in ocr_by_page.items():
            pages[i] = v2_page(page_items)
        (out / CONTENT_LIST_V2).write_text(json.dumps(pages, ensure_ascii=False, indent=1), encoding="utf-8")
    mineru_md = (out / MARKDOWN).read_text(encoding="utf-8") if (out / MARKDOWN).is_file() else ""
    ocr_md = markdown([i for page in per_page for i in page])
    (out / MARKDOWN).write_text(mineru_md + "\n\n<!-- OCR'd pages -->\n\n" + ocr_md, encoding="utf-8")
    return record
