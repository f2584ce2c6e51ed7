#!/usr/bin/env bash
# gpucheck.sh: kvsim's accelerator checks on a machine with a GPU and no
# network, in well under 5 minutes.
#
# Build the binaries wherever Go is (CGO_ENABLED=0: they need only glibc
# and load libcudart at run time):
#   CGO_ENABLED=0 go build -o kvsim ./cmd/kvsim
#   CGO_ENABLED=0 go test -c -o accel.test ./hw/accel
# then on the GPU machine:
#   hw/accel/gpucheck.sh ./kvsim ./accel.test
#
# It prints the device probe (kvsim doctor), runs the GPU tests with
# KVSIM_REQUIRE_GPU=1 (so no GPU is a failure, not a skip), measures H2D and
# D2H GB/s from pinned and pageable memory (TestGPUCopies), and, where a
# python3 with torch is importable, what PyTorch gets on the same sizes
# (torch.empty(pin_memory=True) <-> cuda tensor copy_(non_blocking=True),
# timed with CUDA events), then kvsim's pinned bandwidth as % of PyTorch's
# (target >= 80% for D2H).
#
# Environment: PYTHON (an interpreter with torch; default: python3, then
# /opt/*/.venv/bin/python3 and /opt/*/bin/python3), KVSIM_COPY_SIZES (bytes,
# comma separated), KVSIM_CUDART (libcudart to use), GPUCHECK_OUT (folder for
# the logs; default $OUT, else a temporary folder).
# Exit status: 0 when the GPU tests pass, 1 when they fail, 2 on misuse.

set -u -o pipefail

if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
	sed -n '2,10p' "$0" >&2
	echo "usage: $0 KVSIM_BINARY ACCEL_TEST_BINARY" >&2
	exit 2
fi
KVSIM=$(readlink -f "$1")
HWTEST=$(readlink -f "$2")
LOGS=${GPUCHECK_OUT:-${OUT:-$(mktemp -d /tmp/gpucheck.XXXXXX)}}
mkdir -p "$LOGS"
export KVSIM_COPY_SIZES=${KVSIM_COPY_SIZES:-65536,1048576,16777216,268435456}
START=$(date +%s)
say() { printf '\n== %s (%ds)\n' "$*" $(($(date +%s) - START)); }

say "machine"
uname -srm
if command -v nvidia-smi >/dev/null; then
	nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader || true
fi
echo "memlock: $(ulimit -l)"

say "kvsim doctor"
(cd "$LOGS" && timeout 60 "$KVSIM" doctor --dir "$LOGS") 2>&1 | tee "$LOGS/doctor.txt" || echo "(kvsim doctor exited $?)"

say "GPU tests"
# The test binary runs in a scratch folder: some hw tests write files.
WORK=$(mktemp -d /tmp/gpucheck-work.XXXXXX)
(cd "$WORK" && KVSIM_REQUIRE_GPU=1 timeout 180 "$HWTEST" -test.run 'GPU' -test.v -test.count=1 -test.timeout 170s) 2>&1 | tee "$LOGS/gpu-tests.txt"
TESTS=$?
rm -rf "$WORK"
grep -o 'KVSIM_GPU_COPIES .*' "$LOGS/gpu-tests.txt" | head -1 | sed 's/^KVSIM_GPU_COPIES //' >"$LOGS/kvsim-copies.json"
if [ ! -s "$LOGS/kvsim-copies.json" ]; then
	echo "no copy measurement from TestGPUCopies (see above)"
	say "result: GPU tests FAILED (exit $TESTS)"
	exit 1
fi

# Find a python3 that can import torch with CUDA.
PY=""
for p in ${PYTHON:-} python3 /opt/*/.venv/bin/python3 /opt/*/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 && timeout 60 "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
		PY=$p
		break
	fi
done

if [ -n "$PY" ]; then
	say "PyTorch copies ($PY)"
	timeout 120 "$PY" - "$LOGS/kvsim-copies.json" "$LOGS/torch-copies.json" <<'EOF'
import json, sys, torch
kv = json.load(open(sys.argv[1]))
out = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0), "results": []}
dev = torch.device("cuda", 0)
s = torch.cuda.Stream()
def timed(n, f):
    f()  # warm-up, as kvsim
    s.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record(s)
    for _ in range(n):
        f()
    e1.record(s)
    e1.synchronize()
    return e0.elapsed_time(e1) / 1e3
