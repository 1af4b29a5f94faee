#!/usr/bin/env bash
# Render `kbflow report` to a PNG with headless Chromium, to look at the report as a browser shows it.
#
#   bench/report_screenshot.sh [HOME] [OUT_DIR]      (defaults: /tmp/report-home, /tmp/report-shot)
#
# Writes OUT_DIR/report.html and OUT_DIR/report.png (1280×2400 CSS px, the top of the page).
# When HOME has no warehouse yet, it is built first from the demo corpus: `kbflow ingest
# examples/corpus --kb demo`, then `kbflow ask examples/questions.jsonl --kb demo` (and
# `kbflow eval` when that sub-command exists) — a few minutes on 2 cores.
#
# Needs (Debian): apt-get install -y chromium fonts-noto-cjk
#   fonts-noto-cjk: without a CJK font Chinese document names and labels render as tofu boxes.
# Run from the repository root; the report itself loads nothing from the network.
set -euo pipefail

HOME_DIR=${1:-/tmp/report-home}
OUT_DIR=${2:-/tmp/report-shot}
KBFLOW=.venv/bin/kbflow

command -v chromium >/dev/null || { echo "chromium not found: apt-get install -y chromium fonts-noto-cjk" >&2; exit 1; }
fc-list :lang=zh family | grep -q . || echo "warning: no CJK font (apt-get install -y fonts-noto-cjk): Chinese renders as boxes" >&2

if [[ ! -f "$HOME_DIR/kbflow.duckdb" ]]; then
    "$KBFLOW" ingest examples/corpus --kb demo --home "$HOME_DIR"
    "$KBFLOW" ask examples/questions.jsonl --kb demo --home "$HOME_DIR"
    if "$KBFLOW" eval --help >/dev/null 2>&1; then
        "$KBFLOW" eval examples/questions.jsonl --kb demo --home "$HOME_DIR"
    fi
fi

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
"$KBFLOW" report --home "$HOME_DIR" --out "$OUT_DIR/report.html"
# --no-sandbox: Chromium refuses to run as root otherwise (containers); a throwaway profile keeps
# the caller's profile out of it.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$(mktemp -d)" \
    --screenshot="$OUT_DIR/report.png" --window-size=1280,2400 "file://$OUT_DIR/report.html" 2>/dev/null
echo "screenshot: $OUT_DIR/report.png"
