#!/usr/bin/env bash
# Creates/s of the example Deployment through the whole server, with its strategy as the wasm
# module (strategy-host --strategy-dir) and as the same code compiled in (native-host), in one
# run: both servers on the embedded store, api-load alternating between them cell by cell; each
# line ends with the server's CPU time per create over the cell.
#
#   bash scripts/bench-wasm-vs-native.sh [SECONDS_PER_CELL] [ROUNDS]
#
# Honours CARGO_TARGET_DIR (default ./target).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
rounds=${2:-2}
target=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin native-host --bin api-load
cargo build --release -q --target wasm32-unknown-unknown -p strategy-deployment
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/strategies"
cp "$target"/wasm32-unknown-unknown/release/strategy-deployment.wasm "$work/strategies/"
declare -A pid
RUST_LOG=warn "$target"/release/strategy-host --dev-mode --listen 127.0.0.1:18181 --data-dir "$work/wasm" \
    --strategy-dir "$work/strategies" &
pid[18181]=$!
RUST_LOG=warn "$target"/release/native-host --dev-mode --listen 127.0.0.1:18182 --data-dir "$work/native" &
pid[18182]=$!
# CPU time (user + system, clock ticks) the process has used.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for port in 18181 18182; do
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
done
for round in $(seq "$rounds"); do
    for c in 16 64; do
        for side in wasm:18181 native:18182; do
            port=${side##*:}
            before=$(cpu_ticks "${pid[$port]}")
            line=$("$target"/release/api-load --server "http://127.0.0.1:$port" --resource deployments \
                --mode create --concurrency "$c" --seconds "$seconds" | grep -m1 '^resource=')
            after=$(cpu_ticks "${pid[$port]}")
            ops=$(grep -o 'ops=[0-9]*' <<<"$line" | head -1 | cut -d= -f2)
            # The server's CPU per create: steadier than ops/s on a shared machine.
            cpu=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$ops" \
                'BEGIN{printf "%.0f", t / hz * 1e6 / n}')
            echo "${side%%:*} round=$round $line server_cpu_us/create=$cpu"
        done
    done
done
