#!/usr/bin/env bash
# @file report_screenshot.sh
# Regenerates docs/report.png, the screenshot of the report page in README.md and
# docs/report.md: runs examples/quickstart.yaml, writes its report and renders the top of
# it in headless Chromium. Usage: scripts/report_screenshot.sh [BUILD_DIR] (default
# build/release; it must hold experiments/multiverse).
set -euo pipefail
cd "$(dirname "$0")/.."
exe="${1:-build/release}/experiments/multiverse"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$exe" --experiments examples/quickstart.yaml --out "$out/quickstart" --quiet
"$exe" report "$out/quickstart"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=960,1300 \
  --screenshot="$(pwd)/docs/report.png" "file://$out/quickstart/report.html" 2> /dev/null
echo "wrote docs/report.png"
