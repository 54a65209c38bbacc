"""An admission webhook server as users run them (Python standard library, HTTPS), for the
end-to-end tests: /mutate adds a label with a JSONPatch, a warning and an audit annotation, /label another, /deny refuses objects with
a `forbidden` data key, /protect refuses deleting objects labelled protected=true, /hang never answers in time, /garbage answers something that is not an
AdmissionReview; /convert converts Cluster API MachineDeployments between v1beta1 and v1beta2
(a ConversionReview), /convert-fail answers a failed one; GET /stats answers how many connections and requests it has served (it keeps
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

STATS = {"connections": 0, "requests": 0, "conversions": 0}
LOCK = threading.Lock()


def ref_to_v1beta2(ref):
    """A v1beta1 object reference (apiVersion, kind, name) as v1beta2's (apiGroup, kind, name)."""
    out = {k: v for k, v in ref.items() if k in ("kind", "name")}
    out["apiGroup"] = ref.get("apiVersion", "").split("/")[0]
    return out


def ref_to_v1beta1(ref):
    out = {k: v for k, v in ref.items() if k in ("kind", "name")}
    out["apiVersion"] = ref.get("apiGroup", "") + "/v1beta1"
    return out


def convert(obj, desired):
    """A MachineDeployment at `desired` (cluster.x-k8s.io/v1beta1 or v1beta2): the references of
    its machine template and `minReadySeconds`, which v1beta2 moved into the template."""
    obj = json.loads(json.dumps(obj))
    source = obj["apiVersion"]
    obj["apiVersion"] = desired
    if source == desired:
        return obj
    spec = obj.setdefault("spec", {})
    machine = spec.setdefault("template", {}).setdefault("spec", {})
    refs = [(machine, "infrastructureRef"), (machine.get("bootstrap") or {}, "configRef")]
    to_v1beta2 = desired.endswith("/v1beta2")
    for holder, key in refs:
        if holder.get(key):
            holder[key] = (ref_to_v1beta2 if to_v1beta2 else ref_to_v1beta1)(holder[key])
    if to_v1beta2 and "minReadySeconds" in spec:
        machine["minReadySeconds"] = spec.pop("minReadySeconds")
    elif not to_v1beta2 and "minReadySeconds" in machine:
        spec["minReadySeconds"] = machine.pop("minReadySeconds")
    return obj


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
        path = self.path.split("?")[0]
        if path.startswith("/convert"):
            with LOCK:
                STATS["conversions"] += len(request["objects"])
            response = {"uid": request["uid"], "result": {"status": "Success"}}
            if path == "/convert-fail":
                response["result"] = {"status": "Failure", "message": "this converter is broken"}
            else:
                desired = request["desiredAPIVersion"]
                response["convertedObjects"] = [convert(o, desired) for o in request["objects"]]
            self.answer({"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": response})
            return
        response = {"uid": request["uid"], "allowed": True}
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
