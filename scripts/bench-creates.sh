#!/usr/bin/env bash
# ConfigMap creates through the API on etcd at 16 and 64 clients, over HTTP/1.1 and HTTP/2, each
# beside raw etcd-client create-if-absent transactions on the same etcd from the same api-load
# invocation, with each process's CPU per create (server, etcd, the load tool).
#
#   bash scripts/bench-creates.sh [SECONDS_PER_CELL]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
source scripts/bench-lib.sh
start_server etcd 18183 --etcd-servers "$etcd_url"
for c in 16 64; do
    for http in "HTTP/1.1" "HTTP/2"; do
        h2=()
        [ "$http" = "HTTP/2" ] && h2=(--http2)
        run "creates, $c clients, $http" etcd --mode create --concurrency "$c" \
            --seconds "$seconds" --baseline-etcd "$etcd_url" "${h2[@]}"
    done
done
print_summary "Summary (api-load; latencies in ms; raw etcd: create-if-absent txn):"
