"""A minimal OCI pusher independent of the server's code: pushes one file as the single layer of
an OCI image manifest with the media types given, over the distribution API with urllib only
(POST an upload, PUT the blob, PUT the manifest), and prints the manifest's digest.

Usage: oci_push.py HOST REPOSITORY TAG FILE LAYER_MEDIA_TYPE CONFIG_MEDIA_TYPE [--index]

With --index the tag names an image index whose one entry (platform wasm/wasip1) is the manifest,
as multi-platform pushers write it.
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
    manifest_type = "application/vnd.oci.image.manifest.v1+json"
    if "--index" in sys.argv[7:]:
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        put_manifest(base, repository, digest, body, manifest_type)
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [
                {
                    "mediaType": manifest_type,
                    "digest": digest,
                    "size": len(body),
                    "platform": {"architecture": "wasm", "os": "wasip1"},
                }
            ],
        }
        body = json.dumps(index).encode()
        manifest_type = index["mediaType"]
    put_manifest(base, repository, tag, body, manifest_type)
    print("sha256:" + hashlib.sha256(body).hexdigest())


def put_manifest(base, repository, reference, body, media_type):
    request(
        "PUT",
        f"{base}/v2/{repository}/manifests/{reference}",
        body,
        {"Content-Type": media_type},
    )


if __name__ == "__main__":
    main()
