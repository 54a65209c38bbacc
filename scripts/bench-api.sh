#!/usr/bin/env bash
# The REST API under load, beside raw etcd in the same run: creates/s and p50/p99 at 16 and 64
# clients through strategy-host on etcd, next to raw etcd-client txns (storage-bench raw-txn) on
# the same etcd, and on the embedded store; cached GETs over HTTP next to raw etcd range reads;
# and mutating-call latency paced at 1,000 PATCH/s.
#
#   bash scripts/bench-api.sh [SECONDS_PER_CELL]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
cargo build --release -q -p strategy-host --bin strategy-host --bin storage-bench -p strategy-host-e2e --bin api-load
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
etcd --data-dir "$work/etcd" --listen-client-urls http://127.0.0.1:23791 \
    --advertise-client-urls http://127.0.0.1:23791 --listen-peer-urls http://127.0.0.1:23801 \
    --quota-backend-bytes 8589934592 >"$work/etcd.log" 2>&1 &
for _ in $(seq 100); do curl -sf http://127.0.0.1:23791/health >/dev/null && break; sleep 0.1; done
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18183 --etcd-servers http://127.0.0.1:23791 &
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18184 --data-dir "$work/embedded" &
for port in 18183 18184; do
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
done
load() { target/release/api-load --seconds "$seconds" "$@"; }
for c in 16 64; do
    printf 'api on etcd:      '; load --server http://127.0.0.1:18183 --mode create --concurrency "$c"
    echo "raw etcd (storage-bench, same etcd):"
    target/release/storage-bench --etcd http://127.0.0.1:23791 --backends raw-txn,raw-etcd \
        --concurrency "$c" --seconds "$seconds"
    printf 'api on embedded:  '; load --server http://127.0.0.1:18184 --mode create --concurrency "$c"
    printf 'cached get, etcd: '; load --server http://127.0.0.1:18183 --mode cached-get --concurrency "$c"
done
printf 'patch at 1000/s, etcd:     '; load --server http://127.0.0.1:18183 --mode update --concurrency 16 --rate 1000
printf 'patch at 1000/s, embedded: '; load --server http://127.0.0.1:18184 --mode update --concurrency 16 --rate 1000
