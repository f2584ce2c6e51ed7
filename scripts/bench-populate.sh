#!/usr/bin/env bash
# bench-populate.sh: time to create and populate a 1 GiB memfd DRAM pool
# (mmap MAP_SHARED|MAP_POPULATE: fault and zero every page) on 4 KiB pages
# and on 2 MiB hugetlb pages, from `go test ./hw/hostmem -bench PoolPopulate`.
#
#   usage: scripts/bench-populate.sh        (env: RUNS, default 5 per case)
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

out=$(go test ./hw/hostmem -run '^$' -bench '^BenchmarkPoolPopulate$' -benchtime 1x -count "${RUNS:-5}" 2>&1) || { echo "$out" >&2; exit 1; }
echo "$out" | grep -E '^\s+hugepages_test' || true # skip reasons
echo "$out" | awk '
	/^BenchmarkPoolPopulate\// {
		split($1, a, "/"); name = a[2]; sub(/-[0-9]+$/, "", name)
		for (i = 2; i < NF; i++) if ($(i+1) == "ms/pool") { n[name]++; v[name, n[name]] = $i; runs[name] = runs[name] " " $i }
	}
	function median(name,   i, j, t, m) {
		m = n[name]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[name, j] < v[name, i]) { t = v[name, i]; v[name, i] = v[name, j]; v[name, j] = t }
		return (m % 2) ? v[name, (m + 1) / 2] : (v[name, m / 2] + v[name, m / 2 + 1]) / 2
	}
	END {
		print "1 GiB memfd pool, create + populate (MAP_POPULATE), median ms (runs)"
		if ("4K" in n) printf "  4 KiB pages:          %7.1f ms  (%s )\n", median("4K"), runs["4K"]
		else print "  4 KiB pages:          n/a"
		if ("hugetlb-2MB" in n) printf "  2 MiB hugetlb pages:  %7.1f ms  (%s )\n", median("hugetlb-2MB"), runs["hugetlb-2MB"]
		else print "  2 MiB hugetlb pages:  n/a (512 free 2 MiB pages needed; run as root)"
		if (("4K" in n) && ("hugetlb-2MB" in n)) printf "  4 KiB / hugetlb:      %.1fx\n", median("4K") / median("hugetlb-2MB")
	}'
