#!/usr/bin/env bash
# Sets up the machine, builds the example strategies to wasm (the Rust ones, and the Go Tenant
# strategy), and runs the server on the embedded
# store in ./data, on 127.0.0.1:8080, with those strategies loaded from target/example-strategies
# (hot-reloaded: copy a new .wasm there and it is swapped in). Extra arguments go to strategy-host
# (see `strategy-host --help`). The server listens on https://127.0.0.1:8080 and writes an admin
# kubeconfig to data/admin.kubeconfig (export KUBECONFIG=$PWD/data/admin.kubeconfig); pass
# --dev-mode for plain HTTP with no authentication (loopback only).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --target wasm32-unknown-unknown \
    -p strategy-deployment -p strategy-configmap -p strategy-project -p strategy-owner-label \
    -p strategy-machinedeployment-conversion -p strategy-protect-production
# Cargo's output directory (CARGO_TARGET_DIR when set).
target=${CARGO_TARGET_DIR:-target}
mkdir -p "$target/example-strategies"
for s in deployment configmap project; do
    # Write then rename, so the directory watcher never sees a half-written module.
    cp "$target/wasm32-unknown-unknown/release/strategy-${s}.wasm" "$target/example-strategies/.${s}.tmp"
    mv "$target/example-strategies/.${s}.tmp" "$target/example-strategies/strategy_${s}.wasm"
done
# The Go example with After hooks (Tenant), built with the Go toolchain setup.sh installed.
out=$(cd "$target/example-strategies" && pwd)
(cd strategies/go && PATH="$PWD/../../.tools/go/go/bin:$PATH" GOOS=wasip1 GOARCH=wasm GOPROXY=off \
    GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -buildmode=c-shared -trimpath \
    -o "$out/.tenants-go.tmp" ./tenant)
mv "$target/example-strategies/.tenants-go.tmp" "$target/example-strategies/tenants_go.wasm"
exec cargo run --release -p strategy-host --bin strategy-host -- \
    --strategy-dir "$target/example-strategies" "$@"
