#!/usr/bin/env bash
# What the security layers cost: cached GETs (resourceVersion=0) of Widgets from 16 and 64
# clients over HTTPS with a bearer token (a token-file user whose access RBAC decides through a
# ClusterRoleBinding to a group), beside the same load over plain HTTP in development mode, in
# one run. Usage: bash scripts/bench-security.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
echo 'bench-token,bench,uid-bench,"benchers"' > "$work/tokens.csv"
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18187 --data-dir "$work/plain" &
RUST_LOG=warn target/release/strategy-host --listen 127.0.0.1:18188 --data-dir "$work/secure" \
    --token-auth-file "$work/tokens.csv" &
for i in $(seq 100); do
    [ -f "$work/secure/admin.kubeconfig" ] && curl -s -o /dev/null http://127.0.0.1:18187/healthz && break
    sleep 0.2
done
source scripts/bench-grant.sh
grant_widgets "$work/secure/admin.kubeconfig"
for c in 16 64; do
    echo "== cached GET, $c clients, ${seconds}s: plain HTTP, development mode"
    target/release/api-load --server http://127.0.0.1:18187 --mode cached-get \
        --concurrency "$c" --seconds "$seconds"
    echo "== cached GET, $c clients, ${seconds}s: HTTPS, bearer token, RBAC"
    STRATEGY_HOST_CA_FILE="$work/secure/pki/ca.crt" STRATEGY_HOST_TOKEN=bench-token \
        target/release/api-load --server https://127.0.0.1:18188 --mode cached-get \
        --concurrency "$c" --seconds "$seconds"
done
