"""A minimal OCI pusher independent of the server's code: pushes one file as the single layer of
an OCI image manifest with the media types given, over the distribution API with urllib only
(POST an upload, PUT the blob, PUT the manifest), and prints the manifest's digest.

Usage: oci_push.py HOST REPOSITORY TAG FILE LAYER_MEDIA_TYPE CONFIG_MEDIA_TYPE
"""

import hashlib
import json
import sys
import urllib.parse
import urllib.request


def request(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(req) as resp:
        return resp.status, dict(resp.headers), resp.read()


def push_blob(base, repository, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    _, headers, _ = request("POST", f"{base}/v2/{repository}/blobs/uploads/", b"")
    location = urllib.parse.urljoin(base, headers["Location"])
    separator = "&" if "?" in location else "?"
    request(
        "PUT",
        f"{location}{separator}digest={urllib.parse.quote(digest)}",
        data,
        {"Content-Type": "application/octet-stream"},
    )
    return {"digest": digest, "size": len(data)}


def main():
    host, repository, tag, path, layer_type, config_type = sys.argv[1:7]
    base = f"http://{host}"
    with open(path, "rb") as f:
        layer = f.read()
    config = json.dumps({"architecture": "wasm", "os": "wasip1"}).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(push_blob(base, repository, config), mediaType=config_type),
        "layers": [dict(push_blob(base, repository, layer), mediaType=layer_type)],
    }
    body = json.dumps(manifest).encode()
    request(
        "PUT",
        f"{base}/v2/{repository}/manifests/{tag}",
        body,
        {"Content-Type": "application/vnd.oci.image.manifest.v1+json"},
    )
    print("sha256:" + hashlib.sha256(body).hexdigest())


if __name__ == "__main__":
    main()
