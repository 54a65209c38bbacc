#!/usr/bin/env bash
# Requests through etcd leader changes (issue 30's measure): a 3-member etcd cluster on loopback,
# two release servers on it, creates at $RATE writes/s in all (half through each server, 32
# clients each) for $SECONDS_RUN s. At 5 s the etcd leader is killed (SIGKILL) and restarted at
# 10 s; at 15 s the leader then is paused (SIGSTOP) for 4 s. Prints each server's requests,
# failures, p50/p99/max latency, and the longest stretch without a completed write.
#
#   bash scripts/bench-failover.sh            # RATE=1000 SECONDS_RUN=25 FAULTS="kill pause"
#   FAULTS=pause bash scripts/bench-failover.sh   # only the pause (at 15 s)
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${RATE:-1000}
seconds=${SECONDS_RUN:-25}
faults=${FAULTS:-kill pause}
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
trap 'kill -CONT ${etcd_pid[*]} 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
cluster=m0=http://127.0.0.1:24200,m1=http://127.0.0.1:24201,m2=http://127.0.0.1:24202
declare -a etcd_pid
member() {
    local i=$1
    etcd --name "m$i" --data-dir "$work/m$i" \
        --listen-client-urls "http://127.0.0.1:$((24100 + i))" \
        --advertise-client-urls "http://127.0.0.1:$((24100 + i))" \
        --listen-peer-urls "http://127.0.0.1:$((24200 + i))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((24200 + i))" \
        --initial-cluster "$cluster" --initial-cluster-state new \
        --initial-cluster-token bench-failover >>"$work/etcd-$i.log" 2>&1 &
    etcd_pid[$i]=$!
}
for i in 0 1 2; do member "$i"; done
# leader: the index of the member that says it leads.
leader() {
    local i status
    for _ in $(seq 100); do
        for i in 0 1 2; do
            status=$(curl -s -m 1 -X POST "http://127.0.0.1:$((24100 + i))/v3/maintenance/status" -d '{}') || continue
            if [ -n "$status" ] && [ "$(jq -r '.header.member_id' <<<"$status")" = "$(jq -r '.leader' <<<"$status")" ]; then
                echo "$i"
                return
            fi
        done
        sleep 0.1
    done
    echo "no etcd leader" >&2
    return 1
}
leader >/dev/null
servers=http://127.0.0.1:24100,http://127.0.0.1:24101,http://127.0.0.1:24102
for h in 0 1; do
    RUST_LOG=warn "$bin"/strategy-host --dev-mode --listen "127.0.0.1:$((18700 + h))" \
        --etcd-servers "$servers" >"$work/host-$h.log" 2>&1 &
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$((18700 + h))/readyz" >/dev/null && break; sleep 0.1; done
done
for h in 0 1; do
    "$bin"/api-load --server "http://127.0.0.1:$((18700 + h))" --resource configmaps --mode create \
        --concurrency 32 --rate "$((rate / 2))" --seconds "$seconds" >"$work/load-$h" 2>&1 &
    load_pid[$h]=$!
done
sleep 5
if [[ $faults == *kill* ]]; then
    killed=$(leader)
    echo "$(date +%T) killing the etcd leader m$killed"
    kill -9 "${etcd_pid[$killed]}"
    sleep 5
    echo "$(date +%T) restarting m$killed"
    member "$killed"
    sleep 5
else
    sleep 10
fi
if [[ $faults == *pause* ]]; then
    paused=$(leader)
    echo "$(date +%T) pausing the etcd leader m$paused for 4 s"
    kill -STOP "${etcd_pid[$paused]}"
    sleep 4
    kill -CONT "${etcd_pid[$paused]}"
    echo "$(date +%T) resumed m$paused"
fi
for h in 0 1; do wait "${load_pid[$h]}" || true; done
echo
for h in 0 1; do
    echo "host $h: $(grep -m1 '^resource=' "$work/load-$h")"
done
