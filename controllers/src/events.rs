//! Events the controllers post about the objects they act on: core `v1` Events through the
//! registry (the path clients' Events take), so `kubectl describe` and field selectors on
//! `involvedObject` find them.

use serde_json::json;

use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::system_fields::now_rfc3339;

/// An object an Event is about.
#[derive(Debug, Clone)]
pub struct InvolvedObject<'a> {
    /// Where the object is.
    pub object: &'a ObjectRef,
    /// Its kind.
    pub kind: &'a str,
    /// Its uid.
    pub uid: &'a str,
}

/// Posts Events as one controller (`source.component`).
#[derive(Debug, Clone)]
pub struct EventRecorder {
    client: Client,
    component: &'static str,
}

impl EventRecorder {
    /// A recorder posting through `client` as `component`.
    pub fn new(client: Client, component: &'static str) -> Self {
        Self { client, component }
    }

    /// Posts an Event of `type_` (`Normal`, `Warning`) about `involved`; a failure is logged,
    /// never returned (an Event is advice).
    pub async fn post(
        &self,
        involved: &InvolvedObject<'_>,
        type_: &str,
        reason: &str,
        message: &str,
    ) {
        let object = involved.object;
        // Kubernetes records the Events of cluster-scoped objects in `default`.
        let namespace = object.namespace.as_deref().unwrap_or("default");
        let now = now_rfc3339();
        let api_version = if object.group.is_empty() {
            object.version.clone()
        } else {
            format!("{}/{}", object.group, object.version)
        };
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": format!("{}.", object.name), "namespace": namespace},
            "involvedObject": {
                "apiVersion": api_version,
                "kind": involved.kind,
                "name": object.name,
                "namespace": object.namespace,
                "uid": involved.uid,
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": "",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        });
        if let Err(e) = self
            .client
            .create("", "v1", "events", Some(namespace), event)
            .await
        {
            tracing::debug!(component = self.component, %reason, error = %e, "could not post an event");
        }
    }
}
