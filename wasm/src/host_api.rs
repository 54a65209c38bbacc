//! The wasm runtime's `HostApi` backed by the registry: a strategy's `get` and `list` read
//! through each resource's cache, and its `apply` is a server-side apply through the target
//! resource's own store (and so its own strategy), at the hook depth the runtime gives, as the
//! user `system:strategy:<module>` and the field manager named after the module.

use std::sync::{Arc, Weak};

use serde_json::Value;

use crate::user::UserInfo;
use strategy_host_apimachinery::group_version;
use strategy_host_registry::client::{Client, ListParams, ObjectRef};
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::{Registry, ServedResource};
use strategy_host_wasm_runtime::{CallerInfo, Collection, HostApi, HostCallError};

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

    /// The served resource of `objects` (at any version).
    fn served(&self, objects: &Collection<'_>) -> Result<ServedResource, HostCallError> {
        let Collection { group, plural, .. } = *objects;
        self.registry()?
            .resources()
            .into_iter()
            .find(|r| r.def.group == group && r.def.plural == plural)
            .ok_or_else(|| HostCallError::NotServed(format!("{plural}.{group}")))
    }

    /// The object `name` of `objects`, at its storage version.
    fn object_ref(r: &ServedResource, namespace: &str, name: &str) -> ObjectRef {
        let namespace = (!namespace.is_empty() && r.def.namespaced).then_some(namespace);
        ObjectRef::new(
            &r.def.group,
            r.def.storage_version(),
            &r.def.plural,
            namespace,
            name,
        )
    }

    /// The client `caller` acts through: a module's writes are owned by the module, as a
    /// controller's are by its name, and made as the module (`system:strategy:<module>`): its
    /// `apply` reaches only the kinds its manifest declares (checked by the runtime), and the
    /// target's strategy and the audit see who wrote.
    fn client(&self, caller: &CallerInfo) -> Result<Client, HostCallError> {
        let user = UserInfo {
            username: format!("system:strategy:{}", caller.module),
            groups: vec!["system:strategies".into(), "system:authenticated".into()],
            ..UserInfo::default()
        };
        Ok(Client::new(&self.registry()?, caller.module.as_str())
            .as_user(Arc::new(user))
            .with_request_id(caller.request_id.as_str())
            .dry_run(caller.dry_run))
    }
}

impl HostApi for RegistryHostApi {
    fn get(
        &self,
        caller: &CallerInfo,
        objects: Collection<'_>,
        name: &str,
    ) -> Result<Option<Value>, HostCallError> {
        let r = self.served(&objects)?;
        let object = Self::object_ref(&r, objects.namespace, name);
        let client = self.client(caller)?;
        self.runtime
            .block_on(client.get_cached(&object))
            .map_err(HostCallError::failed)
    }

    fn list(
        &self,
        caller: &CallerInfo,
        objects: Collection<'_>,
        label_selector: &str,
    ) -> Result<Vec<Value>, HostCallError> {
        let r = self.served(&objects)?;
        let collection = Self::object_ref(&r, objects.namespace, "");
        let params = ListParams {
            label_selector: Some(label_selector.to_owned()),
            cached: true,
            ..ListParams::default()
        };
        let client = self.client(caller)?;
        self.runtime
            .block_on(client.list_with(&collection, &params))
            .map_err(HostCallError::failed)
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
        let (group, version) = group_version(api_version);
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
        let name = meta_str(&object, "name").unwrap_or_default();
        if name.is_empty() {
            return Err(HostCallError::NoName);
        }
        let mut target =
            Self::object_ref(&r, meta_str(&object, "namespace").unwrap_or_default(), name);
        target.version = version.to_string();
        // Server-side apply as the module's field manager, forced as a controller applies:
        // fields other managers set stay theirs, and the write decides on the state it changes.
        let client = self.client(caller)?.at_hook_depth(depth);
        self.runtime
            .block_on(client.apply(&target, object, true))
            .map_err(HostCallError::failed)
    }
}
