#!/usr/bin/env bash
# A real Slurm on this one machine runs a sharded kvsim sweep: the array
# script kvsim sweep --emit slurm writes, then the merge as a job that
# depends on it, exactly as the script's own comments say to submit them;
# the merged folder must equal the unsharded sweep's (every file byte for
# byte, summary.json but for its "run" block of wall-clock figures).
#
#   scripts/slurm-test.sh KVSIM WORKDIR [TIMEOUT_S]
#
# KVSIM is a kvsim binary, WORKDIR an empty folder for the results and the
# script; TIMEOUT_S (default 300) bounds every wait. Needs root, Debian's
# slurm-wlm and munge (apt-get install slurm-wlm munge). Tested with
# slurm-wlm 22.05.
#
# Everything it starts and writes is its own: a munged on its own socket
# and key, a slurmctld and a slurmd on free ports with a slurm.conf in a
# temporary folder (SLURM_CONF points the client commands at it), all
# stopped by their pid files and removed on exit; /etc is not read or
# written. Settings that let Slurm run as root in a container without
# systemd or a writable cgroup tree: ProctrackType=proctrack/linuxproc,
# TaskPlugin=task/none, JobAcctGatherType=jobacct_gather/none (no cgroup
# plugin is loaded, so no cgroup.conf is needed), SlurmUser=SlurmdUser=root,
# no accounting; munged --force, as its key lies under a world-writable
# /tmp.
set -euo pipefail

