//! Aggregated discovery (`apidiscovery.k8s.io/v2`): `/api` and `/apis` answered as one
//! `APIGroupDiscoveryList` describing every group, version and resource, when the client asks
//! for it in `Accept` (kubectl and client-go do, first); plain discovery stays for the rest.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::discovery::compare_versions;
use super::media::media_type;
use crate::registry::{Registry, ServedResource};

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
    if !def.short_names.is_empty() {
        entry["shortNames"] = json!(def.short_names);
    }
    if !def.categories.is_empty() {
        entry["categories"] = json!(def.categories);
    }
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

/// `/api` (`core`: the legacy group alone) or `/apis` (every named group) as an
/// `APIGroupDiscoveryList`: groups by name, versions preferred first, resources by name.
pub(crate) fn document(registry: &Registry, core: bool) -> Value {
    // group → version → resources
    let mut groups: BTreeMap<String, BTreeMap<String, Vec<Value>>> = BTreeMap::new();
    for r in registry.resources() {
        if r.def.group.is_empty() != core {
            continue;
        }
        for v in &r.def.versions {
            groups
                .entry(r.def.group.clone())
                .or_default()
                .entry(v.name.clone())
                .or_default()
                .push(resource_json(&r, &v.name));
        }
    }
    let items: Vec<Value> = groups
        .into_iter()
        .map(|(group, versions)| {
            let mut versions: Vec<(String, Vec<Value>)> = versions.into_iter().collect();
            versions.sort_by(|a, b| compare_versions(&a.0, &b.0));
            let versions: Vec<Value> = versions
                .into_iter()
                .map(|(version, mut resources)| {
                    resources.sort_by(|a, b| a["resource"].as_str().cmp(&b["resource"].as_str()));
                    json!({"version": version, "resources": resources, "freshness": "Current"})
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
