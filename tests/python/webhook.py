"""An admission webhook server as users run them (Python standard library, HTTPS), for the
end-to-end tests: /mutate adds a label with a JSONPatch, a warning and an audit annotation, /label another, /deny refuses objects with
a `forbidden` data key, /protect refuses deleting objects labelled protected=true, /hang never answers in time, /garbage answers something that is not an
AdmissionReview; GET /stats answers how many connections and requests it has served (it keeps
connections open between requests, as HTTP/1.1 servers do). Prints `ready PORT` once it listens.

    python3 tests/python/webhook.py CERT_FILE KEY_FILE
"""
import base64
import http.server
import json
import socket
import ssl
import sys
import threading
import time

STATS = {"connections": 0, "requests": 0}
LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # Headers and body go out in two writes: without this, Nagle holds the body until the
        # client's delayed ACK (40 ms), which Go's servers never do.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with LOCK:
            STATS["connections"] += 1

    def do_GET(self):
        with LOCK:
            self.answer(dict(STATS))

    def answer(self, body):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        with LOCK:
            STATS["requests"] += 1
        length = int(self.headers.get("Content-Length", 0))
        review = json.loads(self.rfile.read(length))
        request = review["request"]
        response = {"uid": request["uid"], "allowed": True}
        path = self.path.split("?")[0]
        obj = request.get("object") or {}
        if path == "/mutate":
            ops = []
            if not obj.get("metadata", {}).get("labels"):
                ops.append({"op": "add", "path": "/metadata/labels", "value": {}})
            ops.append({"op": "add", "path": "/metadata/labels/mutated-by", "value": "webhook"})
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
            response["warnings"] = ["mutated by the test webhook"]
            response["auditAnnotations"] = {"mutated": "true"}
        elif path == "/label":
            ops = []
            if not obj.get("metadata", {}).get("labels"):
                ops.append({"op": "add", "path": "/metadata/labels", "value": {}})
            ops.append({"op": "add", "path": "/metadata/labels/labelled", "value": "true"})
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        elif path == "/deny":
            if "forbidden" in (obj.get("data") or {}):
                response = {"uid": request["uid"], "allowed": False,
                            "status": {"code": 403, "reason": "Forbidden", "message": "forbidden key"}}
        elif path == "/protect":
            labels = (request.get("oldObject") or {}).get("metadata", {}).get("labels") or {}
            if request["operation"] == "DELETE" and labels.get("protected") == "true":
                response = {"uid": request["uid"], "allowed": False,
                            "status": {"code": 403, "reason": "Forbidden", "message": "protected object"}}
        elif path == "/hang":
            time.sleep(30)
        elif path == "/garbage":
            self.answer(b"this is not an AdmissionReview")
            return
        self.answer({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(f"ready {server.server_address[1]}", flush=True)
server.serve_forever()
