"""The official Python client (pip `kubernetes`) reading an aggregated API through the
aggregator, for the aggregation end-to-end test: lists and gets `samples.example.com/v1alpha1`
samples (served by tests/python/extension_apiserver.py) and reads the first two events of a
watch. Prints what it saw as one JSON object.

    python3 tests/python/aggregated_client.py https://127.0.0.1:PORT CA_FILE TOKEN
"""
import json
import sys

from kubernetes import client, watch

config = client.Configuration()
config.host = sys.argv[1]
config.ssl_ca_cert = sys.argv[2]
config.api_key = {"authorization": "Bearer " + sys.argv[3]}
api = client.CustomObjectsApi(client.ApiClient(config))
args = ("samples.example.com", "v1alpha1", "default", "samples")

listed = api.list_namespaced_custom_object(*args)
got = api.get_namespaced_custom_object(*args, "whoami")
events = []
stream = watch.Watch()
for event in stream.stream(api.list_namespaced_custom_object, *args, timeout_seconds=5):
    events.append(event["type"])
    if len(events) == 2:
        stream.stop()
print(json.dumps({
    "listed": [i["metadata"]["name"] for i in listed["items"]],
    "user": got["spec"]["user"],
    "events": events,
}))
