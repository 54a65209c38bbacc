//! The wasm runtime's `HostApi` backed by the registry: a strategy's `get` and `list` read
//! through each resource's cache, and its `apply` is a server-side apply through the target
//! resource's own store (and so its own strategy), at the hook depth the runtime gives, as the
//! user `system:strategy:<module>` and the field manager named after the module.

use std::sync::{Arc, Weak};

use serde_json::Value;

use super::runtime::{CallerInfo, Collection, HostApi, HostCallError};
use crate::registry::system_fields::meta_str;
use crate::registry::{Registry, RequestScope, ServedResource};
use crate::storage::{GetOptions, LabelSelector, ListOptions, SelectionPredicate};
use crate::user::UserInfo;

/// Host functions over a registry (held weakly: the runtime outlives nothing).
pub struct RegistryHostApi {
    registry: Weak<Registry>,
    runtime: tokio::runtime::Handle,
}

impl RegistryHostApi {
    /// Host functions over `registry`, running its futures on the current tokio runtime.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn new(registry: &Arc<Registry>) -> Self {
        Self {
            registry: Arc::downgrade(registry),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    fn registry(&self) -> Result<Arc<Registry>, HostCallError> {
        self.registry.upgrade().ok_or(HostCallError::ShuttingDown)
    }

    /// The served resource of `objects`, and the scope `caller` reads it in.
    fn read(
        &self,
        caller: &CallerInfo,
        objects: Collection<'_>,
    ) -> Result<(ServedResource, RequestScope), HostCallError> {
        let Collection {
            group,
            plural,
            namespace,
        } = objects;
        let r = self
            .registry()?
            .resources()
            .into_iter()
            .find(|r| r.def.group == group && r.def.plural == plural)
            .ok_or_else(|| HostCallError::NotServed(format!("{plural}.{group}")))?;
        let scope = Self::scope(&r, caller, namespace);
        Ok((r, scope))
    }

    fn scope(r: &ServedResource, caller: &CallerInfo, namespace: &str) -> RequestScope {
        RequestScope {
            version: r.def.storage_version().to_string(),
            namespace: (!namespace.is_empty() && r.def.namespaced).then(|| namespace.to_string()),
            dry_run: caller.dry_run,
            request_id: caller.request_id.clone(),
            // A module's writes are owned by the module, as a controller's are by its name.
            field_manager: caller.module.clone(),
            // And made as the module: its `apply` reaches only the kinds its manifest declares
            // (checked by the runtime), and the target's strategy and the audit see who wrote.
            user: Arc::new(UserInfo {
                username: format!("system:strategy:{}", caller.module),
                groups: vec!["system:strategies".into(), "system:authenticated".into()],
                ..UserInfo::default()
            }),
            ..Default::default()
        }
    }
}

impl HostApi for RegistryHostApi {
    fn get(
        &self,
        caller: &CallerInfo,
        objects: Collection<'_>,
        name: &str,
    ) -> Result<Option<Value>, HostCallError> {
        let (r, scope) = self.read(caller, objects)?;
        let opts = GetOptions {
            resource_version: "0".into(),
            ignore_not_found: false,
        };
        match self.runtime.block_on(r.store.get(&scope, name, opts)) {
            Ok(obj) => Ok(Some(obj)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(HostCallError::failed(e)),
        }
    }

    fn list(
        &self,
        caller: &CallerInfo,
        objects: Collection<'_>,
        label_selector: &str,
    ) -> Result<Vec<Value>, HostCallError> {
        let (r, scope) = self.read(caller, objects)?;
        let label = LabelSelector::parse(label_selector).map_err(HostCallError::failed)?;
        let opts = ListOptions {
            resource_version: "0".into(),
            predicate: SelectionPredicate {
                label,
                ..Default::default()
            },
            ..Default::default()
        };
        let list = self
            .runtime
            .block_on(r.store.list(&scope, opts))
            .map_err(HostCallError::failed)?;
        Ok(list.item_values())
    }

    fn apply(
        &self,
        caller: &CallerInfo,
        depth: u32,
        object: Value,
    ) -> Result<Value, HostCallError> {
        let registry = self.registry()?;
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (group, version) = crate::storage::object::group_version(api_version);
        let r = registry
            .resources()
            .into_iter()
            .find(|r| {
                r.def.group == group && r.def.kind == kind && r.def.version(version).is_some()
            })
            .ok_or_else(|| HostCallError::NoServedKind {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
            })?;
        let name = meta_str(&object, "name").unwrap_or_default().to_string();
        let namespace = meta_str(&object, "namespace").unwrap_or_default();
        let mut scope = Self::scope(&r, caller, namespace);
        scope.version = version.to_string();
        scope.hook_depth = depth;
        if name.is_empty() {
            return Err(HostCallError::NoName);
        }
        // Server-side apply as the module's field manager, forced as a controller applies:
        // fields other managers set stay theirs, and the write decides on the state it changes.
        let store = r.store.clone();
        let write = async move { store.apply(&scope, &name, object, true).await };
        self.runtime
            .block_on(write)
            .map(|o| o.object)
            .map_err(HostCallError::failed)
    }
}
