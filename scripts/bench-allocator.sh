#!/usr/bin/env bash
# The server's allocator, jemalloc (the default build) against glibc's malloc (built without the
# default `jemalloc` feature), on what spends the most allocations per request: Lease renewals (GET + PUT, as
# client-go's leaderelection) and ConfigMap creates on etcd, each beside raw etcd doing the same
# (api-load --baseline-etcd), the two servers alternating cell by cell on one private etcd.
# Memory per allocator: bench-memory.sh.
#
#   bash scripts/bench-allocator.sh [SECONDS_PER_CELL] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-8}
rounds=${2:-2}
source scripts/bench-lib.sh
build_glibc
server_bin=$glibc_bin start_server glibc 18185 --etcd-servers "$etcd_url"
start_server jemalloc 18186 --etcd-servers "$etcd_url"
for round in $(seq "$rounds"); do
    for c in 16 64; do
        for allocator in glibc jemalloc; do
            kind=leases run "lease renewals, $c clients, round $round" "$allocator" --mode renew \
                --concurrency "$c" --seconds "$seconds" --baseline-etcd "$etcd_url"
        done
    done
    for allocator in glibc jemalloc; do
        run "creates, 16 clients, round $round" "$allocator" --mode create --concurrency 16 \
            --seconds "$seconds" --baseline-etcd "$etcd_url"
    done
done
print_summary "Summary (api-load; latencies in ms; 'store' is the server's allocator, both on one etcd):"
