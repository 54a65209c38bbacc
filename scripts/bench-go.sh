#!/usr/bin/env bash
# The Go port of the Deployment strategy beside the Rust one, in one run: first per call
# (module size, load time, a kept instance's memory, create-phase p50/p99, the recycle policy's
# effect; `cargo bench --bench go_strategy`), then creates/s through the whole server, one
# strategy-host per language on the embedded store, api-load alternating between them.
#
#   bash scripts/bench-go.sh [SECONDS_PER_CELL] [ROUNDS]
#
# Honours CARGO_TARGET_DIR (default ./target). Needs the Go toolchain (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
rounds=${2:-2}
target=${CARGO_TARGET_DIR:-target}
cargo bench -q -p strategy-host --bench go_strategy
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
cargo build --release -q --target wasm32-unknown-unknown -p strategy-deployment
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/rust" "$work/go"
cp "$target"/wasm32-unknown-unknown/release/strategy-deployment.wasm "$work/rust/"
(cd strategies/go && PATH="$PWD/../../.tools/go/go/bin:$PATH" GOOS=wasip1 GOARCH=wasm GOPROXY=off \
    GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -buildmode=c-shared -trimpath \
    -o "$work/go/deployments-go.wasm" ./deployment)
for side in rust:18191 go:18192; do
    RUST_LOG=warn "$target"/release/strategy-host --dev-mode --listen "127.0.0.1:${side##*:}" \
        --data-dir "$work/data-${side%%:*}" --strategy-dir "$work/${side%%:*}" &
done
for port in 18191 18192; do
    for _ in $(seq 600); do
        curl -sf "http://127.0.0.1:$port/apis/apps.example.com/v1/deployments" >/dev/null && break
        sleep 0.1
    done
done
for round in $(seq "$rounds"); do
    for c in 16 64; do
        for side in rust:18191 go:18192; do
            printf '%s round=%s ' "${side%%:*}" "$round"
            "$target"/release/api-load --server "http://127.0.0.1:${side##*:}" --resource deployments \
                --mode create --concurrency "$c" --seconds "$seconds"
        done
    done
done
