"""OCR speed: pages/s of the OCR backend vs MinerU flash on the same text pages, in one run.

OCR runs first so that the children's peak RSS is an OCR worker's. The pages (default: 4 pages of the PRC constitution, plain Chinese prose) are copied into one PDF;
MinerU flash parses it (its text layer, no models), then the OCR backend renders and reads the same
pages with `--workers` processes at `--dpi`. Prints seconds, pages/s, the ratio, the OCR workers'
peak RSS (one page in memory each) and the load average. Usage (from the repo):

    PYTHONPATH=. python bench/ocr_speed.py [--pages 4] [--workers 2] [--dpi 144]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

from tests.conftest import DOCS  # noqa: E402

SOURCE = DOCS / "zh_pdf" / "prc_constitution.pdf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--first", type=int, default=2, help="first page index (0-based)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dpi", type=int, default=144)
    args = parser.parse_args()

    import pypdfium2 as pdfium

    from tasks.ingest.parse.mineru_local import parse_with_mineru
    from tasks.ingest.parse.ocr import ocr_pages, page_items

    work = Path(tempfile.mkdtemp(prefix="ocr-speed-"))
    try:
        pages = list(range(args.first, args.first + args.pages))
        subset = work / "pages.pdf"
        source, new = pdfium.PdfDocument(str(SOURCE)), pdfium.PdfDocument.new()
        new.import_pages(source, pages)
        new.save(str(subset))
        new.close(), source.close()
        print(f"{args.pages} pages of {SOURCE.name}; load average before: {os.getloadavg()[0]:.2f}")

        # OCR first: the peak RSS of the children is then the OCR workers' alone
        started = time.perf_counter()
        read = ocr_pages(subset, list(range(args.pages)), dpi=args.dpi, workers=args.workers, cache_dir=work / "ocr-cache")
        items = [page_items(p) for p in read]
        ocr_s = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

        out = work / "mineru"
        out.mkdir()
        started = time.perf_counter()
        parse_with_mineru(subset, out, tier="flash", mineru_home=work / "mineru-home")
        mineru_s = time.perf_counter() - started


        print(f"MinerU flash (text layer): {mineru_s:7.1f} s  {args.pages / mineru_s:6.3f} pages/s")
        print(f"OCR ({args.workers} workers, {args.dpi} dpi): {ocr_s:7.1f} s  {args.pages / ocr_s:6.3f} pages/s  "
              f"({ocr_s / args.pages:.1f} s a page; {sum(len(p.lines) for p in read)} lines, "
              f"{sum(map(len, items))} items; page seconds in a worker: {[round(p.seconds, 1) for p in read]})")
        print(f"ratio: OCR takes {ocr_s / mineru_s:.1f}x MinerU flash's time")
        print(f"peak RSS of an OCR worker process: {peak_mb:.0f} MB; load average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
