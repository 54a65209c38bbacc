#!/usr/bin/env bash
# Added latency of admission per create: ConfigMap creates through four servers on the embedded
# store in one run, api-load alternating between them cell by cell — no admission, one
# ValidatingAdmissionPolicy (CEL), the example wasm policy module (strategies/owner-label) and one
# validating webhook on this machine (tests/python/webhook.py over HTTPS) — each asking the same
# question (does the ConfigMap carry an `owner` label?). Then the webhook hangs (30 s, on Secrets,
# failurePolicy Ignore) under 16 callers while Lease creates (no webhook) and ConfigMap creates run beside it.
#
#   bash scripts/bench-admission.sh [SECONDS_PER_CELL] [ROUNDS] [CLIENTS]
#
# Honours CARGO_TARGET_DIR (default ./target).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
rounds=${2:-2}
clients=${3:-16}
target=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
cargo build --release -q --target wasm32-unknown-unknown -p strategy-owner-label
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/policies"
cp "$target/wasm32-unknown-unknown/release/strategy-owner-label.wasm" "$work/policies/owner-label.wasm"

# The test webhook over HTTPS, with a CA of its own.
. scripts/bench-webhook.sh

declare -A port=([none]=18191 [cel]=18192 [wasm]=18193 [webhook]=18194)
for name in none cel wasm webhook; do
    extra=()
    [ "$name" = wasm ] && extra=(--strategy-dir "$work/policies")
    RUST_LOG=warn "$target/release/strategy-host" --dev-mode --listen "127.0.0.1:${port[$name]}" \
        --data-dir "$work/$name" "${extra[@]}" >>"$work/server-$name.log" 2>&1 &
done
for name in none cel wasm webhook; do
    for _ in $(seq 300); do curl -sf "http://127.0.0.1:${port[$name]}/readyz" >/dev/null && break; sleep 0.1; done
done
post() { curl -sf -X POST -H 'Content-Type: application/json' --data-binary "$2" "http://127.0.0.1:$1$3" >/dev/null; }
post "${port[cel]}" '{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
  "metadata":{"name":"owner-label"},"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[
  {"apiGroups":["*"],"apiVersions":["*"],"operations":["CREATE","UPDATE"],"resources":["*"],"scope":"Namespaced"}]},
  "validations":[{"expression":"has(object.metadata.labels) && '"'"'owner'"'"' in object.metadata.labels","message":"names its owner"}]}}' \
    /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies
post "${port[cel]}" '{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding",
  "metadata":{"name":"owner-label"},"spec":{"policyName":"owner-label","validationActions":["Deny"]}}' \
    /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings
# The webhook refuses ConfigMaps with a `forbidden` key (none here), so each create is one call;
# /hang answers after 30 s: it guards Secrets only, failing open.
post "${port[webhook]}" '{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration",
  "metadata":{"name":"bench"},"webhooks":[
  {"name":"deny.bench.example.com","sideEffects":"None","admissionReviewVersions":["v1"],"failurePolicy":"Fail",
   "clientConfig":{"url":"https://127.0.0.1:'"$webhook_port"'/deny","caBundle":"'"$ca_bundle"'"},
   "rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
  {"name":"hang.bench.example.com","sideEffects":"None","admissionReviewVersions":["v1"],"failurePolicy":"Ignore",
   "timeoutSeconds":30,"clientConfig":{"url":"https://127.0.0.1:'"$webhook_port"'/hang","caBundle":"'"$ca_bundle"'"},
   "rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["secrets"]}]}]}' \
    /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations
# Each server must refuse a ConfigMap without an owner (422) before it is measured, and the
# webhook one with a `forbidden` key (403: the webhook answered, not a failed call's 500).
answers() {
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        --data-binary "$3" "http://127.0.0.1:$1/api/v1/namespaces/default/configmaps?dryRun=All")
    [ "$code" = "$2" ]
}
ready=
for _ in $(seq 100); do
    if answers "${port[cel]}" 422 '{"metadata":{"name":"probe"}}' &&
        answers "${port[wasm]}" 422 '{"metadata":{"name":"probe"}}' &&
        answers "${port[webhook]}" 403 '{"metadata":{"name":"probe","labels":{"owner":"x"}},"data":{"forbidden":"1"}}'; then
        ready=1
        break
    fi
    sleep 0.2
done
[ -n "$ready" ] || { echo "the policies and the webhook never refused their probes" >&2; exit 1; }

load() {
    "$target/release/api-load" --server "http://127.0.0.1:$1" --resource "${2:-configmaps}" \
        --mode create --concurrency "$clients" --seconds "$seconds"
}
for round in $(seq "$rounds"); do
    for name in none cel wasm webhook; do
        printf '%-8s round=%s ' "$name" "$round"
        load "${port[$name]}"
    done
done

# A webhook hanging 30 s on Secrets, 16 callers waiting on it, beside creates of a resource no
# webhook guards (Leases) and of ConfigMaps (guarded by the other webhook of the same server).
printf '%-8s leases beside nothing:          ' webhook
load "${port[webhook]}" leases
printf '%-8s configmaps beside nothing:      ' webhook
load "${port[webhook]}"
for i in $(seq 16); do
    (while true; do
        curl -s -o /dev/null -m 40 -X POST -H 'Content-Type: application/json' \
            --data-binary "{\"metadata\":{\"name\":\"s-$i-$RANDOM$RANDOM\"}}" \
            "http://127.0.0.1:${port[webhook]}/api/v1/namespaces/default/secrets"
    done) &
done
sleep 2
printf '%-8s leases beside a hung hook:      ' webhook
load "${port[webhook]}" leases
printf '%-8s configmaps beside a hung hook:  ' webhook
load "${port[webhook]}"
