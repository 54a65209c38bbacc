#!/usr/bin/env bash
# The linearizability check of tests/tests/it/linearizability.rs, longer and over several seeds:
# two hosts on a three-member etcd, a host killed and restarted, an etcd member restarted, under
# concurrent clients and resuming watchers; each run prints its history size and check time.
#
#   bash scripts/linearizability.sh [SECONDS_PER_RUN] [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
seeds=${2:-5}
cargo build -p strategy-host --bin strategy-host
for seed in $(seq 1 "$seeds"); do
    LINEARIZABILITY_SEED=$seed LINEARIZABILITY_SECONDS=$seconds \
        cargo test -p strategy-host-e2e --test it -- linearizability --nocapture 2>&1 |
        grep -E '^seed|violations|test result'
done
