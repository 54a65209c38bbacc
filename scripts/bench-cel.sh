#!/usr/bin/env bash
# Creates/s of Gateway API Gateways with the CRD's CEL rules enforced, beside the same CRD with
# its rules removed (served under another group), through the API on the embedded store, in the
# same run (alternated twice, since the machine is shared).
#
#   bash scripts/bench-cel.sh [SECONDS_PER_CELL] [CLIENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
clients=${2:-16}
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
server=http://127.0.0.1:18186
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18186 --data-dir "$work/embedded" &
for _ in $(seq 100); do curl -sf "$server/readyz" >/dev/null && break; sleep 0.1; done
kubectl=${KUBECTL_LATEST:-.tools/kubectl-1.35/kubectl}
"$kubectl" --server "$server" apply --server-side -f tests/data/crds/gateway-api/gateway.networking.k8s.io_gateways.yaml >/dev/null
# The same definition without rules, under another group.
curl -sf "$server/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gateways.gateway.networking.k8s.io" |
    python3 -c '
import json, sys
crd = json.load(sys.stdin)
def strip(node):
    if isinstance(node, dict):
        node.pop("x-kubernetes-validations", None)
        for v in node.values(): strip(v)
    elif isinstance(node, list):
        for v in node: strip(v)
strip(crd["spec"])
crd["spec"]["group"] = "norules.gateway.example.com"
crd["metadata"] = {"name": "gateways.norules.gateway.example.com"}
crd.pop("status", None)
print(json.dumps(crd))' |
    curl -sf -X POST -H 'Content-Type: application/json' --data-binary @- \
        "$server/apis/apiextensions.k8s.io/v1/customresourcedefinitions" >/dev/null
sleep 1
load() { target/release/api-load --server "$server" --mode create --seconds "$seconds" --concurrency "$clients" "$@"; }
for round in 1 2; do
    printf 'round %s rules enforced: ' "$round"; load --resource gateways
    printf 'round %s rules removed:  ' "$round"; load --resource gateways-norules
done
