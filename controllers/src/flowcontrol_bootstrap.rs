//! API priority and fairness' bootstrap configuration, as kube-apiserver keeps it
//! (`registry::flowcontrol`): the mandatory and suggested FlowSchemas and
//! PriorityLevelConfigurations are created when missing and, while their
//! `apf.kubernetes.io/autoupdate-spec` annotation is `"true"`, have their spec put back at every
//! start; an operator who sets the annotation to `"false"` keeps theirs.

use std::sync::Arc;

use serde_json::{json, Value};

use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::flowcontrol::{self, AUTOUPDATE};
use strategy_host_registry::system_fields::{annotation, meta_str};
use strategy_host_registry::{Registry, Result};

const GROUP: &str = "flowcontrol.apiserver.k8s.io";
const VERSION: &str = "v1";

/// Creates the bootstrap objects that are missing and puts back the spec of those that may be
/// updated; failures are logged (the next start tries again).
pub async fn ensure_configuration(registry: &Arc<Registry>) {
    const MANAGER: &str = "api-priority-and-fairness-config-producer";
    let client = Client::new(registry, MANAGER);
    for wanted in flowcontrol::mandatory()
        .into_iter()
        .chain(flowcontrol::suggested())
    {
        let plural = flowcontrol::plural_of(&wanted);
        let name = meta_str(&wanted, "name").unwrap_or_default().to_string();
        if let Err(e) = ensure(&client, plural, &name, wanted).await {
            tracing::warn!(%plural, %name, error = %e, "could not ensure API priority and fairness configuration");
        }
    }
}

async fn ensure(client: &Client, plural: &str, name: &str, wanted: Value) -> Result<()> {
    let object = ObjectRef::new(GROUP, VERSION, plural, None, name);
    match client.get(&object).await? {
        None => match client.create(GROUP, VERSION, plural, None, wanted).await {
            Err(e) if !e.is_already_exists() => Err(e),
            _ => Ok(()),
        },
        Some(existing) => {
            let autoupdate = annotation(&existing, AUTOUPDATE) != Some("false");
            if !autoupdate || existing["spec"] == wanted["spec"] {
                return Ok(());
            }
            let uid = meta_str(&existing, "uid").unwrap_or_default().to_string();
            client
                .update(&object, &uid, None, move |o| {
                    o["spec"] = wanted["spec"].clone();
                    o["metadata"]["annotations"][AUTOUPDATE] = json!("true");
                    true
                })
                .await
        }
    }
}