die() { echo "slurm-test.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: scripts/slurm-test.sh KVSIM WORKDIR [TIMEOUT_S]"
kvsim=$(realpath "$1") work=$(realpath "$2") timeout=${3:-300}
[ -x "$kvsim" ] || die "$1: not an executable"
[ -d "$work" ] || die "$2: not a folder"
[ "$(id -u)" = 0 ] || die "needs root (slurmd runs jobs as any user)"
for c in munged slurmctld slurmd sbatch squeue scancel scontrol sinfo; do
	command -v $c >/dev/null || die "$c not found: apt-get install slurm-wlm munge"
done
here=$(cd "$(dirname "$0")/.." && pwd)
scenario=$here/scenarios/hbm_dram.toml
shards=4
sweep=(sweep --quiet --limit 300 --vary workload.speedup --values 2,0.5,4,1,8 "$scenario")

# A short path: munged's socket name must fit in 108 bytes.
state=$(mktemp -d /tmp/kvsim-slurm.XXXXXX)
export SLURM_CONF=$state/slurm.conf
started=()
show_logs() {
	for f in "$state"/log/*; do
		[ -f "$f" ] && { echo "---- $(basename "$f")"; tail -n 40 "$f"; }
	done
	for f in "$work"/slurm-*.out; do
		[ -f "$f" ] && { echo "---- $(basename "$f")"; tail -n 20 "$f"; }
	done
	return 0
}
stop() { # pid file: the daemon's, by its pid; waits for it to exit
	[ -f "$1" ] || return 0
	local pid
	pid=$(cat "$1")
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
}
cleanup() {
	rc=$?
	if [ $rc != 0 ]; then
		echo "slurm-test.sh: failed (status $rc); the daemons' logs:" >&2
		show_logs >&2
	fi
	# Jobs still queued or running (a wait that timed out) go first: a
	# job's processes outlive slurmd.
	if [ -f "$state/slurmctld.pid" ] && [ -n "$(squeue -h -o %A 2>/dev/null)" ]; then
		scancel --quiet $(squeue -h -o %A) 2>/dev/null || true
		for _ in $(seq 100); do
			[ -z "$(squeue -h -o %A 2>/dev/null)" ] && break
			sleep 0.1
		done
	fi
	stop "$state/slurmd.pid"
	stop "$state/slurmctld.pid"
	stop "$state/munged.pid"
	rm -rf "$state"
	exit $rc
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# Two free TCP ports for the daemons, not Slurm's defaults (a real cluster
# may run here).
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 30000))
		command -v ss >/dev/null || { echo $p; return; } # iproute2 absent: a random pair
		ss -Htln "sport = :$p" | grep -q . || ss -Htln "sport = :$((p + 1))" | grep -q . || { echo $p; return; }
	done
	die "no free port"
}
port=$(free_port)
host=$(hostname -s)
cpus=$(nproc)
mkdir -p "$state/log" "$state/spool" "$state/save"
cat >"$SLURM_CONF" <<EOF
ClusterName=kvsimtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$state/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$state/save
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
MinJobAge=3600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=kvsim Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
head -c 1024 /dev/urandom >"$state/munge.key"
chmod 400 "$state/munge.key"

echo "== slurm $(slurmd -V | awk '{print $2}'), munge; ports $port-$((port + 1)), $cpus CPUs"
munged --force --socket="$state/munge.socket" --key-file="$state/munge.key" --log-file="$state/log/munged.log" \
	--pid-file="$state/munged.pid" --seed-file="$state/munge.seed"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"

deadline=$((SECONDS + timeout))
wait_for() { # what, then a command that succeeds once it is so
	local what=$1
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || { echo "slurm-test.sh: $what: not after ${timeout}s; squeue:" >&2; squeue >&2 || true; exit 1; }
		sleep 0.5
	done
}
node_idle() { sinfo -h -N -o %t 2>/dev/null | grep -qx idle; }
wait_for "node $host idle" node_idle

echo "== the unsharded sweep"
(cd "$work" && "$kvsim" "${sweep[@]}" --out full)

echo "== $shards shards through sbatch, then the merge job"
(cd "$work" && "$kvsim" "${sweep[@]}" --out sh --emit slurm --shards $shards --script sweep.sbatch)
grep -q "^#SBATCH --array=0-$((shards - 1))$" "$work/sweep.sbatch" || die "sweep.sbatch: no --array=0-$((shards - 1))"
# The two commands the script's comments give, as given.
submit=$(sed -n 's/^#   \(jid=.*\)$/\1/p; s/^#   \(sbatch --dependency=.*\)$/\1/p' "$work/sweep.sbatch")
[ "$(echo "$submit" | wc -l)" = 2 ] || die "sweep.sbatch: no submit instructions"
(cd "$work" && eval "$submit"$'\n''echo "$jid" >array.jobid')
jid=$(cat "$work/array.jobid")
# Done when nothing runs or can still run: a merge whose array failed
# waits for ever (DependencyNeverSatisfied), and is cancelled below.
gone() { [ -z "$(squeue -h -o '%i %r' 2>/dev/null | grep -v DependencyNeverSatisfied)" ]; }
wait_for "jobs done" gone
states=$(scontrol -o show job | sed -n 's/.*JobId=\([0-9]*\) .*JobName=\([^ ]*\) .*JobState=\([A-Z_]*\) .*/\2 \3/p' | sort | uniq -c)
echo "$states"
echo "$states" | grep -q "$shards kvsim-sweep COMPLETED" || { echo "slurm-test.sh: array job $jid: not every task completed (the merge job never runs)" >&2; exit 1; }
echo "$states" | grep -q "1 kvsim-merge COMPLETED" || { echo "slurm-test.sh: the merge job did not complete" >&2; exit 1; }

echo "== compare"
strip_run() { sed '/^  "run": {$/,/^  },$/d' "$1"; }
(cd "$work/full" && find . -type f ! -name '.*' | sort) >"$work/full.files"
(cd "$work/sh" && find . -type f ! -name '.*' | sort) >"$work/sh.files"
cmp -s "$work/full.files" "$work/sh.files" || { diff "$work/full.files" "$work/sh.files" >&2; echo "slurm-test.sh: the folders hold different files" >&2; exit 1; }
n=0
while read -r f; do
	if [ "$(basename "$f")" = summary.json ]; then
		cmp -s <(strip_run "$work/full/$f") <(strip_run "$work/sh/$f") || { echo "slurm-test.sh: $f differs" >&2; exit 1; }
	else
		cmp "$work/full/$f" "$work/sh/$f" || { echo "slurm-test.sh: $f differs" >&2; exit 1; }
	fi
	n=$((n + 1))
done <"$work/full.files"
echo "== ok: $n files equal after $shards Slurm array tasks and the merge job (${SECONDS}s)"
