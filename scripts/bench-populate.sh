#!/usr/bin/env bash
# bench-populate.sh: time to create and populate a 1 GiB memfd DRAM pool
# (mmap MAP_SHARED|MAP_POPULATE: fault and zero every page) on 4 KiB pages
# and on 2 MiB hugetlb pages, from `go test ./hw -bench PoolPopulate`.
#
#   usage: scripts/bench-populate.sh        (env: RUNS, default 3 per case)
#
# As root it reserves 512 2 MiB pages for the run (sysctl vm.nr_hugepages)
# and puts the old count back on exit; otherwise the hugetlb case runs only
# if 512 pages are already free. The first run after boot is 2-3x slower.
set -euo pipefail
cd "$(dirname "$0")/.."

hp=/sys/kernel/mm/hugepages/hugepages-2048kB
old_nr=""
restore() { if [ -n "$old_nr" ]; then echo "$old_nr" >"$hp/nr_hugepages"; fi; }
trap restore EXIT
if [ -d "$hp" ] && [ "$(cat "$hp/free_hugepages")" -lt 512 ] && [ "$(id -u)" = 0 ]; then
	old_nr=$(cat "$hp/nr_hugepages")
	echo $((old_nr + 512 - $(cat "$hp/free_hugepages"))) >"$hp/nr_hugepages"
	echo "reserved 2 MiB hugepages: nr_hugepages $old_nr -> $(cat "$hp/nr_hugepages") (restored on exit)"
fi

out=$(go test ./hw -run '^$' -bench '^BenchmarkPoolPopulate$' -benchtime "${RUNS:-3}x" -count 1 2>&1) || { echo "$out" >&2; exit 1; }
echo "$out" | grep -E '^(Benchmark|---|\s+hugepages)' || true
echo "$out" | awk '
	/^BenchmarkPoolPopulate\// {
		split($1, a, "/"); name = a[2]; sub(/-[0-9]+$/, "", name)
		for (i = 2; i < NF; i++) if ($(i+1) == "ms/pool") ms[name] = $i
	}
	END {
		printf "1 GiB memfd pool, create + populate, mean of the runs\n"
		printf "  4 KiB pages:          %s ms\n", ("4K" in ms) ? ms["4K"] : "n/a"
		printf "  2 MiB hugetlb pages:  %s ms\n", ("hugetlb-2MB" in ms) ? ms["hugetlb-2MB"] : "n/a (no 512 free 2 MiB pages; run as root)"
		if (("4K" in ms) && ("hugetlb-2MB" in ms) && ms["hugetlb-2MB"] > 0) printf "  hugetlb is %.1fx faster\n", ms["4K"] / ms["hugetlb-2MB"]
	}'
