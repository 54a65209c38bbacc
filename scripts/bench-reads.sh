#!/usr/bin/env bash
# Read-path figures of the REST API, each beside raw etcd doing the same in the same api-load
# invocation, on etcd and on the embedded store: lists of 10,000 1 KiB ConfigMaps from 4
# clients (resourceVersion=0 and consistent) beside etcd ranges; cached GETs and creates at 16
# and 64 clients (over HTTP/1.1 and HTTP/2) beside linearizable gets and create-if-absent txns; 10,000 watchers at 1,000
# writes/s (delivery latency, server memory per idle watcher) beside etcd watches; and the
# embedded server's resident memory after 100,000 1 KiB objects beside their JSON size.
# Ends with one summary table.
#
#   bash scripts/bench-reads.sh [SECONDS_PER_CELL]
#
# Smaller runs (a smoke test): OBJECTS=500 WATCHERS=200 WRITE_RATE=100 WATCH_SECONDS=2
# MEMORY_OBJECTS=2000 CLIENTS="16" bash scripts/bench-reads.sh 2
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
objects=${OBJECTS:-10000}
watchers=${WATCHERS:-10000}
write_rate=${WRITE_RATE:-1000}
watch_seconds=${WATCH_SECONDS:-5}
memory_objects=${MEMORY_OBJECTS:-100000}
clients=${CLIENTS:-16 64}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
start_server etcd 18183 --etcd-servers "$etcd_url"
start_server embedded 18184 --data-dir "$work/embedded"

for store in etcd embedded; do
    run "list $objects, 4 clients, rv=0" $store --mode list --objects "$objects" --concurrency 4 \
        --seconds "$seconds" --baseline-etcd "$etcd_url"
    run "list $objects, 4 clients, consistent" $store --mode list --objects "$objects" --consistent \
        --concurrency 4 --seconds "$seconds" --baseline-etcd "$etcd_url"
done
# Single-object figures from HTTP/1.1 clients (a thread and a connection each) and from
# HTTP/2 clients (tasks over one connection, as client-go talks and the gRPC baseline does).
for mode in cached-get create; do
    for c in $clients; do
        for store in etcd embedded; do
            run "$mode, $c clients, HTTP/1.1" $store --mode $mode --concurrency "$c" \
                --seconds "$seconds" --baseline-etcd "$etcd_url"
            run "$mode, $c clients, HTTP/2" $store --mode $mode --http2 --concurrency "$c" \
                --seconds "$seconds" --baseline-etcd "$etcd_url"
        done
    done
done
# The fan-out on fresh servers, so idle watchers' memory is not hidden in what earlier figures
# left allocated. One etcd fan-out baseline is enough: it is the same etcd for both stores.
stop_server etcd
stop_server embedded
start_server etcd 18183 --etcd-servers "$etcd_url"
start_server embedded 18184 --data-dir "$work/embedded-watch"
for store in etcd embedded; do
    baseline=()
    [ $store = etcd ] && baseline=(--baseline-etcd "$etcd_url")
    run "watch: $watchers watchers, $write_rate writes/s" $store --mode watch --watchers "$watchers" \
        --rate "$write_rate" --seconds "$watch_seconds" --server-pid "${pid[$store]}" "${baseline[@]}"
done
stop_server etcd
stop_server embedded
# Memory on a fresh embedded server, so nothing but the seeded objects is held.
start_server memory 18185 --data-dir "$work/memory"
run "memory: $memory_objects objects" memory --mode seed --objects "$memory_objects" \
    --server-pid "${pid[memory]}"
print_summary "Summary (api-load; latencies in ms; memory figure on a fresh embedded server):"
