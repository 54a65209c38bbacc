#!/usr/bin/env bash
# Sets up the machine and runs the whole test suite: unit tests, the storage conformance suite
# against the embedded store and a real etcd, the end-to-end tests, and the Go guest SDK's and
# Go examples' own tests (`go test`, natively).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
(
    export PATH="$PWD/.tools/go/go/bin:$PATH" GOPROXY=off GOTOOLCHAIN=local GOFLAGS=-mod=mod
    for module in guest-sdk/go strategies/go; do
        (cd "$module" && go vet ./... && go test ./...)
    done
)
cargo test --workspace "$@"
