#!/usr/bin/env bash
# The cost of converting between a CRD's versions, per object: Cluster API's real MachineDeployment
# CRD (tests/data/crds/cluster-api) on three servers over the embedded store in one run —
# conversion None (apiVersion rewritten), a conversion webhook (tests/python/webhook.py /convert
# over HTTPS) and the wasm module strategies/machinedeployment-conversion — each listing OBJECTS
# objects at the storage version (v1beta2: nothing to convert) and at v1beta1 (every object
# converted), then a watch fan-out of WATCHERS watchers at each version.
#
#   bash scripts/bench-conversion.sh [OBJECTS] [SECONDS] [WATCHERS]
#   CONVERTERS="none wasm" WATCHERS=0 bash scripts/bench-conversion.sh   # some servers; no watch phase
#   PROFILE=1 ...   # also perf-records the wasm server through its converted lists ($work kept)
#   CLIENTS="1 2" ... # the concurrent listing clients, a row each (default: 1, then 2)
#
# Honours CARGO_TARGET_DIR (default ./target).
set -euo pipefail
cd "$(dirname "$0")/.."
objects=${1:-10000}
seconds=${2:-10}
watchers=${3:-${WATCHERS:-100}}
read -r -a converters <<<"${CONVERTERS:-none webhook wasm}"
target=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
cargo build --release -q --target wasm32-unknown-unknown -p strategy-machinedeployment-conversion
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${PROFILE:-}" ] || rm -rf "$work"' EXIT
. scripts/bench-webhook.sh

declare -A port=([none]=18291 [webhook]=18292 [wasm]=18293) pid
for name in "${converters[@]}"; do
    RUST_LOG=warn "$target/release/strategy-host" --dev-mode --listen "127.0.0.1:${port[$name]}" \
        --data-dir "$work/$name" ${SERVER_ARGS:-} >>"$work/server-$name.log" 2>&1 &
    pid[$name]=$!
done
for name in "${converters[@]}"; do
    for _ in $(seq 300); do curl -sf "http://127.0.0.1:${port[$name]}/readyz" >/dev/null && break; sleep 0.1; done
done
# The CRD as JSON, with a conversion webhook at $1 (trusting $2) when given.
crd() {
    python3 - "$@" <<'PY'
import json, sys, yaml
crd = yaml.safe_load(open("tests/data/crds/cluster-api/cluster.x-k8s.io_machinedeployments.yaml"))
if len(sys.argv) > 1:
    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
        "clientConfig": {"url": sys.argv[1], "caBundle": sys.argv[2]}}}
print(json.dumps(crd))
PY
}
post() { curl -sf -X POST -H 'Content-Type: application/json' --data-binary @- "http://127.0.0.1:$1$2" >/dev/null; }
crds=/apis/apiextensions.k8s.io/v1/customresourcedefinitions
for name in "${converters[@]}"; do
    case $name in
    webhook) crd "https://127.0.0.1:$webhook_port/convert" "$ca_bundle" | post "${port[$name]}" "$crds" ;;
    *) crd | post "${port[$name]}" "$crds" ;;
    esac
done
# The module, bound by a StrategyModule on the wasm server.
[[ " ${converters[*]} " == *" wasm "* ]] && python3 - "$target/wasm32-unknown-unknown/release/strategy-machinedeployment-conversion.wasm" <<'PY' |
import base64, json, sys
print(json.dumps({"apiVersion": "strategyhost.io/v1alpha1", "kind": "StrategyModule",
    "metadata": {"name": "md-conversion"},
    "spec": {"resource": {"group": "cluster.x-k8s.io", "kind": "MachineDeployment"},
             "module": base64.b64encode(open(sys.argv[1], "rb").read()).decode()}}))
PY
    post "${port[wasm]}" /apis/strategyhost.io/v1alpha1/strategymodules
[[ " ${converters[*]} " == *" wasm "* ]] && for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:${port[wasm]}/apis/strategyhost.io/v1alpha1/strategymodules/md-conversion" |
        grep -q '"phase":"Active"' && break
    sleep 0.2
done

load() {
    local name=$1 resource=$2
    shift 2
    "$target/release/api-load" --server "http://127.0.0.1:${port[$name]}" --resource "$resource" "$@"
}
# Seed every server (the figures below then find their objects).
for name in "${converters[@]}"; do
    load "$name" machinedeployments --mode list --objects "$objects" --concurrency 1 --seconds 1 >/dev/null
done
for clients in ${CLIENTS:-1 2}; do
    for name in "${converters[@]}"; do
        for resource in machinedeployments machinedeployments-v1beta1; do
            printf '%-8s list   ' "$name"
            [ -n "${PROFILE:-}" ] && [ "$name$resource" = wasmmachinedeployments-v1beta1 ] &&
                { perf record -g -o "$work/perf-$clients.data" -p "${pid[wasm]}" 2>/dev/null & perf_pid=$!; }
            load "$name" "$resource" --mode list --objects "$objects" --concurrency "$clients" --seconds "$seconds"
            [ -n "${perf_pid:-}" ] && { kill -INT "$perf_pid"; wait "$perf_pid" || true; perf_pid=; echo "profile: $work/perf-$clients.data"; }
        done
    done
done
[ "$watchers" = 0 ] && exit 0
for name in "${converters[@]}"; do
    for resource in machinedeployments machinedeployments-v1beta1; do
        printf '%-8s watch  ' "$name"
        load "$name" "$resource" --mode watch --watchers "$watchers" --objects 100 --rate 100 \
            --seconds "$seconds"
    done
done
[[ " ${converters[*]} " == *" webhook "* ]] && echo "webhook: $(curl -sk --cacert "$work/ca.crt" "https://127.0.0.1:$webhook_port/stats")"
