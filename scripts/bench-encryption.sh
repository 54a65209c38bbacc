#!/usr/bin/env bash
# What encryption at rest costs: creates of ~1 KiB Secrets from 16 clients, then consistent lists
# of 1,000 of them from 4, on three embedded-store servers in one run: Secrets stored plain, with
# aescbc and with aesgcm (--encryption-provider-config). Lists are served from the watch cache,
# which holds decrypted objects: encryption costs writes (and the cache's first fill), not lists.
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
start_server plain 18191 --data-dir "$work/plain"
start_server aescbc 18192 --data-dir "$work/aescbc" --encryption-provider-config "$work/aescbc.yaml"
start_server aesgcm 18193 --data-dir "$work/aesgcm" --encryption-provider-config "$work/aesgcm.yaml"
load() { "$bin/api-load" --resource secrets --seconds "$seconds" "$@"; }
for mode in create list; do
    for name in plain aescbc aesgcm; do
        printf '%-6s %-7s ' "$mode" "$name"
        case $mode in
            create) load --server "${server[$name]}" --mode create --concurrency 16 ;;
            list) load --server "${server[$name]}" --mode list --concurrency 4 --objects 1000 --consistent ;;
        esac
    done
done
