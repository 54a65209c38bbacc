#!/usr/bin/env bash
# Read-path figures of the REST API, each beside raw etcd doing the same in the same api-load
# invocation, on etcd and on the embedded store: lists of 10,000 1 KiB ConfigMaps from 4
# clients (resourceVersion=0 and consistent) beside etcd ranges; cached GETs and creates at 16
# and 64 clients (over HTTP/1.1 and HTTP/2) beside linearizable gets and create-if-absent txns; 10,000 watchers at 1,000
# writes/s (delivery latency, server memory per idle watcher) beside etcd watches; and the
# embedded server's resident memory after 100,000 1 KiB objects beside their JSON size.
# Ends with one summary table.
#
#   bash scripts/bench-reads.sh [SECONDS_PER_CELL]
#
# Smaller runs (a smoke test): OBJECTS=500 WATCHERS=200 WRITE_RATE=100 WATCH_SECONDS=2
# MEMORY_OBJECTS=2000 CLIENTS="16" bash scripts/bench-reads.sh 2
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
objects=${OBJECTS:-10000}
watchers=${WATCHERS:-10000}
write_rate=${WRITE_RATE:-1000}
watch_seconds=${WATCH_SECONDS:-5}
memory_objects=${MEMORY_OBJECTS:-100000}
clients=${CLIENTS:-16 64}
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
etcd_url=http://127.0.0.1:23791
etcd --data-dir "$work/etcd" --listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
    --listen-peer-urls http://127.0.0.1:23801 --quota-backend-bytes 8589934592 >"$work/etcd.log" 2>&1 &
for _ in $(seq 100); do curl -sf "$etcd_url/health" >/dev/null && break; sleep 0.1; done
declare -A server pid
# start_server NAME PORT STORE-ARGS...: a development-mode server (logging to a file: its banner
# would break up the figures), waited for until ready.
start_server() {
    local name=$1 port=$2
    shift 2
    RUST_LOG=warn "$bin"/strategy-host --dev-mode --listen "127.0.0.1:$port" "$@" \
        >>"$work/server-$name.log" 2>&1 &
    pid[$name]=$!
    server[$name]=http://127.0.0.1:$port
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
}
stop_server() { kill "${pid[$1]}"; wait "${pid[$1]}" 2>/dev/null || true; }
start_server etcd 18183 --etcd-servers "$etcd_url"
start_server embedded 18184 --data-dir "$work/embedded"

results="$work/results.tsv"
printf 'figure\tstore\tapi\traw etcd\tapi/etcd\n' >"$results"
# The value of field $1 in line $2 (api-load prints key=value fields).
field() { grep -o "$1=[^ ]*" <<<"$2" | head -1 | cut -d= -f2; }
# A short summary of one api-load line for the table.
summary() {
    local line=$1
    if [ -z "$line" ]; then echo "-"
    elif [[ $line == *delivered=* ]]; then
        local s
        s="$(field delivered "$line")/$(field expected "$line") events, p50 $(field p50_send "$line") p99 $(field p99_send "$line") from send"
        [[ $line == *bytes/watcher=* ]] && s+=", $(field bytes/watcher "$line") B/idle watcher"
        [[ $line == *rss_end_kb=* ]] && s+=", RSS $(field rss_after_kb "$line")->$(field rss_end_kb "$line") kB over the writes"
        echo "$s"
    elif [[ $line == *mode=seed* ]]; then
        echo "$(field objects "$line") objects, $(field list_bytes "$line") B JSON, RSS $(field rss_before_kb "$line")->$(field rss_after_kb "$line") kB, growth/JSON $(field growth_over_json "$line")"
    else
        local s
        s="$(field ops/s "$line")/s p50 $(field p50 "$line") p99 $(field p99 "$line")"
        [[ $line == *bytes/op=* ]] && s+=", $(field bytes/op "$line") B"
        echo "$s"
    fi
}
# run FIGURE STORE API-LOAD-ARGS...: prints api-load's output and adds a row to the table.
run() {
    local figure=$1 store=$2 out
    shift 2
    echo "== $figure on $store"
    if ! out=$("$bin"/api-load --server "${server[$store]}" --resource configmaps "$@" 2>&1); then
        echo "$out"
        printf '%s\t%s\tFAILED\t-\t-\n' "$figure" "$store" >>"$results"
        return 0
    fi
    echo "$out"
    local ratio
    ratio=$(grep -m1 '^ratio' <<<"$out" || true)
    printf '%s\t%s\t%s\t%s\t%s\n' "$figure" "$store" \
        "$(summary "$(grep -m1 '^resource=' <<<"$out" || true)")" \
        "$(summary "$(grep -m1 '^etcd ' <<<"$out" || true)")" "${ratio#ratio api/etcd: }" >>"$results"
}

for store in etcd embedded; do
    run "list $objects, 4 clients, rv=0" $store --mode list --objects "$objects" --concurrency 4 \
        --seconds "$seconds" --baseline-etcd "$etcd_url"
    run "list $objects, 4 clients, consistent" $store --mode list --objects "$objects" --consistent \
        --concurrency 4 --seconds "$seconds" --baseline-etcd "$etcd_url"
done
# Single-object figures from HTTP/1.1 clients (a thread and a connection each) and from
# HTTP/2 clients (tasks over one connection, as client-go talks and the gRPC baseline does).
for mode in cached-get create; do
    for c in $clients; do
        for store in etcd embedded; do
            run "$mode, $c clients, HTTP/1.1" $store --mode $mode --concurrency "$c" \
                --seconds "$seconds" --baseline-etcd "$etcd_url"
            run "$mode, $c clients, HTTP/2" $store --mode $mode --http2 --concurrency "$c" \
                --seconds "$seconds" --baseline-etcd "$etcd_url"
        done
    done
done
# The fan-out on fresh servers, so idle watchers' memory is not hidden in what earlier figures
# left allocated. One etcd fan-out baseline is enough: it is the same etcd for both stores.
stop_server etcd
stop_server embedded
start_server etcd 18183 --etcd-servers "$etcd_url"
start_server embedded 18184 --data-dir "$work/embedded-watch"
for store in etcd embedded; do
    baseline=()
    [ $store = etcd ] && baseline=(--baseline-etcd "$etcd_url")
    run "watch: $watchers watchers, $write_rate writes/s" $store --mode watch --watchers "$watchers" \
        --rate "$write_rate" --seconds "$watch_seconds" --server-pid "${pid[$store]}" "${baseline[@]}"
done
stop_server etcd
stop_server embedded
# Memory on a fresh embedded server, so nothing but the seeded objects is held.
start_server memory 18185 --data-dir "$work/memory"
run "memory: $memory_objects objects" memory --mode seed --objects "$memory_objects" \
    --server-pid "${pid[memory]}"
echo
echo "Summary (api-load; latencies in ms; memory figure on a fresh embedded server):"
column -t -s $'\t' "$results"
