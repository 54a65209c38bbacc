#!/usr/bin/env bash
# Garbage collection, each figure beside its baseline in the same run: the time from an owner's
# (background) delete to its last dependent gone for 1, 100 and 10,000 dependents on the
# embedded store and on etcd, beside the same 16 clients deleting the owner and its dependents
# themselves; then 10,000 owners with 10 children each at rest: the server's CPU over an idle
# window and its resident memory with the collector on, beside a server with it off.
#
#   bash scripts/bench-gc.sh [IDLE_SECONDS]
#
# A smoke test: COUNTS="1 100" OWNERS=100 bash scripts/bench-gc.sh 2 (OWNERS=0: cascades only)
set -euo pipefail
cd "$(dirname "$0")/.."
idle=${1:-20}
counts=${COUNTS:-1 100 10000}
owners=${OWNERS:-10000}
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
start_server embedded 18191 --data-dir "$work/embedded"
start_server etcd 18192 --etcd-servers "$etcd_url"
for n in $counts; do
    for store in embedded etcd; do
        run "cascade of $n dependents (collected / client deletes)" "$store" --mode cascade \
            --objects "$n" --concurrency 16
    done
done
stop_server embedded
stop_server etcd
if [ "$owners" -gt 0 ]; then
start_server gc-on 18193 --data-dir "$work/gc-on"
start_server gc-off 18194 --data-dir "$work/gc-off" --controllers='*,-garbagecollector'
for s in gc-on gc-off; do
    run "$owners owners x 10 children at rest, $s" "$s" --mode owners --objects "$owners" \
        --children 10 --concurrency 16 --seconds "$idle" --server-pid "${pid[$s]}"
done
fi
print_summary "Summary (api-load; cascade times in seconds):"
