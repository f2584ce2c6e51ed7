#!/usr/bin/env bash
# Installs ECharts 5 from npm into DIR (default: the repository root, whose
# node_modules/ git ignores) and prints its dist folder, the one that
# `kvsim run|report --assets` and the browser test (KVSIM_ECHARTS_DIST) need.
# ECharts 6 moves titles and legends, hence the pinned major version.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root}"
mkdir -p "$dir"
# --no-save: no package.json or lock file is written into DIR.
npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error echarts@5 >&2
dist="$(cd "$dir/node_modules/echarts/dist" && pwd)"
test -s "$dist/echarts.min.js" || { echo "fetch-echarts: $dist/echarts.min.js missing after npm install" >&2; exit 1; }
echo "$dist"
