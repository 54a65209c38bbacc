#!/usr/bin/env bash
# Leader-election Lease renewals through the API (each client GETs its own Lease and PUTs it back
# with a new renewTime, as client-go's leaderelection does) on etcd and on the embedded store, beside
# raw etcd-client write transactions on the same etcd, in the same run. Controllers renew every
# 2 s, so renewals/s x 2 is how many controllers one host keeps leading.
#
#   bash scripts/bench-leases.sh [SECONDS_PER_CELL]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
cargo build --release -q -p strategy-host --bin strategy-host --bin storage-bench -p strategy-host-e2e --bin api-load
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
etcd --data-dir "$work/etcd" --listen-client-urls http://127.0.0.1:23791 \
    --advertise-client-urls http://127.0.0.1:23791 --listen-peer-urls http://127.0.0.1:23801 \
    >"$work/etcd.log" 2>&1 &
for _ in $(seq 100); do curl -sf http://127.0.0.1:23791/health >/dev/null && break; sleep 0.1; done
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18183 --etcd-servers http://127.0.0.1:23791 &
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18184 --data-dir "$work/embedded" &
for port in 18183 18184; do
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
done
load() { target/release/api-load --seconds "$seconds" --resource leases --mode renew "$@"; }
for c in 16 64; do
    printf 'lease renewals, api on etcd:      '; load --server http://127.0.0.1:18183 --concurrency "$c"
    echo "raw etcd write txns (storage-bench, same etcd):"
    target/release/storage-bench --etcd http://127.0.0.1:23791 --backends raw-txn \
        --concurrency "$c" --seconds "$seconds"
    printf 'lease renewals, api on embedded:  '; load --server http://127.0.0.1:18184 --concurrency "$c"
done
