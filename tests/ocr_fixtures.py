"""OCR quality fixtures, made on the fly from real text PDFs (never committed): page regions
rasterized into an image-only PDF, their text layer as the reference, and the character error
rate. Used by tests/tasks/ingest/test_ocr.py and bench/ocr_quality.py."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

SCAN_DPI = 200  # what an office scanner writes; the OCR backend renders the scan again at ocr_dpi


def _norm(text: str) -> str:
    """Compared without whitespace (OCR and text layers space CJK differently) and after NFKC
    (full-width / half-width punctuation is the same character to a reader)."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate: edits to turn the OCR text into the reference, per reference character."""
    ref, hyp = _norm(reference), _norm(hypothesis)
    return edit_distance(ref, hyp) / max(len(ref), 1)


def image_only_pdf(source: Path, regions: list[tuple[int, tuple[float, float]]], target: Path,
                   dpi: int = SCAN_DPI) -> list[str]:
    """Rasterize each (page index, (top, bottom) as shares of the page height) of `source` into one
    page of an image-only PDF `target`; returns each page's whole text layer, the reference (a
    region's part of it is the caller's to cut by text: some layers, GB/T 3620.1's among them,
    place their characters elsewhere than the glyphs they draw)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(source))
    images, references = [], []
    try:
        for page_idx, (top, bottom) in regions:
            page = pdf[page_idx]
            image = page.render(scale=dpi / 72).to_pil().convert("RGB")
            images.append(image.crop((0, int(top * image.height), image.width, int(bottom * image.height))))
            textpage = page.get_textpage()
            references.append(textpage.get_text_range())
            textpage.close()
            page.close()
    finally:
        pdf.close()
    images[0].save(target, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return references
