//! Discovery documents: `/api`, `/apis`, `/apis/{group}`, `/api/v1` and
//! `/apis/{group}/{version}`, computed from the served resources on every request, so they
//! follow definition changes at once; the groups of extension API servers come from their
//! APIServices (their `/apis/{group}/{version}` is theirs, proxied). (Aggregated discovery, which clients ask for first, is in
//! `aggregated_discovery.rs`.)

use std::collections::BTreeMap;

use serde_json::{json, Value};

use strategy_host_registry::aggregation::{is_remote, Aggregation};
pub(crate) use strategy_host_registry::definition::compare_versions;
use strategy_host_registry::definition::ResourceDefinition;
use strategy_host_registry::{Registry, ServedResource};

/// group → versions, preferred first, in the order `/apis` lists them: the groups this server
/// serves and those APIServices name a Service for (`aggregation`), ordered as kube-aggregator
/// orders them — by the highest `groupPriorityMinimum` of the group's APIServices, then by
/// name; versions by `versionPriority`, then Kubernetes' version order.
pub(crate) fn groups(
    registry: &Registry,
    aggregation: Option<&Aggregation>,
) -> Vec<(String, Vec<String>)> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in registry.resources() {
        let versions = groups.entry(r.def.group.clone()).or_default();
        for v in &r.def.versions {
            if !versions.contains(&v.name) {
                versions.push(v.name.clone());
            }
        }
    }
    // (group priority, version priority) of each APIService's group/version.
    let mut priorities: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
    for apiservice in aggregation
        .map(|a| a.apiservices().state())
        .unwrap_or_default()
    {
        let spec = &apiservice["spec"];
        let group = spec["group"].as_str().unwrap_or_default().to_string();
        let version = spec["version"].as_str().unwrap_or_default().to_string();
        let priority = |key: &str| spec[key].as_i64().unwrap_or(0);
        if is_remote(&apiservice) {
            let versions = groups.entry(group.clone()).or_default();
            if !versions.contains(&version) {
                versions.push(version.clone());
            }
        }
        priorities.insert(
            (group, version),
            (
                priority("groupPriorityMinimum"),
                priority("versionPriority"),
            ),
        );
    }
    let group_priority = |group: &str| {
        priorities
            .iter()
            .filter(|((g, _), _)| g == group)
            .map(|(_, (p, _))| *p)
            .max()
            .unwrap_or(0)
    };
    let mut ordered: Vec<(String, Vec<String>)> = groups.into_iter().collect();
    for (group, versions) in &mut ordered {
        let version_priority = |v: &String| {
            priorities
                .get(&(group.clone(), v.clone()))
                .map_or(0, |p| p.1)
        };
        versions.sort_by(|a, b| {
            version_priority(b)
                .cmp(&version_priority(a))
                .then_with(|| compare_versions(a, b))
        });
    }
    ordered.sort_by(|(a, _), (b, _)| {
        group_priority(b)
            .cmp(&group_priority(a))
            .then_with(|| a.cmp(b))
    });
    ordered
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

/// `/api`.
pub(crate) fn core_versions() -> Value {
    json!({"kind": "APIVersions", "apiVersion": "v1", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]})
}

/// `/apis`.
pub(crate) fn group_list(registry: &Registry, aggregation: Option<&Aggregation>) -> Value {
    let groups: Vec<Value> = groups(registry, aggregation)
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, v)| group_json(g, v))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if served (here or by an extension API server).
pub(crate) fn group(
    registry: &Registry,
    aggregation: Option<&Aggregation>,
    name: &str,
) -> Option<Value> {
    let groups = groups(registry, aggregation);
    let (_, versions) = groups
        .iter()
        .find(|(g, _)| g == name)
        .filter(|_| !name.is_empty())?;
    let mut g = group_json(name, versions);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

/// Adds the definition's `shortNames` and `categories` to a discovery entry, where it has any.
pub(crate) fn add_names(entry: &mut Value, def: &ResourceDefinition) {
    if !def.short_names.is_empty() {
        entry["shortNames"] = json!(def.short_names);
    }
    if !def.categories.is_empty() {
        entry["categories"] = json!(def.categories);
    }
}

fn resource_entries(r: &ServedResource, version: &str) -> Vec<Value> {
    let def = &r.def;
    let mut entry = json!({
        "name": def.plural,
        "singularName": def.singular,
        "namespaced": def.namespaced,
        "kind": def.kind,
        "verbs": def.verbs(),
    });
    add_names(&mut entry, def);
    if def.version(version).is_some_and(|v| v.storage) {
        entry["storageVersionHash"] = json!(crate::openapi::short_hash(&format!(
            "{}/{}/{}",
            def.group, version, def.kind
        )));
    }
    let mut entries = vec![entry];
    for sub in def.subresources(version) {
        let mut e = json!({
            "name": format!("{}/{}", def.plural, sub.name),
            "singularName": "",
            "namespaced": def.namespaced,
            "kind": sub.kind,
            "verbs": sub.verbs,
        });
        if sub.group != def.group {
            e["group"] = json!(sub.group);
            e["version"] = json!(sub.version);
        }
        entries.push(e);
    }
    entries
}

/// The resources `registry` serves at `group`/`version`; `None` when it serves none there (the
/// group-version is not served at all).
pub(crate) fn served_at(
    registry: &Registry,
    group: &str,
    version: &str,
) -> Option<Vec<ServedResource>> {
    let served: Vec<ServedResource> = registry
        .resources()
        .into_iter()
        .filter(|r| r.def.group == group && r.def.version(version).is_some())
        .collect();
    (!served.is_empty()).then_some(served)
}

/// `/api/v1` or `/apis/{group}/{version}`, if served.
pub(crate) fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let served = served_at(registry, group, version)?;
    let resources: Vec<Value> = served
        .iter()
        .flat_map(|r| resource_entries(r, version))
        .collect();
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_priority() {
        let mut v = vec!["v1alpha1", "v1", "v2beta1", "v2", "v1beta2", "foo"];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(v, vec!["v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "foo"]);
    }
}
