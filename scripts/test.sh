#!/usr/bin/env bash
# Sets up the machine and runs the whole test suite: unit tests, the storage conformance suite
# against the embedded store and a real etcd, the end-to-end tests, and the Go guest SDK's and
# Go examples' own tests (`go test`, natively). The storage tests and the end-to-end etcd tests
# run a second time on etcd 3.5 (from .tools), whose ordered progress notifications take
# consistent reads down a path Debian's etcd 3.4 never takes.
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
if [ $# -eq 0 ]; then
    export ETCD_BIN="$PWD/.tools/etcd-3.5/etcd"
    cargo test -p strategy-host-storage
    cargo test -p strategy-host-e2e --test it api_etcd::
fi
