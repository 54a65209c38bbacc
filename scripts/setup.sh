#!/usr/bin/env bash
# Installs what building and testing Strategy Host needs on a fresh Debian machine:
# etcd (Debian's etcd-server, for the etcd3 tests), protoc (etcd-client's build), kubectl
# (Debian's kubernetes-client, for the end-to-end tests), and the Rust
# toolchain and wasm target pinned in rust-toolchain.toml. Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
command -v protoc >/dev/null 2>&1 || need_apt+=(protobuf-compiler)
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
# Debian's etcd-server package starts a system etcd on 2379; the tests start their own on free
# ports and do not need it, so leave it alone.

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install rustup first (https://rustup.rs)" >&2
    exit 1
fi
# rustup reads rust-toolchain.toml and installs the pinned toolchain, components and targets.
rustup show active-toolchain >/dev/null
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
echo "setup: ok (kubectl $(kubectl version --client 2>/dev/null | head -1 | awk '{print $3}'), etcd $(etcd --version 2>/dev/null | head -1 | awk '{print $3}'), $(protoc --version))"
