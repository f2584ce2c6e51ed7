#!/usr/bin/env bash
# bench-uring.sh: kvsim's SSD-tier I/O path against fio on the same file.
#
# Both read and write SIZE (default 1 GiB) in 1 MiB blocks with io_uring,
# O_DIRECT and 32 I/Os in flight, REPS times each (default 3), interleaved
# so that disk drift hits both alike, and the medians are compared. The
# target is kvsim/fio >= 0.9.
#
#   usage: scripts/bench-uring.sh [FILE]
#
# FILE (default ./kvsim-bench.dat) must be on a disk filesystem, not tmpfs;
# a file this script creates is removed at the end. Installs nothing; needs
# fio and jq (CI: apt-get install -y fio jq) and Go to build kvsim.
#
# Buffers: fio uses --iomem=shmhuge when 2 MiB hugepages are free, else its
# default (malloc); kvsim uses hugetlb pages when free, else THP. As root
# the script reserves 64 hugepages for the run and puts the old count back,
# so that both tools get 2 MiB pages (NO_RESERVE=1 skips that, to compare
# fio's 4 KiB malloc buffers with kvsim's THP ones).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in fio jq go; do
	command -v "$tool" >/dev/null || { echo "bench-uring: $tool not found (apt-get install -y fio jq)" >&2; exit 2; }
done
file=${1:-$PWD/kvsim-bench.dat}
size=${SIZE:-1073741824}
reps=${REPS:-3}
dir=$(dirname "$file")
fstype=$(stat -f -c %T "$dir")
case $fstype in
tmpfs | ramfs) echo "bench-uring: $dir is on $fstype, which has no O_DIRECT; give a FILE on a disk filesystem (ext4, xfs)" >&2; exit 2 ;;
esac

tmp=$(mktemp -d)
created=0
[ -e "$file" ] || created=1
hp=/sys/kernel/mm/hugepages/hugepages-2048kB
old_nr=""
cleanup() {
	[ -n "$old_nr" ] && echo "$old_nr" >"$hp/nr_hugepages"
	[ "$created" = 1 ] && rm -f "$file"
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/kvsim" ./cmd/kvsim

iomem=""
if [ -d "$hp" ]; then
	free=$(cat "$hp/free_hugepages")
	if [ "$free" -lt 64 ] && [ "$(id -u)" = 0 ] && [ -z "${NO_RESERVE:-}" ]; then
		old_nr=$(cat "$hp/nr_hugepages")
		echo $((old_nr + 64 - free)) >"$hp/nr_hugepages"
		free=$(cat "$hp/free_hugepages")
	fi
	# fio's shm segment takes iodepth x bs plus alignment: 17 pages.
	[ "$free" -ge 40 ] && iomem="--iomem=shmhuge"
fi

fio_run() { # rw
	fio --name=kvsim-cmp --filename="$file" --size="$size" --bs=1M --iodepth=32 \
		--ioengine=io_uring --direct=1 --rw="$1" $iomem --output-format=json |
		jq ".jobs[0].$1.bw_bytes / 1048576"
}
kvsim_run() { # rw
	"$tmp/kvsim" iobench --file "$file" --size "$size" --bs 1MiB --qd 32 --rw "$1" \
		--engine auto --direct=true --hugepages=true --overwrite --json >"$tmp/kv.json"
	jq .mib_per_s "$tmp/kv.json"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "file $file ($fstype), $((size >> 20)) MiB, bs 1 MiB, QD 32, O_DIRECT, io_uring; fio ${iomem:-(malloc buffers)}"
# Writes first: they also lay the file out for the reads.
for rw in write read; do
	: >"$tmp/fio.$rw"
	: >"$tmp/kv.$rw"
	for _ in $(seq "$reps"); do
		fio_run "$rw" >>"$tmp/fio.$rw"
		kvsim_run "$rw" >>"$tmp/kv.$rw"
	done
done
jq -r '"kvsim: engine \(.engine), buffers \(.buffer_pages), registered \(.registered_buffers), queue depth \(.queue_depth)"' "$tmp/kv.json"
printf '%-6s %12s %12s %10s   %s\n' rw "fio MiB/s" "kvsim MiB/s" kvsim/fio "runs (fio | kvsim)"
for rw in read write; do
	f=$(median <"$tmp/fio.$rw")
	k=$(median <"$tmp/kv.$rw")
	printf '%-6s %12.0f %12.0f %10.2f   %s | %s\n' "$rw" "$f" "$k" "$(awk -v k="$k" -v f="$f" 'BEGIN{print k/f}')" \
		"$(awk '{printf "%.0f ", $1}' "$tmp/fio.$rw")" "$(awk '{printf "%.0f ", $1}' "$tmp/kv.$rw")"
done
