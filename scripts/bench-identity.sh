#!/usr/bin/env bash
# What logging in with an identity provider costs: cached GETs (resourceVersion=0) of Widgets
# from 16 clients over HTTPS, authenticated by an OIDC token (a JWT issuer of
# --authentication-config: signature, audience, expiry and claim mappings checked on every
# request) beside a token-file token, on the same server in one run; RBAC decides both through a
# group. The issuer is tests/python/oidc_issuer.py (PyJWT, from scripts/setup.sh).
# Usage: bash scripts/bench-identity.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
cargo build --release -q -p strategy-host --bin strategy-host -p strategy-host-e2e --bin api-load
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export PYTHONPATH="$PWD/.tools/pyjwt"
mkdir "$work/idp"
python3 tests/python/oidc_issuer.py serve "$work/idp" &
for _ in $(seq 100); do [ -f "$work/idp/port" ] && break; sleep 0.1; done
issuer="https://127.0.0.1:$(cat "$work/idp/port")"
python3 - "$work" "$issuer" <<'PY'
import json, sys
work, issuer = sys.argv[1], sys.argv[2]
ca = open(f"{work}/idp/ca.pem").read()
json.dump({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration",
           "jwt": [{"issuer": {"url": issuer, "audiences": ["kubernetes"], "certificateAuthority": ca},
                    "claimMappings": {"username": {"claim": "sub", "prefix": "oidc:"},
                                      "groups": {"claim": "groups", "prefix": ""}}}]},
          open(f"{work}/authn.json", "w"))
PY
now=$(date +%s)
oidc_token=$(python3 tests/python/oidc_issuer.py sign "$work/idp" \
    "{\"iss\":\"$issuer\",\"aud\":\"kubernetes\",\"sub\":\"bench\",\"groups\":[\"benchers\"],\"iat\":$now,\"exp\":$((now + 3600))}")
echo 'bench-token,bench,uid-bench,"benchers"' > "$work/tokens.csv"
RUST_LOG=warn target/release/strategy-host --listen 127.0.0.1:18189 --data-dir "$work/secure" \
    --token-auth-file "$work/tokens.csv" --authentication-config "$work/authn.json" &
for _ in $(seq 100); do [ -f "$work/secure/admin.kubeconfig" ] && break; sleep 0.2; done
sleep 1
source scripts/bench-grant.sh
grant_widgets "$work/secure/admin.kubeconfig"
for who in token-file:bench-token oidc:$oidc_token; do
    printf '%-11s ' "${who%%:*}"
    STRATEGY_HOST_CA_FILE="$work/secure/pki/ca.crt" STRATEGY_HOST_TOKEN="${who#*:}" \
        target/release/api-load --server https://127.0.0.1:18189 --mode cached-get \
        --concurrency 16 --seconds "$seconds"
done
