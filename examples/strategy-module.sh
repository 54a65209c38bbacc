#!/usr/bin/env bash
# Loads a wasm strategy through the API instead of a directory: prints a StrategyModule object
# carrying MODULE.wasm (base64) bound to GROUP/KIND, ready for `kubectl create -f -` or, for a
# new version too, `kubectl apply --server-side -f -`. Every replica sharing the store loads it;
# its status says Active or Rejected, with the digest in force and the reason.
#
#   bash examples/strategy-module.sh NAME MODULE.wasm GROUP KIND | kubectl --server http://127.0.0.1:8080 apply --server-side -f -
#
# Not client-side `kubectl apply`: it copies the whole object (module included) into the
# last-applied-configuration annotation, which Kubernetes caps at 256 KiB.
set -euo pipefail
if [ $# -ne 4 ]; then
    echo "usage: $0 NAME MODULE.wasm GROUP KIND" >&2
    exit 2
fi
name=$1 module=$2 group=$3 kind=$4
cat <<JSON
{
  "apiVersion": "strategyhost.io/v1alpha1",
  "kind": "StrategyModule",
  "metadata": {"name": "$name"},
  "spec": {
    "resource": {"group": "$group", "kind": "$kind"},
    "digest": "sha256:$(sha256sum "$module" | cut -d' ' -f1)",
    "module": "$(base64 -w0 "$module")"
  }
}
JSON
