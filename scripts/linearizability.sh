#!/usr/bin/env bash
# The linearizability checks of tests/tests/it/linearizability.rs, longer and over several seeds:
# two hosts on a three-member etcd (a host killed and restarted, the etcd leader restarted, the
# next leader paused), and one host on the embedded store killed twice, under concurrent
# clients and resuming watchers; each run prints its history size and check time.
#
#   bash scripts/linearizability.sh [SECONDS_PER_RUN] [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
seeds=${2:-5}
cargo build -p strategy-host --bin strategy-host
log=$(mktemp -d)
for seed in $(seq 1 "$seeds"); do
    LINEARIZABILITY_SEED=$seed LINEARIZABILITY_SECONDS=$seconds \
        cargo test -p strategy-host-e2e --test it -- linearizability --nocapture \
        >"$log/seed-$seed.log" 2>&1 || echo "seed $seed FAILED: the whole output is in $log/seed-$seed.log"
    grep -E '^seed|violations|test result' "$log/seed-$seed.log"
done
