#!/usr/bin/env python3
"""A KMS v2 plugin for the tests, and kube-apiserver's envelope format written independently.

`serve SOCKET KEYS DIR` serves Kubernetes' `v2.KeyManagementService` (grpcio) on the unix socket
SOCKET. Its key encryption keys are in the JSON file KEYS, read on every call so a test can
rotate them: {"current": "key-1", "keys": {"key-1": "<base64 of 32 bytes>"}, "healthz": "ok"}
(created with one key when missing). It seals with AES-256-GCM under the current key, with the
key id as additional data, and attaches an annotation it requires back on Decrypt. Each call is
appended to DIR/calls ("Status", "Encrypt key-1", "Decrypt key-1"); DIR/ready appears once it
listens.

`seal KEYS NAME STORAGE_KEY` reads a plain value on stdin and writes what kube-apiserver (1.29+)
stores for it with the KMS v2 provider NAME: `k8s:enc:kms:v2:NAME:` and a protobuf
EncryptedObject, whose data is sealed by a key derived with HKDF-SHA256 from a fresh seed.
`open KEYS STORAGE_KEY` reads such a stored value on stdin and prints {"keyID", "plain"} as JSON.
Both follow the format's description, not the server's code, so they check it independently.
"""

import base64
import json
import os
import sys
import threading
from concurrent import futures

import grpc
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

ANNOTATION = "version.kms.strategy-host.test"
SERVICE = "v2.KeyManagementService"


# Protobuf, by hand: varints, and length-delimited strings, bytes and map entries.
def varint(n):
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def read_varint(data, at):
    shift = value = 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def field_bytes(number, value):
    return varint(number << 3 | 2) + varint(len(value)) + value


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_map(number, mapping):
    return b"".join(
        field_bytes(number, field_bytes(1, k.encode()) + field_bytes(2, v))
        for k, v in sorted(mapping.items())
    )


def parse(data):
    """Field number -> list of values (bytes, or ints for varints)."""
    fields, at = {}, 0
    while at < len(data):
        key, at = read_varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = read_varint(data, at)
        elif wire == 2:
            size, at = read_varint(data, at)
            value, at = data[at:at + size], at + size
        else:
            raise ValueError(f"unexpected wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def one(fields, number, default=b""):
    return fields.get(number, [default])[-1]


def parse_map(fields, number):
    out = {}
    for entry in fields.get(number, []):
        e = parse(entry)
        out[one(e, 1).decode()] = one(e, 2)
    return out


# Key encryption keys.
def load_keys(path):
    if not os.path.exists(path):
        state = {"current": "key-1", "keys": {"key-1": base64.b64encode(os.urandom(32)).decode()}}
        with open(path + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(path + ".tmp", path)
    with open(path) as f:
        return json.load(f)


def kek(state, key_id):
    secret = state["keys"].get(key_id)
    if secret is None:
        raise KeyError(f"unknown key id {key_id!r}")
    return AESGCM(base64.b64decode(secret))


def kek_seal(state, plaintext):
    key_id = state["current"]
    nonce = os.urandom(12)
    return key_id, nonce + kek(state, key_id).encrypt(nonce, plaintext, key_id.encode())


def kek_open(state, key_id, ciphertext):
    return kek(state, key_id).decrypt(ciphertext[:12], ciphertext[12:], key_id.encode())


def serve(socket_path, keys_path, directory):
    calls_lock = threading.Lock()

    def record(line):
        with calls_lock, open(os.path.join(directory, "calls"), "a") as f:
            f.write(line + "\n")

    def status(request, context):
        state = load_keys(keys_path)
        record("Status")
        return (field_bytes(1, b"v2") + field_bytes(2, state.get("healthz", "ok").encode())
                + field_bytes(3, state["current"].encode()))

    def encrypt(request, context):
        fields = parse(request)
        state = load_keys(keys_path)
        key_id, sealed = kek_seal(state, one(fields, 1))
        record(f"Encrypt {key_id}")
        return (field_bytes(1, sealed) + field_bytes(2, key_id.encode())
                + field_map(3, {ANNOTATION: b"1"}))

    def decrypt(request, context):
        fields = parse(request)
        key_id = one(fields, 3).decode()
        record(f"Decrypt {key_id}")
        if parse_map(fields, 4).get(ANNOTATION) != b"1":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"annotation {ANNOTATION} missing")
        if not one(fields, 2):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "uid missing")
        try:
            plaintext = kek_open(load_keys(keys_path), key_id, one(fields, 1))
        except Exception as e:  # an unknown key, or bytes it did not seal
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"decrypting with {key_id}: {e!r}")
        return field_bytes(1, plaintext)

    def handler(fn):
        return grpc.unary_unary_rpc_method_handler(
            fn, request_deserializer=lambda b: b, response_serializer=lambda b: b)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {
        "Status": handler(status),
        "Encrypt": handler(encrypt),
        "Decrypt": handler(decrypt),
    }),))
    load_keys(keys_path)
    server.add_insecure_port("unix:" + socket_path)
    server.start()
    open(os.path.join(directory, "ready"), "w").close()
    server.wait_for_termination()


def seal(keys_path, name, storage_key):
    plain = sys.stdin.buffer.read()
    state = load_keys(keys_path)
    seed = os.urandom(32)
    key_id, sealed_seed = kek_seal(state, seed)
    info, nonce = os.urandom(32), os.urandom(12)
    dek = HKDFExpand(hashes.SHA256(), 32, info).derive(seed)
    data = info + nonce + AESGCM(dek).encrypt(nonce, plain, storage_key.encode())
    envelope = (field_bytes(1, data) + field_bytes(2, key_id.encode()) + field_bytes(3, sealed_seed)
                + field_map(4, {ANNOTATION: b"1"}) + field_varint(5, 1))
    sys.stdout.buffer.write(f"k8s:enc:kms:v2:{name}:".encode() + envelope)


def open_value(keys_path, storage_key):
    stored = sys.stdin.buffer.read()
    prefix, _, rest = stored.partition(b":v2:")
    assert prefix == b"k8s:enc:kms", stored[:40]
    _name, _, envelope = rest.partition(b":")
    fields = parse(envelope)
    key_id = one(fields, 2).decode()
    source = kek_open(load_keys(keys_path), key_id, one(fields, 3))
    data = one(fields, 1)
    if one(fields, 5, 0) == 1:
        dek, data = HKDFExpand(hashes.SHA256(), 32, data[:32]).derive(source), data[32:]
    else:
        dek = source
    plain = AESGCM(dek).decrypt(data[:12], data[12:], storage_key.encode())
    print(json.dumps({"keyID": key_id, "plain": plain.decode()}))


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "serve":
        serve(*args)
    elif command == "seal":
        seal(*args)
    elif command == "open":
        open_value(*args)
    else:
        sys.exit(f"unknown command {command}")
