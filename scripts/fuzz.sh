#!/usr/bin/env bash
# Runs every fuzz target of the module, each for a bounded time.
#
#   scripts/fuzz.sh [TIME] [PACKAGE...]
#
# TIME is each target's -fuzztime (default 10s; "1000x" counts executions
# instead); PACKAGE defaults to ./... . The targets are found with
# `go test -list`, so a new Fuzz function is run without editing this file.
# A failing input is printed and kept under the package's testdata/fuzz/,
# where plain `go test` replays it from then on. Exits 1 if any target failed.
# Minimising a new input takes at most FUZZMINIMIZETIME (default 10s), so a
# target's run stays near TIME.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-10s}"
shift $(($# > 0 ? 1 : 0))
[ $# -gt 0 ] || set -- ./...

# Only packages whose tests define a Fuzz function are built to list them;
# `go test -list` prints each package's names, then its "ok" line.
pkgs=$(go list -f '{{.ImportPath}} {{.Dir}}' "$@" | while read -r pkg dir; do
	if grep -qs '^func Fuzz' "$dir"/*_test.go; then echo "$pkg"; fi
done)
if [ -z "$pkgs" ]; then
	echo "fuzz: no fuzz targets in $*" >&2
	exit 1
fi
targets=$(go test -list '^Fuzz' $pkgs | awk '
	/^Fuzz/ { names[++n] = $1; next }
	/^ok/ { for (i = 1; i <= n; i++) print $2, names[i]; n = 0 }')
if [ -z "$targets" ]; then
	echo "fuzz: no fuzz targets in $*" >&2
	exit 1
fi

failed=()
while read -r pkg name; do
	echo "== fuzz $pkg $name ($fuzztime)"
	log=$(mktemp)
	if go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "${FUZZMINIMIZETIME:-10s}" 2>&1 | tee "$log"; then
		rm -f "$log"
		continue
	fi
	# Go 1.26's fuzz coordinator can fail a target at the end of -fuzztime
	# with a bare "context deadline exceeded" and no input (a race fixed in
	# Go 1.27, go.dev/issue/75804). That, and only that, is run once more.
	if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
		echo "== fuzz $pkg $name: the coordinator's deadline race, no input written; once more"
		if go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "${FUZZMINIMIZETIME:-10s}" 2>&1 | tee "$log"; then
			rm -f "$log"
			continue
		fi
	fi
	failed+=("$pkg $name")
	# Show the input that failed, not just its file name.
	for f in $(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' "$log"); do
		path="$(go list -f '{{.Dir}}' "$pkg")/$f"
		echo "-- $path:"
		cat "$path" 2>/dev/null || true
	done
	rm -f "$log"
done <<<"$targets"

if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: FAILED %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: $(wc -l <<<"$targets") targets passed"
