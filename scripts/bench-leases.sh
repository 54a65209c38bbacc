#!/usr/bin/env bash
# Leader-election Lease renewals through the API (each client GETs its own Lease and PUTs it back
# with a new renewTime, as client-go's leaderelection does) on etcd and on the embedded store,
# beside raw etcd-client doing what client-go's renewal costs etcd (a range, then an update
# transaction comparing the key's mod revision) on the same etcd, in the same invocation.
# Controllers renew every 2 s, so renewals/s x 2 is how many controllers one host keeps leading.
#
#   bash scripts/bench-leases.sh [SECONDS_PER_CELL]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
source scripts/bench-lib.sh
kind=leases
start_server etcd 18183 --etcd-servers "$etcd_url"
start_server embedded 18184 --data-dir "$work/embedded"
for c in 16 64; do
    for http in "HTTP/1.1" "HTTP/2"; do
        h2=()
        [ "$http" = "HTTP/2" ] && h2=(--http2)
        run "lease renewals, $c clients, $http" etcd --mode renew \
            --concurrency "$c" --seconds "$seconds" --baseline-etcd "$etcd_url" "${h2[@]}"
        run "lease renewals, $c clients, $http" embedded --mode renew \
            --concurrency "$c" --seconds "$seconds" "${h2[@]}"
    done
done
print_summary "Summary (api-load; latencies in ms; raw etcd: range + compare-revision update txn):"
