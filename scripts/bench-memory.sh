#!/usr/bin/env bash
# Resident memory under list load, per allocator setting, in one run: a fresh embedded server
# is seeded with OBJECTS (default 10,000) 1 KiB ConfigMaps, then 4 clients list them all (rv=0,
# from the watch cache) for SECONDS; the figure is the server's resident memory growth over
# its JSON size, at rest after seeding and after the lists (target: <= 2.5x). Beside it, from
# the server's /metrics (jemalloc only): the bytes its objects take (heap) and the bytes the
# allocator keeps resident for them, so what the allocator retains shows apart from objects.
# Variants: the build (jemalloc, 8 MiB page cache), the embedded store's former 64 MiB page
# cache, the server built with glibc's malloc (without the default `jemalloc` feature), and
# glibc's malloc with MALLOC_ARENA_MAX=2 (fewer per-thread arenas holding freed pages).
#
#   bash scripts/bench-memory.sh [SECONDS]
#   OBJECTS=100000 NO_GLIBC=1 bash scripts/bench-memory.sh   # 100,000 objects; jemalloc rows only
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-8}
objects=${OBJECTS:-10000}
source scripts/bench-lib.sh
table="$work/memory.tsv"
printf 'variant\tJSON bytes\tRSS before -> seeded -> after lists (kB)\tgrowth/JSON seeded\tafter lists\theap before -> seeded -> allocator resident (kB)\tlists/s\n' >"$table"
port=18190
variant() {
    local name=$1 seed lists before seeded after bytes heap
    shift
    port=$((port + 1))
    # shellcheck disable=SC2086 # $extra holds flags, split on purpose
    env "$@" RUST_LOG=warn "${server_bin:-$bin/strategy-host}" --dev-mode --listen "127.0.0.1:$port" \
        --data-dir "$work/$name" ${extra:-} >>"$work/server-$name.log" 2>&1 &
    pid[$name]=$!
    server[$name]=http://127.0.0.1:$port
    for _ in $(seq 100); do curl -sf "${server[$name]}/readyz" >/dev/null && break; sleep 0.1; done
    seed=$("$bin"/api-load --server "${server[$name]}" --resource configmaps --mode seed \
        --objects "$objects" --server-pid "${pid[$name]}" | grep -m1 '^resource=')
    lists=$("$bin"/api-load --server "${server[$name]}" --resource configmaps --mode list \
        --objects "$objects" --concurrency 4 --seconds "$seconds" --server-pid "${pid[$name]}" \
        | grep -m1 '^resource=')
    echo "$name: $seed"
    echo "$name: $lists"
    before=$(field rss_before_kb "$seed")
    seeded=$(field rss_after_kb "$seed")
    after=$(field server_rss_kb "$lists")
    bytes=$(field list_bytes "$seed")
    heap="$(field heap_before_kb "$seed") -> $(field heap_kb "$seed")"
    printf '%s\t%s\t%s -> %s -> %s\t%s\t%s\t%s\t%s\n' "$name" "$bytes" "$before" "$seeded" "$after" \
        "$(awk -v a="$seeded" -v b="$before" -v j="$bytes" 'BEGIN{printf "%.2f", (a-b)*1024/j}')" \
        "$(awk -v a="$after" -v b="$before" -v j="$bytes" 'BEGIN{printf "%.2f", (a-b)*1024/j}')" \
        "$heap -> $(field allocator_resident_kb "$seed")" "$(field ops/s "$lists")" >>"$table"
    stop_server "$name"
}
variant jemalloc
extra="--embedded-cache-mib 64" variant jemalloc-page-cache-64MiB
if [ -z "${NO_GLIBC:-}" ]; then
    build_glibc
    server_bin=$glibc_bin variant glibc
    server_bin=$glibc_bin variant glibc-arena-max-2 MALLOC_ARENA_MAX=2
fi
echo
echo "Summary (api-load on a fresh embedded server per row):"
column -t -s $'\t' "$table"
