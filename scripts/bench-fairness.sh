#!/usr/bin/env bash
# API Priority and Fairness against a noisy neighbour (issue 31 item 1), side by side in one run:
# a secure release server (HTTPS, token users, RBAC) holding $OBJECTS 1 KiB ConfigMaps; a light
# user creates ConfigMaps one at a time for $SECONDS_LIGHT s
#   - alone,
#   - while a noisy user of the same priority level (global-default) floods full lists from 64
#     connections (fair queuing: the flood fills only its own queue, its overflow gets 429),
#   - while the same flood comes from an exempt user (system:masters: not queued, as every user
#     was before fair queuing, when only a global in-flight limit applied).
# Prints the light user's creates/s, p50 and p99 in each case and what the flood got.
#
#   bash scripts/bench-fairness.sh            # OBJECTS=5000 SECONDS_LIGHT=10
#   SERVER_FLAGS="--max-requests-inflight 100 --max-mutating-requests-inflight 50" bash scripts/bench-fairness.sh
set -euo pipefail
cd "$(dirname "$0")/.."
objects=${OBJECTS:-5000}
seconds=${SECONDS_LIGHT:-10}
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
bin=${CARGO_TARGET_DIR:-target}/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
port=18643
url=https://127.0.0.1:$port
cat >"$work/tokens.csv" <<TOKENS
admin-token,bench-admin,uid-admin,system:masters
noisy-token,noisy,uid-noisy,tenants
light-token,light,uid-light,tenants
TOKENS
RUST_LOG=warn "$bin"/strategy-host --listen "127.0.0.1:$port" --data-dir "$work/data" \
    --token-auth-file "$work/tokens.csv" ${SERVER_FLAGS:-} >"$work/server.log" 2>&1 &
export STRATEGY_HOST_CA_FILE=$work/data/pki/ca.crt
for _ in $(seq 200); do
    [ -f "$STRATEGY_HOST_CA_FILE" ] && curl -sf --cacert "$STRATEGY_HOST_CA_FILE" "$url/readyz" >/dev/null && break
    sleep 0.1
done
curl -sf --cacert "$STRATEGY_HOST_CA_FILE" -H "Authorization: Bearer admin-token" \
    -H 'Content-Type: application/json' -o /dev/null \
    -X POST "$url/apis/rbac.authorization.k8s.io/v1/clusterrolebindings" -d '{
      "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
      "metadata": {"name": "tenants-edit"},
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
      "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "tenants"}]}'
STRATEGY_HOST_TOKEN=admin-token "$bin"/api-load --server "$url" --resource configmaps \
    --mode seed --objects "$objects" | grep -m1 '^resource='
field() { grep -o "$1=[^ ]*" <<<"$2" | head -1 | cut -d= -f2; }
light() {
    STRATEGY_HOST_TOKEN=light-token "$bin"/api-load --server "$url" --resource configmaps \
        --mode create --concurrency 1 --seconds "$seconds" | grep -m1 '^resource='
}
# flood TOKEN: full lists (from the watch cache) from 64 connections, until the light run ends.
flood() {
    STRATEGY_HOST_TOKEN=$1 "$bin"/api-load --server "$url" --resource configmaps --mode list \
        --objects "$objects" --concurrency 64 --seconds "$((seconds + 4))" | grep -m1 '^resource='
}
printf 'case\tlight creates\tflood lists\n' >"$work/table"
row() {
    printf '%s\t%s/s p50 %s p99 %s\t%s\n' "$1" "$(field ops/s "$2")" "$(field p50 "$2")" \
        "$(field p99 "$2")" "${3:--}" >>"$work/table"
}
alone=$(light)
echo "alone: $alone"
row "light user alone" "$alone"
for who in noisy admin; do
    flood "$who-token" >"$work/flood-$who" &
    flood_pid=$!
    sleep 2
    during=$(light)
    wait "$flood_pid"
    lists=$(cat "$work/flood-$who")
    echo "flood by $who: $lists"
    echo "light during it: $during"
    case $who in
        noisy) name="noisy user floods (global-default, fair queuing)" ;;
        admin) name="admin floods (exempt: not queued)" ;;
    esac
    row "$name" "$during" "$(field ops/s "$lists")/s, $(field errors "$lists") refused, p99 $(field p99 "$lists")"
done
echo
column -t -s $'\t' "$work/table"
