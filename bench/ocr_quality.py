"""OCR quality: real text PDFs from ../shared/data/docs, pages rasterized into an image-only PDF
(a scan, made here, never committed), read by the OCR backend exactly as ingest reads a scan
(`parse_source`: page decision → OCR → content list), compared with the pages' text layer.

Prints the character error rate per page and overall (whitespace ignored, NFKC), and per page the
seconds OCR took. Usage (from the repo):

    PYTHONPATH=. python bench/ocr_quality.py                # the default page set (6 pages)
    PYTHONPATH=. python bench/ocr_quality.py --pages 2      # the first 2 of them
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

from tests.conftest import DOCS  # noqa: E402
from tests.ocr_fixtures import cer, image_only_pdf  # noqa: E402

# single-column pages of body text (a two-column page's text layer order is not a reading order)
PAGES = [
    ("zh_pdf/prc_constitution.pdf", 2),  # statute prose, Chinese
    ("zh_pdf/prc_civil_code.pdf", 40),  # articles 第X条, Chinese
    ("zh_pdf/gbt3620.1-2016_titanium_alloy_standard.pdf", 2),  # clauses 1 范围 …, the standard's good page
    ("zh_pdf/byd_2025q1_quarterly_report.pdf", 4),  # a report page with numbers and a table
    ("en/multi_page.pdf", 0),  # English prose
    ("zh_pdf/pumpkin_book_ml_formulas_196p.pdf", 50),  # Chinese prose with inline formulas
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=len(PAGES), help="how many of the page set to read")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dpi", type=int, default=144, help="ocr_dpi: the resolution the OCR backend renders at")
    args = parser.parse_args()

    from schemas.settings import load_settings
    from tasks.ingest.content_list import normalize_parsed
    from tasks.ingest.discover import discover
    from tasks.ingest.parse import parse_source

    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    work = Path(tempfile.mkdtemp(prefix="ocr-quality-"))
    try:
        rows, ref_chars, errors_total = [], 0, 0.0
        scans = []
        for name, page in PAGES[:args.pages]:
            scan = work / "scans" / f"{Path(name).stem}_p{page + 1}.pdf"
            scan.parent.mkdir(parents=True, exist_ok=True)
            (reference,) = image_only_pdf(DOCS / name, [(page, (0.0, 1.0))], scan)
            scans.append((name, page, scan, reference))
        settings = load_settings(work / "home", ocr_workers=args.workers, ocr_dpi=args.dpi)
        for name, page, scan, reference in scans:
            (src,) = discover([scan], settings).sources
            started = time.perf_counter()
            out = parse_source(src, settings)
            seconds = time.perf_counter() - started
            assert out.key.backend == "ocr", out.key
            hypothesis = "\n".join(c.content for c in normalize_parsed(out.parsed_dir, keep_furniture=True).chunks)
            rate = cer(reference, hypothesis)
            n = len("".join(reference.split()))
            ref_chars += n
            errors_total += rate * n
            manifest = json.loads((out.parsed_dir / "parse.json").read_text(encoding="utf-8"))
            rows.append((f"{name} p{page + 1}", n, rate, seconds, manifest["ocr"]["lines"]))
        print(f"ocr_dpi {args.dpi}, scans at 200 dpi")
        print(f"{'page':60} {'ref chars':>9} {'CER':>7} {'s':>6} {'lines':>5}")
        for label, n, rate, seconds, lines in rows:
            print(f"{label:60} {n:9d} {rate:7.2%} {seconds:6.1f} {lines:5d}")
        print(f"{'overall (character-weighted)':60} {ref_chars:9d} {errors_total / max(ref_chars, 1):7.2%}")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