with torch.cuda.stream(s):
    for r in kv["results"]:
        size, n = r["bytes"], r["iters"]
        pinned = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        pageable = torch.empty(size, dtype=torch.uint8)
        d = torch.empty(size, dtype=torch.uint8, device=dev)
        res = {"bytes": size, "iters": n}
        for key, f in [("h2d_pinned_gbs", lambda: d.copy_(pinned, non_blocking=True)),
                       ("h2d_pageable_gbs", lambda: d.copy_(pageable, non_blocking=True)),
                       ("d2h_pinned_gbs", lambda: pinned.copy_(d, non_blocking=True)),
                       ("d2h_pageable_gbs", lambda: pageable.copy_(d, non_blocking=True))]:
            res[key] = size * n / timed(n, f) / 1e9
        out["results"].append(res)
        del pinned, pageable, d
json.dump(out, open(sys.argv[2], "w"))
print("torch %s (CUDA %s) on %s" % (out["torch"], out["cuda"], out["device"]))
EOF
	[ $? -eq 0 ] || echo "(PyTorch measurement failed)"
else
	say "PyTorch copies: skipped (no python3 with torch and CUDA; set PYTHON)"
fi

say "summary"
CMP=${PY:-$(command -v python3 || true)}
if [ -n "$CMP" ]; then
	"$CMP" - "$LOGS/kvsim-copies.json" "$LOGS/torch-copies.json" <<'EOF'
import json, os, sys
kv = json.load(open(sys.argv[1]))
th = json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else None
print("kvsim: %s %s, driver %s, runtime %s" % (kv["backend"], kv["device"], kv["driver"], kv["runtime"]))
def mib(n):
    return "%g MiB" % (n / 2**20) if n >= 2**20 else "%g KiB" % (n / 2**10)
hdr = "%10s | %8s %8s %6s | %8s %8s %6s" % ("size", "H2D pin", "H2D page", "ratio", "D2H pin", "D2H page", "ratio")
if th:
    hdr += " | %9s %9s | %7s %7s" % ("torch H2D", "torch D2H", "H2D %", "D2H %")
print(hdr + "   (GB/s; ratio = pinned/pageable; % = kvsim pinned / torch pinned)")
tr = {r["bytes"]: r for r in th["results"]} if th else {}
verdict = None
for r in kv["results"]:
    line = "%10s | %8.2f %8.2f %5.2fx | %8.2f %8.2f %5.2fx" % (mib(r["bytes"]), r["h2d_pinned_gbs"], r["h2d_pageable_gbs"],
        r["h2d_pinned_over_pageable"], r["d2h_pinned_gbs"], r["d2h_pageable_gbs"], r["d2h_pinned_over_pageable"])
    t = tr.get(r["bytes"])
    if t:
        h, d = 100 * r["h2d_pinned_gbs"] / t["h2d_pinned_gbs"], 100 * r["d2h_pinned_gbs"] / t["d2h_pinned_gbs"]
        line += " | %9.2f %9.2f | %6.0f%% %6.0f%%" % (t["h2d_pinned_gbs"], t["d2h_pinned_gbs"], h, d)
        verdict = (r["bytes"], d, t)
    print(line)
if th:
    print("torch pageable at the largest size: H2D %.2f GB/s, D2H %.2f GB/s" % (th["results"][-1]["h2d_pageable_gbs"], th["results"][-1]["d2h_pageable_gbs"]))
if verdict:
    size, d, t = verdict
    print("kvsim pinned D2H at %s = %.0f%% of PyTorch's (target >= 80%%): %s" % (mib(size), d, "OK" if d >= 80 else "BELOW TARGET"))
EOF
else
	sed -n 's/.*KVSIM_GPU_COPIES //p' "$LOGS/gpu-tests.txt"
	grep -A8 ' size  iters' "$LOGS/gpu-tests.txt" || true
fi
echo "logs in $LOGS"
if [ "$TESTS" -ne 0 ]; then
	say "result: GPU tests FAILED (exit $TESTS)"
	exit 1
fi
say "result: GPU tests passed"
