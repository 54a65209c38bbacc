#!/usr/bin/env bash
# What an authorizer chain costs per request: cached GETs (resourceVersion=0) of Widgets from 16
# clients over HTTPS with a token-file token, on three servers one after another in one run:
# RBAC alone (--authorization-mode RBAC, the baseline); --authorization-config with the example
# authorizer module first (strategies/protect-production: a wasm call on every request; it
# allows the token's group `auditors` to read); and with a webhook first
# (tests/python/authz_webhook.py over HTTPS; no opinion, cached for its unauthorizedTTL), RBAC
# deciding after it. RBAC grants the group `benchers` the Widgets in every case.
# Usage: bash scripts/bench-authorization.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
cargo build --release -q --target wasm32-unknown-unknown -p strategy-protect-production
target=${CARGO_TARGET_DIR:-target}
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
export PYTHONPATH="$PWD/.tools/pyjwt"
mkdir "$work/webhook" "$work/modules"
cp "$target/wasm32-unknown-unknown/release/strategy-protect-production.wasm" "$work/modules/protect-production.wasm"
python3 tests/python/authz_webhook.py "$work/webhook" &
for _ in $(seq 100); do [ -f "$work/webhook/port" ] && break; sleep 0.1; done
cat >"$work/webhook.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: corp, cluster: {server: "https://127.0.0.1:$(cat "$work/webhook/port")/authorize", certificate-authority: $work/webhook/ca.pem}}]
users: [{name: apiserver, user: {client-certificate: $work/webhook/client.pem, client-key: $work/webhook/client-key.pem, tokenFile: $work/webhook/token}}]
contexts: [{name: webhook, context: {cluster: corp, user: apiserver}}]
current-context: webhook
YAML
cat >"$work/module.yaml" <<'YAML'
apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- {type: Module, name: protect-production}
- {type: RBAC, name: rbac}
YAML
cat >"$work/webhook.yaml" <<YAML
apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: corp
  webhook: {timeout: 3s, subjectAccessReviewVersion: v1, failurePolicy: NoOpinion,
            connectionInfo: {type: KubeConfigFile, kubeConfigFile: $work/webhook.kubeconfig}}
- {type: RBAC, name: rbac}
YAML
echo 'bench-token,bench,uid-bench,"benchers,auditors"' >"$work/tokens.csv"
source scripts/bench-grant.sh
# measure NAME PORT AUTHORIZATION-ARGS...: one server, the RBAC grant, the load, then stopped.
measure() {
    local name=$1 port=$2
    shift 2
    RUST_LOG=warn "$target/release/strategy-host" --listen "127.0.0.1:$port" --data-dir "$work/$name" \
        --token-auth-file "$work/tokens.csv" --strategy-dir "$work/modules" "$@" >"$work/$name.log" 2>&1 &
    local server=$!
    for _ in $(seq 100); do [ -f "$work/$name/admin.kubeconfig" ] && break; sleep 0.2; done
    sleep 1
    grant_widgets "$work/$name/admin.kubeconfig"
    printf '%-15s ' "$name"
    STRATEGY_HOST_CA_FILE="$work/$name/pki/ca.crt" STRATEGY_HOST_TOKEN=bench-token \
        "$target/release/api-load" --server "https://127.0.0.1:$port" --mode cached-get \
        --concurrency 16 --seconds "$seconds"
    kill "$server"
    wait "$server" 2>/dev/null || true
    local failed
    failed=$(grep -c "authorization webhook failed" "$work/$name.log" || true)
    [ "$failed" = 0 ] || { echo "$name: $failed webhook calls failed:"; grep -m1 "authorization webhook failed" "$work/$name.log"; }
}
measure rbac 18191 --authorization-mode RBAC
measure module+rbac 18192 --authorization-config "$work/module.yaml"
measure webhook+rbac 18193 --authorization-config "$work/webhook.yaml"
echo "reviews the webhook answered: $(wc -l <"$work/webhook/reviews.jsonl")"
