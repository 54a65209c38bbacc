#!/usr/bin/env bash
# Server-side apply of a 1 KiB ConfigMap (the whole configuration, one field changed) beside a
# JSON merge patch of the same change, through the API on the embedded store, in the same run
# (alternated twice, since the machine is shared).
#
#   bash scripts/bench-apply.sh [SECONDS_PER_CELL] [CLIENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
clients=${2:-16}
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18185 --data-dir "$work/embedded" &
for _ in $(seq 100); do curl -sf "http://127.0.0.1:18185/readyz" >/dev/null && break; sleep 0.1; done
load() { target/release/api-load --server http://127.0.0.1:18185 --resource configmaps --seconds "$seconds" --concurrency "$clients" "$@"; }
for round in 1 2; do
    printf 'round %s merge patch:  ' "$round"; load --mode update
    printf 'round %s apply:        ' "$round"; load --mode apply
done
