"""An extension API server as an outside author writes one (Python standard library, HTTPS),
for the aggregation end-to-end tests. It serves `samples.example.com/v1alpha1` `samples`:
one object, `whoami`, whose spec says who the front proxy said the caller is. It trusts only
the front proxy: a client certificate issued by the request header CA (from
kube-system/extension-apiserver-authentication) with the common name `front-proxy-client`;
the caller is read from X-Remote-User, X-Remote-Group and X-Remote-Extra-*. A watch streams
ADDED, then a MODIFIED every half second. A DELETE of a namespace's samples (deletecollection,
what a namespace's deletion sends) empties that namespace. Each request is appended to
DIR/requests (one JSON line); DIR/port is written once it listens.

    python3 tests/python/extension_apiserver.py CERT KEY REQUESTHEADER_CA DIR
"""
import http.server
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse

CERT, KEY, REQUESTHEADER_CA, DIR = sys.argv[1:5]
GROUP, VERSION = "samples.example.com", "v1alpha1"
PREFIX = f"/apis/{GROUP}/{VERSION}"
LOCK = threading.Lock()
EMPTIED = set()


def record(entry):
    with LOCK, open(os.path.join(DIR, "requests"), "a") as f:
        f.write(json.dumps(entry) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def caller(self):
        extra = {}
        for name, value in self.headers.items():
            if name.lower().startswith("x-remote-extra-"):
                key = urllib.parse.unquote(name[len("x-remote-extra-"):]).lower()
                extra.setdefault(key, []).append(value)
        return {
            "user": self.headers.get("X-Remote-User", ""),
            "groups": self.headers.get_all("X-Remote-Group") or [],
            "extra": extra,
            "sawAuthorization": "Authorization" in self.headers,
            "sawImpersonation": any(h.lower().startswith("impersonate-") for h in self.headers),
        }

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sample(self, namespace, caller, generation=1):
        return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Sample",
                "metadata": {"name": "whoami", "namespace": namespace,
                             "resourceVersion": str(generation), "generation": generation},
                "spec": caller}

    def proxied(self):
        """The request's URL and caller, recorded; None (after a 403) unless the front proxy
        sent it."""
        peer = self.connection.getpeercert()
        subject = dict(x[0] for x in peer.get("subject", ()))
        url = urllib.parse.urlsplit(self.path)
        caller = self.caller()
        record({"method": self.command, "path": url.path, "query": url.query,
                "proxy": subject.get("commonName"), **caller})
        if subject.get("commonName") != "front-proxy-client":
            self.reply(403, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                             "message": "not the front proxy", "reason": "Forbidden", "code": 403})
            return None
        return url, caller

    def do_DELETE(self):
        proxied = self.proxied()
        if proxied is None:
            return
        url, _ = proxied
        parts = url.path[len(PREFIX):].strip("/").split("/")
        if len(parts) == 3 and parts[0] == "namespaces" and parts[2] == "samples":
            with LOCK:
                EMPTIED.add(parts[1])
            return self.reply(200, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                                    "metadata": {}})
        self.reply(405, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "reason": "MethodNotAllowed", "code": 405,
                         "message": "the server does not allow this method on the requested resource"})

    def do_GET(self):
        proxied = self.proxied()
        if proxied is None:
            return
        url, caller = proxied
        query = urllib.parse.parse_qs(url.query)
        if url.path == PREFIX:
            return self.reply(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                    "groupVersion": f"{GROUP}/{VERSION}",
                                    "resources": [{"name": "samples", "singularName": "sample",
                                                   "namespaced": True, "kind": "Sample",
                                                   "verbs": ["get", "list", "watch", "deletecollection"]}]})
        parts = url.path[len(PREFIX):].strip("/").split("/")
        if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] == "samples":
            namespace = parts[1]
            with LOCK:
                emptied = namespace in EMPTIED
            if len(parts) == 4:
                if parts[3] != "whoami" or emptied:
                    return self.reply(404, {"kind": "Status", "apiVersion": "v1",
                                            "status": "Failure", "reason": "NotFound",
                                            "message": f'samples.{GROUP} "{parts[3]}" not found',
                                            "code": 404})
                return self.reply(200, self.sample(namespace, caller))
            if query.get("watch", ["false"])[0] in ("true", "1"):
                return self.watch(namespace, caller)
            return self.reply(200, {"apiVersion": f"{GROUP}/{VERSION}", "kind": "SampleList",
                                    "metadata": {"resourceVersion": "1"},
                                    "items": [] if emptied else [self.sample(namespace, caller)]})
        self.reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "reason": "NotFound", "message": "the server could not find the requested resource",
                         "code": 404})

    def watch(self, namespace, caller):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for generation in range(1, 60):
                kind = "ADDED" if generation == 1 else "MODIFIED"
                line = json.dumps({"type": kind, "object": self.sample(namespace, caller, generation)}) + "\n"
                data = line.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                time.sleep(0.5)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass


def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERT, KEY)
    context.load_verify_locations(REQUESTHEADER_CA)
    context.verify_mode = ssl.CERT_REQUIRED
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(os.path.join(DIR, "port.tmp"), "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
    server.serve_forever()


if __name__ == "__main__":
    main()
