#!/usr/bin/env bash
# Large stores: 1,000,000 1 KiB ConfigMaps on the embedded store and 200,000 on etcd (Debian's
# etcd, on loopback). For each: seeding rate and resident memory after it; then a restart, timed
# from start to /readyz and to the watch cache's warm-up (the first watch served: a watch waits
# for the cache's initial list, and reads meanwhile go to the store), with resident memory after
# that warm-up and after two full lists; then kubectl's paginated list (consistent pages of
# limit=500, 4 clients) and
# consistent GETs (16 clients), with their p99. Takes about 15 minutes on 2 cores.
#
#   bash scripts/bench-large-store.sh [SECONDS_PER_CELL]
#   EMBEDDED_OBJECTS=100000 ETCD_OBJECTS=20000 bash scripts/bench-large-store.sh 5   # smaller
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
embedded_objects=${EMBEDDED_OBJECTS:-1000000}
etcd_objects=${ETCD_OBJECTS:-200000}
source scripts/bench-lib.sh
table="$work/large.tsv"
printf 'store\tobjects\tJSON MB\tseed/s\tRSS seeded MB\tready s\tcache warm s\tRSS warm MB\tRSS after 2 lists MB\tpage 500 p99\tconsistent GET p99\n' >"$table"
ms() { date +%s%3N; }
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }
# large NAME PORT OBJECTS STORE-ARGS...
large() {
    local name=$1 port=$2 objects=$3 seed began ready warm url pages gets
    shift 3
    start_server "$name" "$port" "$@"
    url=${server[$name]}/api/v1/namespaces/default/configmaps
    seed=$("$bin"/api-load --server "${server[$name]}" --resource configmaps --mode seed \
        --objects "$objects" --server-pid "${pid[$name]}" | grep -m1 '^resource=')
    echo "$name: $seed"
    local seeded_mb json_mb seed_rate
    seeded_mb=$(rss_mb "${pid[$name]}")
    json_mb=$(awk -v b="$(field list_bytes "$seed")" 'BEGIN{printf "%.0f", b/1048576}')
    seed_rate=$(awk -v n="$objects" -v s="$(field seed_s "$seed")" 'BEGIN{printf "%.0f", n/(s>0?s:1)}')
    stop_server "$name"
    began=$(ms)
    RUST_LOG=warn "$bin"/strategy-host --dev-mode --listen "127.0.0.1:$port" "$@" \
        >>"$work/server-$name.log" 2>&1 &
    pid[$name]=$!
    until curl -sf "${server[$name]}/readyz" >/dev/null; do sleep 0.05; done
    ready=$(ms)
    # A watch is served only from a ready cache (it waits up to 3 s for one, then fails).
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "$url?watch=1&timeoutSeconds=0")" = 200 ]; do
        sleep 0.05
    done
    warm=$(ms)
    local warm_mb lists_mb
    warm_mb=$(rss_mb "${pid[$name]}")
    for _ in 1 2; do curl -sf -o /dev/null "$url?resourceVersion=0"; done
    lists_mb=$(rss_mb "${pid[$name]}")
    pages=$("$bin"/api-load --server "${server[$name]}" --resource configmaps --mode list \
        --objects "$objects" --consistent --limit 500 --concurrency 4 --seconds "$seconds" \
        | grep -m1 '^resource=')
    gets=$("$bin"/api-load --server "${server[$name]}" --resource configmaps --mode get \
        --objects "$objects" --concurrency 16 --seconds "$seconds" | grep -m1 '^resource=')
    echo "$name pages: $pages"
    echo "$name gets:  $gets"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$objects" "$json_mb" \
        "$seed_rate" "$seeded_mb" \
        "$(awk -v a="$ready" -v b="$began" 'BEGIN{printf "%.2f", (a-b)/1000}')" \
        "$(awk -v a="$warm" -v b="$began" 'BEGIN{printf "%.2f", (a-b)/1000}')" \
        "$warm_mb" "$lists_mb" "$(field ops/s "$pages")/s p99 $(field p99 "$pages")" \
        "$(field ops/s "$gets")/s p99 $(field p99 "$gets")" >>"$table"
    stop_server "$name"
}
large embedded 18186 "$embedded_objects" --data-dir "$work/embedded"
large etcd 18187 "$etcd_objects" --etcd-servers "$etcd_url"
echo
echo "Summary (api-load and curl against release servers in development mode; 1 KiB ConfigMaps):"
column -t -s $'\t' "$table"
