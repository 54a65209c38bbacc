//! Ties module manifests to the served resources: a module whose manifest disagrees with a
//! served definition (plural, scope, version) or names a built-in resource is refused before the
//! swap, and a module that declares a resource nobody serves yet creates its
//! CustomResourceDefinition, so dropping one `.wasm` file adds a served resource.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use crate::strategy::ResourceInfo;
use crate::{ConversionSample, ModuleState, ModuleStatus, ModuleTable, Refusal};
use strategy_host_registry::client::{Client, ListParams, ObjectRef};
use strategy_host_registry::definition::CRD_GROUP;
use strategy_host_registry::Registry;

/// Installs the manifest check on `table` and, until the registry is dropped, creates the
/// definitions of resources that active modules declare and nobody serves.
pub fn start(table: &Arc<ModuleTable>, registry: &Arc<Registry>) {
    let weak = Arc::downgrade(registry);
    table.set_resource_check(Arc::new(move |r: &ResourceInfo| match weak.upgrade() {
        Some(registry) => check(&registry, r),
        None => Ok(()),
    }));
    let weak = Arc::downgrade(registry);
    let runtime = tokio::runtime::Handle::current();
    table.set_conversion_samples(Arc::new(move |r: &ResourceInfo| {
        let registry = weak.upgrade()?;
        conversion_sample(&registry, &runtime, r)
    }));
    // Subscribe before reading the current statuses, so no activation falls between the two.
    let mut events = table.subscribe();
    let current = table.statuses();
    let weak = Arc::downgrade(registry);
    tokio::spawn(async move {
        for status in current {
            let Some(registry) = weak.upgrade() else {
                return;
            };
            define_missing(&registry, &status).await;
        }
        loop {
            let status = match events.recv().await {
                Ok(s) => s,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            };
            let Some(registry) = weak.upgrade() else {
                return;
            };
            define_missing(&registry, &status).await;
        }
    });
}

/// The most stored objects a converting module's round-trip check tries.
const CONVERSION_SAMPLE: usize = 20;

/// What a module converting `r` is tried on before its swap: the served versions and some
/// objects from the cache (none when `r` has one version). Read on a thread of its own: the
/// check runs where a module is compiled (a blocking thread, or the directory watcher's), and
/// must not await on it.
fn conversion_sample(
    registry: &Arc<Registry>,
    runtime: &tokio::runtime::Handle,
    r: &ResourceInfo,
) -> Option<ConversionSample> {
    let served = registry
        .resources()
        .into_iter()
        .find(|s| s.def.group == r.group && s.def.kind == r.kind)?;
    let def = served.def.clone();
    if def.versions.len() < 2 {
        return None;
    }
    let api_versions = def
        .versions
        .iter()
        .map(|v| def.api_version(&v.name))
        .collect();
    let collection = ObjectRef::new(&def.group, def.storage_version(), &def.plural, None, "");
    let params = ListParams {
        cached: true,
        limit: Some(CONVERSION_SAMPLE as u64),
        ..ListParams::default()
    };
    let client = Client::new(registry, "strategy-host").with_request_id("conversion-sample");
    let runtime = runtime.clone();
    let read = std::thread::spawn(move || {
        runtime.block_on(async {
            // Made inside the runtime: a timer needs its clock.
            tokio::time::timeout(
                std::time::Duration::from_secs(2),
                client.list_with(&collection, &params),
            )
            .await
        })
    });
    let mut objects = read.join().ok()?.ok()?.ok()?;
    objects.truncate(CONVERSION_SAMPLE);
    Some(ConversionSample {
        api_versions,
        objects,
    })
}

/// May a module serve `r`, given what the registry serves now?
fn check(registry: &Registry, r: &ResourceInfo) -> Result<(), Refusal> {
    let Some(served) = registry
        .resources()
        .into_iter()
        .find(|s| s.def.group == r.group && s.def.kind == r.kind)
    else {
        return Ok(());
    };
    let def = &served.def;
    if def.builtin && !def.module_strategy {
        return Err(Refusal::BuiltinKept);
    }
    if def.plural != r.plural {
        return Err(Refusal::Plural {
            declared: r.plural.clone(),
            served: def.plural.clone(),
        });
    }
    if def.namespaced != r.namespaced {
        let scope = |n: bool| if n { "Namespaced" } else { "Cluster" };
        return Err(Refusal::Scope {
            declared: scope(r.namespaced),
            served: scope(def.namespaced),
        });
    }
    if def.version(&r.version).is_none() {
        return Err(Refusal::Version(r.version.clone()));
    }
    Ok(())
}

/// The definition a module's declared resource gets: its names and scope, one version storing
/// whatever the module accepts (the module validates), with a status subresource.
pub fn definition_for(r: &ResourceInfo, module: &str) -> Value {
    json!({
        "apiVersion": format!("{CRD_GROUP}/v1"),
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{}.{}", r.plural, r.group),
            "annotations": {"strategyhost.io/declared-by": module},
        },
        "spec": {
            "group": r.group,
            "names": {
                "plural": r.plural,
                "singular": r.kind.to_lowercase(),
                "kind": r.kind,
                "listKind": format!("{}List", r.kind),
            },
            "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
            "versions": [{
                "name": r.version,
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    })
}

async fn define_missing(registry: &Arc<Registry>, status: &ModuleStatus) {
    if status.state != ModuleState::Active {
        return;
    }
    let module = status.module.clone().unwrap_or_default();
    for r in &status.resources {
        let served = registry
            .resources()
            .iter()
            .any(|s| s.def.group == r.group && s.def.kind == r.kind);
        if served || r.group.is_empty() {
            continue;
        }
        let client =
            Client::new(registry, "strategy-host").with_request_id(format!("declared-by-{module}"));
        let created = client
            .create(
                CRD_GROUP,
                "v1",
                "customresourcedefinitions",
                None,
                definition_for(r, &module),
            )
            .await;
        match created {
            Ok(_) => tracing::info!(
                module,
                group = r.group,
                kind = r.kind,
                "created the definition of a resource the module declares"
            ),
            Err(e) if e.is_already_exists() => {}
            Err(e) => tracing::warn!(
                module,
                group = r.group,
                kind = r.kind,
                error = %e,
                "could not define a resource the module declares"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategy_host_registry::definition::ResourceDefinition;

    #[test]
    fn a_declared_resource_becomes_a_valid_definition() {
        let r = ResourceInfo {
            group: "ops.example.com".into(),
            version: "v1".into(),
            kind: "Backup".into(),
            plural: "backups".into(),
            namespaced: false,
        };
        let def = ResourceDefinition::from_crd(&definition_for(&r, "backup")).unwrap();
        assert_eq!(
            (def.group.as_str(), def.plural.as_str(), def.kind.as_str()),
            ("ops.example.com", "backups", "Backup")
        );
        assert!(!def.namespaced);
        assert!(def.version("v1").is_some_and(|v| v.status_subresource));
    }
}
