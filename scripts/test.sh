#!/usr/bin/env bash
# Sets up the machine and runs the whole test suite: unit tests, the storage conformance suite
# against the embedded store and a real etcd, and the end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace "$@"
