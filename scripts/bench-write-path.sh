#!/usr/bin/env bash
# The write path of two builds side by side: ConfigMap creates and Lease renewals on one etcd,
# a server of each build (each under its own etcd prefix) taking turns cell by cell, each cell
# beside raw etcd from the same api-load invocation, with each process's CPU per operation.
# BEFORE is a strategy-host binary built from an earlier commit (copy target/release/strategy-host
# aside before the change); the other server is this tree's release build.
#
#   bash scripts/bench-write-path.sh BEFORE [SECONDS_PER_CELL] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(realpath "${1:?usage: bench-write-path.sh BEFORE-BINARY [SECONDS] [ROUNDS]}")
seconds=${2:-8}
rounds=${3:-2}
source scripts/bench-lib.sh
server_bin=$before start_server before 18187 --etcd-servers "$etcd_url" --etcd-prefix /before
start_server after 18188 --etcd-servers "$etcd_url" --etcd-prefix /after
for round in $(seq "$rounds"); do
    for c in 16 64; do
        for build in before after; do
            run "creates, $c clients, HTTP/1.1, round $round" "$build" --mode create \
                --concurrency "$c" --seconds "$seconds" --baseline-etcd "$etcd_url"
        done
    done
    for build in before after; do
        kind=leases run "lease renewals, 16 clients, HTTP/2, round $round" "$build" --mode renew \
            --concurrency 16 --seconds "$seconds" --baseline-etcd "$etcd_url" --http2
    done
done
print_summary "Summary (api-load; latencies in ms; 'store' is the build, both servers on one etcd):"
