"""The official Python client (pip `kubernetes`) against a running server: typed create, get
(the object as the cache holds it), list, a watch from the list's resourceVersion seeing the
create, a merge patch and the delete in order, and a 404 for the deleted object. Prints what it
saw as one JSON object; the Rust test asserts on it. Last, an owner and its child: a foreground
delete of the owner takes the child with it.

    python3 tests/python/client.py http://127.0.0.1:PORT
"""
import json
import sys
import threading
import time

from kubernetes import client, watch

config = client.Configuration()
config.host = sys.argv[1]
core = client.CoreV1Api(client.ApiClient(config))
NS = "default"
seen = {"events": []}

listed = core.list_namespaced_config_map(NS)
ready = threading.Event()


def follow(resource_version):
    stream = watch.Watch()
    ready.set()
    for event in stream.stream(
        core.list_namespaced_config_map,
        NS,
        resource_version=resource_version,
        timeout_seconds=10,
    ):
        seen["events"].append([event["type"], event["object"].metadata.name])
        if len(seen["events"]) == 3:
            stream.stop()


watcher = threading.Thread(target=follow, args=(listed.metadata.resource_version,))
watcher.start()
ready.wait()
created = core.create_namespaced_config_map(
    NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py"), data={"a": "1"})
)
got = core.read_namespaced_config_map("py", NS)
seen["got"] = got.data
seen["same_version"] = got.metadata.resource_version == created.metadata.resource_version
seen["listed"] = [i.metadata.name for i in core.list_namespaced_config_map(NS).items]
core.patch_namespaced_config_map("py", NS, {"data": {"a": "2"}})
core.delete_namespaced_config_map("py", NS)
watcher.join()
try:
    core.read_namespaced_config_map("py", NS)
    seen["after_delete"] = 200
except client.exceptions.ApiException as e:
    seen["after_delete"] = e.status

owner = core.create_namespaced_config_map(
    NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-owner"))
)
reference = client.V1OwnerReference(
    api_version="v1", kind="ConfigMap", name="py-owner", uid=owner.metadata.uid,
    block_owner_deletion=True,
)
core.create_namespaced_config_map(
    NS,
    client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-child", owner_references=[reference])),
)
core.delete_namespaced_config_map(
    "py-owner", NS, body=client.V1DeleteOptions(propagation_policy="Foreground")
)


def gone(name):
    try:
        core.read_namespaced_config_map(name, NS)
        return False
    except client.exceptions.ApiException as e:
        return e.status == 404


deadline = time.monotonic() + 20
while not (gone("py-child") and gone("py-owner")) and time.monotonic() < deadline:
    time.sleep(0.05)
seen["owner_and_child_gone"] = gone("py-child") and gone("py-owner")
print(json.dumps(seen))
