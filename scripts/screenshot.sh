#!/usr/bin/env bash
# Regenerates docs/report.png, the README's picture of a report: builds
# kvsim, runs the quickstart scenario, renders the report with a local
# ECharts (no network) and shoots the top of it with headless Chromium.
# Needs chromium (Debian package) and npm (for ECharts, unless
# KVSIM_ECHARTS_DIST names its dist folder). Usage: scripts/screenshot.sh [OUT.png]
set -euo pipefail
cd "$(dirname "$0")/.."
png="${1:-docs/report.png}"
chromium="${KVSIM_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
[ -n "$chromium" ] || { echo "screenshot: chromium not found (apt-get install chromium)" >&2; exit 1; }
dist="${KVSIM_ECHARTS_DIST:-node_modules/echarts/dist}"
[ -s "$dist/echarts.min.js" ] || dist="$(scripts/fetch-echarts.sh)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/kvsim" ./cmd/kvsim
"$tmp/kvsim" run --quiet --out "$tmp/out" scenarios/quickstart.toml
"$tmp/kvsim" report --quiet --assets "$dist" "$tmp/out/quickstart"
mkdir -p "$(dirname "$png")"
# Animation is off in the charts, so a fixed virtual-time budget gives the
# same picture every time. D-Bus complaints on stderr are harmless.
"$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --hide-scrollbars \
	--user-data-dir="$tmp/profile" --virtual-time-budget=5000 \
	--window-size=1400,900 --screenshot="$tmp/report.png" \
	"file://$tmp/out/quickstart/report.html" 2>/dev/null
test -s "$tmp/report.png" || { echo "screenshot: chromium wrote no PNG" >&2; exit 1; }
cp "$tmp/report.png" "$png"
echo "$png ($(wc -c <"$png") bytes)"
