#!/usr/bin/env bash
# Consistent reads on etcd (no resourceVersion: what `kubectl get` and client-go's Get send),
# each beside raw etcd doing the same in the same api-load invocation: GETs of one object at 16
# and 64 clients (HTTP/1.1 and HTTP/2) beside linearizable etcd gets, and consistent pages
# (limit=500) beside etcd ranges of 500 keys, first with 1,000 1 KiB ConfigMaps stored, then
# with 100,000 — the ratio must not fall as the resource grows. Ends with one summary table.
#
#   bash scripts/bench-consistent-reads.sh [SECONDS_PER_CELL]
#
# A smoke test: SIZES="200 2000" CLIENTS=16 bash scripts/bench-consistent-reads.sh 2
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
sizes=${SIZES:-1000 100000}
clients=${CLIENTS:-16 64}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
start_server etcd 18183 --etcd-servers "$etcd_url"
for objects in $sizes; do
    for c in $clients; do
        run "consistent get, $objects stored, $c clients, HTTP/1.1" etcd --mode get \
            --objects "$objects" --concurrency "$c" --seconds "$seconds" --baseline-etcd "$etcd_url"
        run "consistent get, $objects stored, $c clients, HTTP/2" etcd --mode get --http2 \
            --objects "$objects" --concurrency "$c" --seconds "$seconds" --baseline-etcd "$etcd_url"
    done
    run "consistent page of 500, $objects stored, 4 clients" etcd --mode list --consistent \
        --limit 500 --objects "$objects" --concurrency 4 --seconds "$seconds" \
        --baseline-etcd "$etcd_url"
done
print_summary "Summary (api-load on etcd; latencies in ms):"
