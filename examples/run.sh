#!/usr/bin/env bash
# Sets up the machine and runs the server on the embedded store in ./data, on 127.0.0.1:8080.
# Extra arguments go to strategy-host (see `strategy-host --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash examples/setup.sh
exec cargo run --release -p strategy-host --bin strategy-host -- "$@"
