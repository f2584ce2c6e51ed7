#!/usr/bin/env bash
# A network fabric on one machine, for kvsim's remote tiers: two network
# namespaces joined by a veth pair, both ends shaped with tc tbf to one
# rate, and a redis-server in the far namespace. Run kvsim in the near
# namespace (ip netns exec NEAR kvsim ...) and give remote_dram tiers the
# printed endpoint. Needs root, iproute2 (ip, tc) and redis-server.
#
#   scripts/fabric.sh up [RATE]   e.g. 4gbit (default), 10gbit, 500mbit
#   scripts/fabric.sh down        removes everything up made; always safe
#   scripts/fabric.sh status
#
# up is idempotent: it takes down what an earlier up left and builds the
# fabric again. It touches only what it names (namespaces PREFIX-near and
# PREFIX-far, their veth pair; the redis-server it started, by its pid
# file), where PREFIX is $KVSIM_FABRIC_PREFIX (default kvfab, at most 10
# characters). Environment: KVSIM_FABRIC_NET (default 10.233.0: the far
# end is .2, the near .1, a /30), KVSIM_FABRIC_PORT (6379),
# KVSIM_FABRIC_BURST (tbf burst, 64kb), KVSIM_FABRIC_STATE (where the pid
# file and the server's folder live, /run/PREFIX).
#
# tbf, not netem: some kernels lack netem (no added delay here), and tbf
# alone reproduces 1-16 Gbit/s within a few percent for streams of 64 KiB
# writes. The burst is one 64 KiB block: each transfer waits for its own
# tokens, so its time does not depend on how idle the link was before it,
# which is what a per-move link model (and kvsim calibrate's back-to-back
# moves) assumes. A 1mb burst lets moves spaced out by other work cross at
# the veth's own speed, and the replay then beats the calibration by 25-40%.
set -euo pipefail

prefix=${KVSIM_FABRIC_PREFIX:-kvfab}
net=${KVSIM_FABRIC_NET:-10.233.0}
port=${KVSIM_FABRIC_PORT:-6379}
burst=${KVSIM_FABRIC_BURST:-64kb}
state=${KVSIM_FABRIC_STATE:-/run/$prefix}
near=$prefix-near far=$prefix-far
vnear=${prefix}n vfar=${prefix}f

die() { echo "fabric.sh: $*" >&2; exit 2; }

[[ $prefix =~ ^[a-z][a-z0-9]{0,9}$ ]] || die "KVSIM_FABRIC_PREFIX $prefix: want 1-10 lowercase letters and digits, starting with a letter"
[[ $net =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "KVSIM_FABRIC_NET $net: want the first three octets, e.g. 10.233.0"
[[ $port =~ ^[0-9]+$ ]] && ((port >= 1 && port <= 65535)) || die "KVSIM_FABRIC_PORT $port: want 1-65535"

down() {
	if [[ -f $state/redis.pid ]]; then
		pid=$(cat "$state/redis.pid")
		# Only the redis-server this script started: its pid file, its name.
		if [[ $pid =~ ^[0-9]+$ ]] && [[ $(cat /proc/"$pid"/comm 2>/dev/null) == redis-server ]]; then
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$pid" 2>/dev/null || true
		fi
		rm -f "$state/redis.pid"
	fi
	# Deleting a namespace deletes the veth end in it, and so the pair.
	ip netns del "$far" 2>/dev/null || true
	ip netns del "$near" 2>/dev/null || true
	ip link del "$vnear" 2>/dev/null || true
	if [[ -d $state ]]; then
		rm -f "$state/redis.log" "$state/endpoint"
		rmdir "$state/data" 2>/dev/null || true
		rmdir "$state" 2>/dev/null || true
	fi
}

up() {
	local rate=${1:-4gbit}
	[[ $rate =~ ^[0-9]+(\.[0-9]+)?(bit|kbit|mbit|gbit)$ ]] || die "rate $rate: want e.g. 4gbit, 500mbit"
	[[ $(id -u) == 0 ]] || die "needs root (network namespaces, tc)"
	command -v redis-server >/dev/null || die "needs redis-server (Debian: apt-get install redis-server)"
	command -v tc >/dev/null || die "needs tc (iproute2)"
	down
	trap 'echo "fabric.sh: up failed; taking down what it made" >&2; down' ERR
	ip netns add "$near"
	ip netns add "$far"
	ip link add "$vnear" type veth peer name "$vfar"
	ip link set "$vnear" netns "$near"
	ip link set "$vfar" netns "$far"
	ip -n "$near" addr add "$net.1/30" dev "$vnear"
	ip -n "$far" addr add "$net.2/30" dev "$vfar"
	for ns in "$near" "$far"; do ip -n "$ns" link set lo up; done
	ip -n "$near" link set "$vnear" up
	ip -n "$far" link set "$vfar" up
	ip netns exec "$near" tc qdisc replace dev "$vnear" root tbf rate "$rate" burst "$burst" latency 50ms
	ip netns exec "$far" tc qdisc replace dev "$vfar" root tbf rate "$rate" burst "$burst" latency 50ms
	mkdir -p "$state/data"
	ip netns exec "$far" redis-server --bind "$net.2" --port "$port" --save "" --appendonly no --protected-mode no \
		--daemonize yes --pidfile "$state/redis.pid" --dir "$state/data" --logfile "$state/redis.log"
	for _ in $(seq 100); do
		ip netns exec "$near" redis-cli -h "$net.2" -p "$port" ping 2>/dev/null | grep -q PONG && break
		sleep 0.1
	done
	ip netns exec "$near" redis-cli -h "$net.2" -p "$port" ping 2>/dev/null | grep -q PONG || { tail -5 "$state/redis.log" >&2; false; }
	trap - ERR
	echo "redis://$net.2:$port" >"$state/endpoint"
	echo "fabric up: $near <-> $far, $rate each way (tbf burst $burst), redis-server at redis://$net.2:$port"
	echo "run kvsim in the near namespace, e.g.:"
	echo "  ip netns exec $near kvsim calibrate --remote redis://$net.2:$port --out profile.toml"
	echo "  ip netns exec $near kvsim replay --real --profile profile.toml --scenario S.toml --set 'tier.remote.endpoint=\"redis://$net.2:$port\"' TRACE"
}

status() {
	ip netns list | grep -E "^($near|$far)( |\$)" || { echo "fabric down"; return 0; }
	ip netns exec "$near" tc qdisc show dev "$vnear" 2>/dev/null || true
	[[ -f $state/endpoint ]] && echo "endpoint $(cat "$state/endpoint")"
}

case ${1:-} in
up) shift; up "$@" ;;
down) down; echo "fabric down" ;;
status) status ;;
*) die "usage: fabric.sh up [RATE] | down | status" ;;
esac
