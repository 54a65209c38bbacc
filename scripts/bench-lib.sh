# Shared by the API benchmark scripts (sourced, never run): builds the release server and
# api-load, starts a private etcd on loopback, starts and stops development-mode servers, and
# collects each api-load figure beside its raw etcd baseline into one summary table.
#
# After sourcing: start_server NAME PORT STORE-ARGS... (the binary $server_bin when set),
# stop_server NAME, build_glibc (sets $glibc_bin: the server with glibc's malloc),
# run FIGURE SERVER-NAME API-LOAD-ARGS... (on ConfigMaps, or $kind when set), print_summary TITLE; $bin, $work, $etcd_url, $etcd_pid, ${pid[NAME]}.
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
etcd_url=http://127.0.0.1:23791
etcd --data-dir "$work/etcd" --listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
    --listen-peer-urls http://127.0.0.1:23801 --quota-backend-bytes 8589934592 >"$work/etcd.log" 2>&1 &
etcd_pid=$!
for _ in $(seq 100); do curl -sf "$etcd_url/health" >/dev/null && break; sleep 0.1; done
declare -A server pid
# start_server NAME PORT STORE-ARGS...: a development-mode server (logging to a file: its banner
# would break up the figures), waited for until ready.
start_server() {
    local name=$1 port=$2
    shift 2
    RUST_LOG=warn "${server_bin:-$bin/strategy-host}" --dev-mode --listen "127.0.0.1:$port" "$@" \
        >>"$work/server-$name.log" 2>&1 &
    pid[$name]=$!
    server[$name]=http://127.0.0.1:$port
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
}
stop_server() { kill "${pid[$1]}"; wait "${pid[$1]}" 2>/dev/null || true; }
# build_glibc: the server built without its default `jemalloc` feature (glibc's malloc), copied
# to $glibc_bin; the default build is put back in place (cargo keeps both, so switching costs
# nothing the second time).
build_glibc() {
    cargo build --release -q -p strategy-host --bin strategy-host --no-default-features
    glibc_bin=$work/strategy-host-glibc
    cp "$bin/strategy-host" "$glibc_bin"
    cargo build --release -q -p strategy-host --bin strategy-host
}
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
    elif [[ $line == *mode=cascade* ]]; then
        echo "collected in $(field collected_s "$line") s, client deletes $(field client_deleted_s "$line") s, ratio $(field collected/client "$line")"
    elif [[ $line == *mode=owners* ]]; then
        echo "idle CPU $(field idle_cpu_percent "$line")%, RSS $(field rss_kb "$line") kB"
    elif [[ $line == *mode=seed* ]]; then
        echo "$(field objects "$line") objects, $(field list_bytes "$line") B JSON, RSS $(field rss_before_kb "$line")->$(field rss_after_kb "$line") kB, growth/JSON $(field growth_over_json "$line")"
    else
        local s
        s="$(field ops/s "$line")/s p50 $(field p50 "$line") p99 $(field p99 "$line")"
        [ "$(field errors "$line")" != 0 ] && s+=", $(field errors "$line") errors"
        [[ $line == *bytes/op=* ]] && s+=", $(field bytes/op "$line") B"
        [[ $line == *cpu_us/op=* ]] && s+=", CPU µs/op $(field cpu_us/op "$line")"
        echo "$s"
    fi
}
# run FIGURE STORE API-LOAD-ARGS...: prints api-load's output and adds a row to the table (with
# the CPU each of the server, etcd and api-load spent per operation).
run() {
    local figure=$1 store=$2 out cpu=()
    shift 2
    echo "== $figure on $store"
    [ -n "${pid[$store]:-}" ] && cpu=(--cpu-of "server=${pid[$store]}" --cpu-of "etcd=$etcd_pid")
    if ! out=$("$bin"/api-load --server "${server[$store]}" --resource "${kind:-configmaps}" "${cpu[@]}" "$@" 2>&1); then
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

# print_summary TITLE: the table of every figure run.
print_summary() {
    echo
    echo "$1"
    column -t -s $'\t' "$results"
}
