"""An authorization webhook as organisations run them (HTTPS, Python standard library), for the
end-to-end tests of `--authorization-config`. It answers SubjectAccessReviews POSTed to
/authorize, only from a client that presents a certificate its CA signed and its bearer token:

  authz_webhook.py DIR    writes DIR/ca.pem (its CA), DIR/client.pem + DIR/client-key.pem (the
                          client certificate the server presents), DIR/token; serves on a free
                          port, written to DIR/port once it listens.

Its policy: the user `jane` may get, list and watch configmaps in the namespace `webhook-ns`;
the user `mallory` is denied everything; anyone else gets no opinion. While DIR/fail exists it
answers 500. Every review it receives is appended to DIR/reviews.jsonl.
"""

import http.server
import json
import os
import socket
import ssl
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oidc_issuer import certificate, new_key, write_pem  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402


def write_cert(path, cert):
    with open(path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))


def files(dir_):
    ca_key, serving_key, client_key = new_key(), new_key(), new_key()
    ca = certificate("authz webhook CA", ca_key, "authz webhook CA", ca_key, True)
    write_cert(os.path.join(dir_, "ca.pem"), ca)
    write_cert(os.path.join(dir_, "tls.pem"), certificate("127.0.0.1", serving_key, "authz webhook CA", ca_key, False))
    write_pem(os.path.join(dir_, "tls-key.pem"), serving_key)
    write_cert(os.path.join(dir_, "client.pem"), certificate("strategy-host", client_key, "authz webhook CA", ca_key, False))
    write_pem(os.path.join(dir_, "client-key.pem"), client_key)
    with open(os.path.join(dir_, "token"), "w") as f:
        f.write("authz-webhook-secret\n")


def decide(spec):
    user = spec.get("user", "")
    attrs = spec.get("resourceAttributes") or {}
    if user == "mallory":
        return {"allowed": False, "denied": True, "reason": "mallory is blocked by corp policy"}
    if (
        user == "jane"
        and attrs.get("namespace") == "webhook-ns"
        and attrs.get("resource") == "configmaps"
        and attrs.get("verb") in ("get", "list", "watch")
    ):
        return {"allowed": True, "reason": "corp policy allows jane"}
    return {"allowed": False}


def serve(dir_):
    files(dir_)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            # Headers and body go out in two writes: without this, Nagle holds the body until
            # the client's delayed ACK (40 ms), which Go's servers never do.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def answer(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.headers.get("Authorization") != "Bearer authz-webhook-secret":
                self.answer(401, {"message": "no token"})
                return
            if self.path != "/authorize":
                self.answer(404, {"message": "not found"})
                return
            with open(os.path.join(dir_, "reviews.jsonl"), "a") as f:
                f.write(json.dumps(review) + "\n")
            if os.path.exists(os.path.join(dir_, "fail")):
                self.answer(500, {"message": "policy store unavailable"})
                return
            review["status"] = decide(review.get("spec", {}))
            self.answer(200, review)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(dir_, "tls.pem"), os.path.join(dir_, "tls-key.pem"))
    context.load_verify_locations(os.path.join(dir_, "ca.pem"))
    context.verify_mode = ssl.CERT_REQUIRED
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(os.path.join(dir_, "port.tmp"), "w") as f:
        f.write(str(server.server_port))
    os.rename(os.path.join(dir_, "port.tmp"), os.path.join(dir_, "port"))
    server.serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1])
