#!/usr/bin/env bash
# Live create latency with a module version in shadow vs without, in one run: one server
# (embedded store) serving the example Deployment from its wasm module; api-load creates at a
# fixed rate, alternating cell by cell between no staged version and a staged candidate in
# Shadow (the same module with a custom section appended, so another digest running the same
# code on every request after the live call).
#
#   bash scripts/bench-shadow.sh [SECONDS_PER_CELL] [ROUNDS] [RATE]
#
# Honours CARGO_TARGET_DIR (default ./target).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
rounds=${2:-3}
rate=${3:-400}
target=${CARGO_TARGET_DIR:-target}
port=18191
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
cargo build --release -q --target wasm32-unknown-unknown -p strategy-deployment
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/strategies"
module="$target"/wasm32-unknown-unknown/release/strategy-deployment.wasm
cp "$module" "$work/in-force.wasm"
cp "$module" "$work/candidate.wasm"
# A custom section (id 0, 2 bytes: name length 1, "x"): same code, another digest.
printf '\x00\x02\x01x' >>"$work/candidate.wasm"
install() { cp "$1" "$work/.tmp.wasm" && mv "$work/.tmp.wasm" "$work/strategies/deployments.wasm"; }
install "$work/in-force.wasm"
RUST_LOG=warn "$target"/release/strategy-host --dev-mode --listen 127.0.0.1:$port \
    --data-dir "$work/data" --strategy-dir "$work/strategies" &
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
# From now on a new deployments.wasm is staged in shadow, not swapped in.
echo '{"mode": "Shadow"}' >"$work/strategies/deployments.rollout.json"
staged() { curl -sf "http://127.0.0.1:$port/debug/strategies" | grep -q '"state":"Shadowing"'; }
wait_for() { for _ in $(seq 200); do if eval "$1"; then return; fi; sleep 0.05; done; echo "timed out: $1" >&2; exit 1; }
for round in $(seq "$rounds"); do
    for side in without shadow; do
        if [ "$side" = shadow ]; then install "$work/candidate.wasm"; wait_for staged
        else install "$work/in-force.wasm"; wait_for '! staged'; fi
        printf '%-8s round=%s ' "$side" "$round"
        "$target"/release/api-load --server "http://127.0.0.1:$port" --resource deployments \
            --mode create --concurrency 16 --rate "$rate" --seconds "$seconds"
    done
done
echo "candidate report after the last shadow cell:"
curl -sf "http://127.0.0.1:$port/debug/strategies" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["sources"]:
    r = s.get("rollout")
    if r: print(json.dumps({"requests": r["requests"]["evaluated"], "skipped": r["requests"]["skipped"], "differences": r["requests"]["differences"], "latency": r["latency"]}))'
