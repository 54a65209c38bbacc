"""A kopf operator as users write them: each Widget gets a child ConfigMap it adopts
(kopf.adopt: ownerReferences with controller and blockOwnerDeletion), and an Event on the Widget
saying so. Deleting the Widget must remove the child (the server's garbage collector).

    KUBECONFIG=... python3 -m kopf run --standalone -n default tests/python/operator.py
"""
import kopf
from kubernetes import client, config


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.posting.level = 20  # INFO: the operator's own Events are posted
    config.load_kube_config()


@kopf.on.create("example.com", "v1", "widgets")
def create_child(body, name, namespace, **_):
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-child"},
        "data": {"size": str(body["spec"]["size"])},
    }
    kopf.adopt(child)
    client.CoreV1Api().create_namespaced_config_map(namespace, child)
    kopf.info(body, reason="ChildCreated", message=f"created ConfigMap {name}-child")
    return {"child": f"{name}-child"}
