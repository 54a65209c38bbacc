#!/usr/bin/env bash
# How long a module pulled from an OCI registry takes to serve on every replica, in one run:
# two release servers on one etcd, a local docker-registry, and a StrategyModule of a few hundred
# bytes (spec.url + spec.digest) applied with kubectl 1.35. For the Rust and the Go Deployment
# modules (the Rust one is the baseline): cold (each host pulls and compiles the module) and
# cached (the StrategyModule deleted and applied again: each host serves its kept copy, and its
# compiled code from the module cache). Figures: milliseconds from `kubectl apply` to the last
# replica reporting the digest in force (/debug/strategies), and to the first.
#
#   bash scripts/bench-oci-rollout.sh [ROUNDS]
#
# Needs docker-registry, Go and kubectl 1.35 (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-1}
source scripts/bench-lib.sh
target=${CARGO_TARGET_DIR:-target}
kubectl=${KUBECTL_LATEST:-.tools/kubectl-1.35/kubectl}
cargo build --release -q --target wasm32-unknown-unknown -p strategy-deployment
mkdir -p "$work/modules"
cp "$target"/wasm32-unknown-unknown/release/strategy-deployment.wasm "$work/modules/rust.wasm"
(cd strategies/go && PATH="$PWD/../../.tools/go/go/bin:$PATH" GOOS=wasip1 GOARCH=wasm GOPROXY=off \
    GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -buildmode=c-shared -trimpath \
    -o "$work/modules/go.wasm" ./deployment)
registry=127.0.0.1:18400
cat >"$work/registry.yml" <<YAML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $work/registry}}
http: {addr: $registry}
YAML
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
for _ in $(seq 100); do curl -sf "http://$registry/v2/" >/dev/null && break; sleep 0.1; done
declare -A digest
for lang in rust go; do
    out=$("$bin/strategy-host" module push "$work/modules/$lang.wasm" "oci://$registry/strategies/deployment-$lang:v1")
    digest[$lang]=$(sed -n 's/^digest: //p' <<<"$out")
    echo "$lang: $(stat -c %s "$work/modules/$lang.wasm") bytes, ${digest[$lang]}"
done
for h in a:18401 b:18402; do
    start_server "${h%%:*}" "${h##*:}" --etcd-servers "$etcd_url" --module-cache-dir "$work/cache-${h%%:*}"
done
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# in_force HOST: the digest the host serves Deployments with (empty when none).
in_force() {
    curl -sf "${server[$1]}/debug/strategies" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["sources"]:
    if s["source"] == "api:deployments" and s.get("digestInForce"):
        print("sha256:" + s["digestInForce"])'
}
# rollout LANG CASE: applies the StrategyModule and records when each host serves its digest.
rollout() {
    local lang=$1 case=$2 start first="" last="" t
    cat >"$work/module.yaml" <<YAML
apiVersion: strategyhost.io/v1alpha1
kind: StrategyModule
metadata: {name: deployments}
spec:
  resource: {group: apps.example.com, kind: Deployment}
  url: oci://$registry/strategies/deployment-$lang:v1
  digest: ${digest[$lang]}
YAML
    start=$(now_ms)
    "$kubectl" --server "${server[a]}" apply -f "$work/module.yaml" >/dev/null
    declare -A done_at=()
    while [ ${#done_at[@]} -lt 2 ]; do
        for h in a b; do
            if [ -z "${done_at[$h]:-}" ] && [ "$(in_force "$h")" = "${digest[$lang]}" ]; then
                t=$(($(now_ms) - start))
                done_at[$h]=$t
                [ -z "$first" ] && first=$t
                last=$t
            fi
        done
        [ $(($(now_ms) - start)) -gt 300000 ] && { echo "timed out"; break; }
        sleep 0.05
    done
    printf '%s\t%s\t%s\t%s\t%s\n' "$lang" "$case" "$(stat -c %s "$work/module.yaml")" "$first" "$last" >>"$work/rollouts.tsv"
    "$kubectl" --server "${server[a]}" delete -f "$work/module.yaml" >/dev/null
    for h in a b; do
        while [ -n "$(in_force "$h")" ]; do sleep 0.05; done
    done
}
printf 'module\tcase\tStrategyModule bytes\tfirst replica ms\tlast replica ms\n' >"$work/rollouts.tsv"
for round in $(seq "$rounds"); do
    for lang in rust go; do
        if [ "$round" = 1 ]; then rollout "$lang" cold; fi
        rollout "$lang" cached
    done
done
echo
echo "Module rollout by URL to 2 replicas on one etcd (kubectl apply -> digest in force)"
column -t -s $'\t' "$work/rollouts.tsv"
