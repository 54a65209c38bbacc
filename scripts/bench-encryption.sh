#!/usr/bin/env bash
# What encryption at rest costs: creates of ~1 KiB Secrets from 16 clients, then consistent lists
# of 1,000 of them from 4, on three embedded-store servers in one run: Secrets stored plain, with
# aescbc and with aesgcm (--encryption-provider-config). Lists are served from the watch cache,
# which holds decrypted objects: encryption costs writes (and the cache's first fill), not lists.
# Usage: bash scripts/bench-encryption.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
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
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18191 --data-dir "$work/plain" &
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18192 --data-dir "$work/aescbc" \
    --encryption-provider-config "$work/aescbc.yaml" &
RUST_LOG=warn target/release/strategy-host --dev-mode --listen 127.0.0.1:18193 --data-dir "$work/aesgcm" \
    --encryption-provider-config "$work/aesgcm.yaml" &
for port in 18191 18192 18193; do
    for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
done
load() { target/release/api-load --resource secrets --seconds "$seconds" "$@"; }
for mode in create list; do
    for server in plain:18191 aescbc:18192 aesgcm:18193; do
        printf '%-6s %-7s ' "$mode" "${server%%:*}"
        case $mode in
            create) load --server "http://127.0.0.1:${server##*:}" --mode create --concurrency 16 ;;
            list) load --server "http://127.0.0.1:${server##*:}" --mode list --concurrency 4 --objects 1000 --consistent ;;
        esac
    done
done
