#!/usr/bin/env bash
# What the aggregator's proxy costs: Widgets served by host B (secure, trusting A's front
# proxy), read and watched directly on B and through host A, which aggregates them (an
# APIService naming a Service whose EndpointSlice is B), in one run. Both are secure servers
# with a static admin token; through A a request is authenticated and authorized on A, proxied
# over TLS with the front proxy's certificate, and authenticated (request header) and
# authorized again on B. Figures: GETs from 16 clients (ops/s, p50/p99), and watch delivery
# latency from 20 watchers at 100 writes/s.
# Usage: bash scripts/bench-aggregation.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
source scripts/bench-lib.sh
echo 'admin-token,admin,1,"system:masters"' >"$work/tokens.csv"
# B's serving certificate: for bench-backend.default.svc (what A checks) and 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
    -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=bench-backend \
    -keyout "$work/b.key" -out "$work/b.csr" 2>/dev/null
printf 'subjectAltName=DNS:bench-backend.default.svc,IP:127.0.0.1\n' >"$work/san.ext"
openssl x509 -req -in "$work/b.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
    -days 2 -extfile "$work/san.ext" -out "$work/b.crt" 2>/dev/null
# start_secure NAME PORT ARGS...: a secure server, waited for until ready.
start_secure() {
    local name=$1 port=$2
    shift 2
    RUST_LOG=warn "$bin/strategy-host" --listen "127.0.0.1:$port" --token-auth-file "$work/tokens.csv" "$@" \
        >>"$work/server-$name.log" 2>&1 &
    pid[$name]=$!
    server[$name]=https://127.0.0.1:$port
    for _ in $(seq 200); do
        curl -skf -H 'Authorization: Bearer admin-token' "https://127.0.0.1:$port/readyz" >/dev/null && break
        sleep 0.1
    done
}
start_secure a 18311 --data-dir "$work/a"
start_secure b 18312 --data-dir "$work/b-data" --tls-cert-file "$work/b.crt" --tls-private-key-file "$work/b.key" \
    --requestheader-client-ca-file "$work/a/pki/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client
a_call() { curl -sf --cacert "$work/a/pki/ca.crt" -H 'Authorization: Bearer admin-token' -H 'Content-Type: application/json' "$@"; }
ca_bundle=$(base64 -w0 <"$work/ca.crt")
a_call -X POST "${server[a]}/api/v1/namespaces/default/services" -d \
    '{"apiVersion":"v1","kind":"Service","metadata":{"name":"bench-backend"},"spec":{"ports":[{"name":"https","port":443}]}}' >/dev/null
a_call -X POST "${server[a]}/apis/discovery.k8s.io/v1/namespaces/default/endpointslices" -d \
    '{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"bench-backend-1","labels":{"kubernetes.io/service-name":"bench-backend"}},"addressType":"IPv4","ports":[{"name":"https","port":18312}],"endpoints":[{"addresses":["127.0.0.1"]}]}' >/dev/null
a_call -X POST "${server[a]}/apis/apiregistration.k8s.io/v1/apiservices" -d \
    "{\"apiVersion\":\"apiregistration.k8s.io/v1\",\"kind\":\"APIService\",\"metadata\":{\"name\":\"v1.example.com\"},\"spec\":{\"group\":\"example.com\",\"version\":\"v1\",\"service\":{\"namespace\":\"default\",\"name\":\"bench-backend\"},\"caBundle\":\"$ca_bundle\",\"groupPriorityMinimum\":1000,\"versionPriority\":100}}" >/dev/null
# load SERVER CA ARGS...: api-load against SERVER trusting CA, as the admin.
load() {
    local url=$1 ca=$2
    shift 2
    STRATEGY_HOST_CA_FILE=$ca STRATEGY_HOST_TOKEN=admin-token "$bin/api-load" --server "$url" --resource widgets "$@"
}
# The Widget CRD on B (the first direct run defines it), then A's APIService available.
load "${server[b]}" "$work/ca.crt" --mode get --seconds 1 --concurrency 1 >/dev/null
for _ in $(seq 300); do
    a_call "${server[a]}/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com" | grep -q '"status":"True"' && break
    sleep 0.1
done
summary_of() { grep -m1 '^resource=' <<<"$1"; }
for mode in get watch; do
    case $mode in
        get) args=(--mode get --concurrency 16 --seconds "$seconds") ;;
        watch) args=(--mode watch --watchers 20 --rate 100 --objects 100 --seconds "$seconds") ;;
    esac
    direct=$(load "${server[b]}" "$work/ca.crt" "${args[@]}")
    proxied=$(load "${server[a]}" "$work/a/pki/ca.crt" --no-define "${args[@]}")
    printf '%-6s direct  (B)      %s\n' "$mode" "$(summary_of "$direct")"
    printf '%-6s proxied (A -> B) %s\n' "$mode" "$(summary_of "$proxied")"
done
