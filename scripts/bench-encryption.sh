#!/usr/bin/env bash
# What encryption at rest costs: creates of ~1 KiB Secrets from 16 clients, then consistent lists
# of 1,000 of them from 4, on four embedded-store servers in one run: Secrets stored plain, with
# aescbc, with aesgcm and with a KMS v2 plugin (--encryption-provider-config; the test plugin,
# tests/python/kms_plugin.py, which scripts/setup.sh installs grpcio for). Lists are served from
# the watch cache, which holds decrypted objects: encryption costs writes (and the cache's first
# fill), not lists. The KMS plugin is called once per seed, not per write.
# Usage: bash scripts/bench-encryption.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
source scripts/bench-lib.sh
key=$(head -c 32 /dev/urandom | base64)
for provider in aescbc aesgcm; do
    cat > "$work/$provider.yaml" <<YAML
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - $provider:
      keys:
      - {name: bench, secret: "$key"}
  - identity: {}
YAML
done
cat > "$work/kms.yaml" <<YAML
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms: {apiVersion: v2, name: bench, endpoint: "unix://$work/kms.sock"}
  - identity: {}
YAML
mkdir -p "$work/kms"
PYTHONPATH=.tools/pyjwt python3 tests/python/kms_plugin.py serve "$work/kms.sock" "$work/kms/keys.json" "$work/kms" &
for _ in $(seq 100); do [ -e "$work/kms/ready" ] && break; sleep 0.1; done
start_server plain 18191 --data-dir "$work/plain"
start_server aescbc 18192 --data-dir "$work/aescbc" --encryption-provider-config "$work/aescbc.yaml"
start_server aesgcm 18193 --data-dir "$work/aesgcm" --encryption-provider-config "$work/aesgcm.yaml"
start_server kms 18194 --data-dir "$work/kms-data" --encryption-provider-config "$work/kms.yaml"
load() { "$bin/api-load" --resource secrets --seconds "$seconds" "$@"; }
for mode in create list; do
    for name in plain aescbc aesgcm kms; do
        printf '%-6s %-7s ' "$mode" "$name"
        case $mode in
            create) load --server "${server[$name]}" --mode create --concurrency 16 ;;
            list) load --server "${server[$name]}" --mode list --concurrency 4 --objects 1000 --consistent ;;
        esac
    done
done
