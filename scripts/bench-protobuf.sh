#!/usr/bin/env bash
# Protobuf served like JSON: the same lists and watch fan-out asked for in JSON and in
# Kubernetes protobuf, in one run, on the embedded store (both are served from the watch cache):
# full lists of 10,000 1 KiB ConfigMaps from 4 clients, pages of 500, and 1,000 watchers over
# HTTP/2 at 100 writes/s (100,000 events/s; at 200 this 2-core machine saturates and either
# side may queue for seconds). The target: protobuf within 10% of JSON.
#
#   bash scripts/bench-protobuf.sh [SECONDS_PER_CELL]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
objects=${OBJECTS:-10000}
watchers=${WATCHERS:-1000}
write_rate=${WRITE_RATE:-100}
source scripts/bench-lib.sh
start_server embedded 18184 --data-dir "$work/embedded"
table="$work/protobuf.tsv"
printf 'figure\tJSON\tprotobuf\tprotobuf/JSON\n' >"$table"
# cell FIGURE API-LOAD-ARGS...: the figure in JSON, then in protobuf.
cell() {
    local figure=$1 json proto ratio
    shift
    echo "== $figure"
    json=$("$bin"/api-load --server "${server[embedded]}" --resource configmaps "$@" | grep -m1 '^resource=')
    proto=$("$bin"/api-load --server "${server[embedded]}" --resource configmaps --protobuf "$@" | grep -m1 '^resource=')
    echo "json:     $json"
    echo "protobuf: $proto"
    if [[ $json == *delivered=* ]]; then
        ratio="p50=$(awk -v a="$(field p50_send "$proto")" -v b="$(field p50_send "$json")" \
            'BEGIN{printf "%.2f", a/b}') p99=$(awk -v a="$(field p99_send "$proto")" \
            -v b="$(field p99_send "$json")" 'BEGIN{printf "%.2f", a/b}')"
    else
        ratio="ops/s=$(awk -v a="$(field ops/s "$proto")" -v b="$(field ops/s "$json")" \
            'BEGIN{printf "%.2f", a/b}') p99=$(awk -v a="$(field p99 "$proto")" \
            -v b="$(field p99 "$json")" 'BEGIN{printf "%.2f", a/b}')"
    fi
    printf '%s\t%s\t%s\t%s\n' "$figure" "$(summary "$json")" "$(summary "$proto")" "$ratio" >>"$table"
}
cell "list $objects, 4 clients, rv=0" --mode list --objects "$objects" --concurrency 4 --seconds "$seconds"
cell "page of 500, 16 clients, rv=0" --mode list --objects "$objects" --limit 500 --concurrency 16 \
    --seconds "$seconds"
cell "watch: $watchers watchers, $write_rate writes/s" --mode watch --watchers "$watchers" \
    --rate "$write_rate" --seconds "$seconds" --objects 100 --server-pid "${pid[embedded]}"
echo
echo "Summary (api-load on the embedded store; latencies in ms):"
column -t -s $'\t' "$table"
