//! Aggregated discovery (`apidiscovery.k8s.io/v2`): `/api` and `/apis` answered as one
//! `APIGroupDiscoveryList` describing every group, version and resource, when the client asks
//! for it in `Accept` (kubectl and client-go do, first); plain discovery stays for the rest.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::media::media_type;
use strategy_host_registry::aggregation::Aggregation;
use strategy_host_registry::{Registry, ServedResource};

/// The content type of an aggregated discovery answer.
pub(crate) const CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery (v2) before plain JSON: entries are
/// taken in the client's order, as client-go lists them by preference.
pub(crate) fn wanted(accept: Option<&str>) -> bool {
    for entry in accept.unwrap_or("").split(',') {
        let mut parts = entry.split(';').map(str::trim);
        let media = media_type(parts.next());
        if media != "application/json" && media != "*/*" {
            continue;
        }
        let params: BTreeMap<String, String> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        if params.get("g").map(String::as_str) == Some("apidiscovery.k8s.io")
            && params.get("v").map(String::as_str) == Some("v2")
            && params.get("as").map(String::as_str) == Some("APIGroupDiscoveryList")
        {
            return true;
        }
        if !params.contains_key("g") {
            // Plain JSON comes first: the client prefers the plain documents.
            return false;
        }
    }
    false
}

fn resource_json(r: &ServedResource, version: &str) -> Value {
    let def = &r.def;
    let kind = json!({"group": def.group, "version": version, "kind": def.kind});
    let mut entry = json!({
        "resource": def.plural,
        "responseKind": kind,
        "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": def.singular,
        "verbs": def.verbs(),
    });
    crate::discovery::add_names(&mut entry, def);
    let subresources: Vec<Value> = def
        .subresources(version)
        .into_iter()
        .map(|s| {
            json!({
                "subresource": s.name,
                "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
                "verbs": s.verbs,
            })
        })
        .collect();
    if !subresources.is_empty() {
        entry["subresources"] = json!(subresources);
    }
    entry
}

/// An extension API server's `APIResourceList.resources` in the aggregated form: each
/// resource with the subresources listed as `resource/subresource` under it.
fn remote_resources(group: &str, version: &str, listed: &[Value]) -> Vec<Value> {
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_string();
    let kind = |r: &Value| {
        json!({"group": r["group"].as_str().unwrap_or(group),
            "version": r["version"].as_str().unwrap_or(version), "kind": text(r, "kind")})
    };
    let mut resources: Vec<Value> = listed
        .iter()
        .filter(|r| !text(r, "name").contains('/'))
        .map(|r| {
            let mut entry = json!({
                "resource": text(r, "name"),
                "responseKind": kind(r),
                "scope": if r["namespaced"] == true { "Namespaced" } else { "Cluster" },
                "singularResource": text(r, "singularName"),
                "verbs": r["verbs"].clone(),
            });
            for key in ["shortNames", "categories"] {
                if r[key].as_array().is_some_and(|a| !a.is_empty()) {
                    entry[key] = r[key].clone();
                }
            }
            entry
        })
        .collect();
    for sub in listed {
        let name = text(sub, "name");
        let Some((parent, subresource)) = name.split_once('/') else {
            continue;
        };
        if let Some(entry) = resources.iter_mut().find(|e| e["resource"] == parent) {
            let subs = entry
                .as_object_mut()
                .map(|e| e.entry("subresources").or_insert_with(|| json!([])));
            if let Some(Value::Array(subs)) = subs {
                subs.push(
                    json!({"subresource": subresource, "responseKind": kind(sub),
                    "verbs": sub["verbs"].clone()}),
                );
            }
        }
    }
    resources.sort_by(|a, b| a["resource"].as_str().cmp(&b["resource"].as_str()));
    resources
}

/// `/api` (`core`: the legacy group alone) or `/apis` (every named group, those of extension
/// API servers included) as an `APIGroupDiscoveryList`: groups and versions in the order
/// `/apis` lists them, resources by name. A remote group/version whose backend did not answer
/// its last discovery is `Stale` with what it listed before; it never fails the document.
pub(crate) fn document(
    registry: &Registry,
    aggregation: Option<&Aggregation>,
    core: bool,
) -> Value {
    // group → version → resources served here
    let mut local: BTreeMap<String, BTreeMap<String, Vec<Value>>> = BTreeMap::new();
    for r in registry.resources() {
        if r.def.group.is_empty() != core {
            continue;
        }
        for v in &r.def.versions {
            local
                .entry(r.def.group.clone())
                .or_default()
                .entry(v.name.clone())
                .or_default()
                .push(resource_json(&r, &v.name));
        }
    }
    let items: Vec<Value> = crate::discovery::groups(registry, aggregation)
        .into_iter()
        .filter(|(group, _)| group.is_empty() == core)
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .filter_map(|version| {
                    let remote = aggregation.and_then(|a| {
                        a.remote(&group, version)?;
                        Some(
                            a.discovery()
                                .version(&format!("{version}.{group}"))
                                .unwrap_or(
                                    strategy_host_registry::aggregation::discovery::RemoteVersion {
                                        resources: Vec::new(),
                                        stale: true,
                                    },
                                ),
                        )
                    });
                    let (resources, freshness) = match remote {
                        Some(r) => (
                            remote_resources(&group, version, &r.resources),
                            if r.stale { "Stale" } else { "Current" },
                        ),
                        None => {
                            let mut resources = local.get(&group)?.get(version)?.clone();
                            resources.sort_by(|a, b| {
                                a["resource"].as_str().cmp(&b["resource"].as_str())
                            });
                            (resources, "Current")
                        }
                    };
                    Some(
                        json!({"version": version, "resources": resources, "freshness": freshness}),
                    )
                })
                .collect();
            json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::wanted;

    #[test]
    fn negotiates_as_client_go_asks() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wanted(Some(kubectl)));
        assert!(!wanted(Some("application/json")));
        assert!(!wanted(None));
        let only_beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(
            !wanted(Some(only_beta)),
            "v2beta1 is not served: plain documents"
        );
        assert!(!wanted(Some(
            "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        )));
    }
}
