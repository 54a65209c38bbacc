//! The registry's loopback client, how the server's own parts act (controllers, quota
//! admission, module sources, the modules' host functions): the registry's own verbs (get,
//! list, create, update, apply, delete) with registry-owned parameters, as the server's
//! identity (or a user's) with the caller's field manager, so every object's strategy,
//! finalizers, hooks and propagation apply exactly as to a client's request.

use std::sync::Arc;

use serde_json::Value;

use strategy_host_apimachinery::LabelSelector;

use crate::system_fields::meta_str;
use crate::user::UserInfo;
use crate::{DeleteOptions, Error, Registry, RequestScope, Result, ServedResource, UpdateFn};
use strategy_host_storage::{GetOptions, ListOptions, Preconditions, SelectionPredicate};

/// One object a controller acts on: its resource and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// The group of its resource.
    pub group: String,
    /// The version to speak to it at.
    pub version: String,
    /// Its resource's plural.
    pub plural: String,
    /// Its namespace (none for a cluster-scoped object).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl ObjectRef {
    /// The object `name` of `group`/`version`/`plural`, in `namespace` (none: cluster-scoped).
    pub fn new(
        group: &str,
        version: &str,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            namespace: namespace.map(String::from),
            name: name.into(),
        }
    }
}

/// How a list reads (kube-client's `ListParams`, of what in-process callers ask).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    /// Only the objects this label selector (`app=web,tier!=db`) selects.
    pub label_selector: Option<String>,
    /// At most this many objects (the first page).
    pub limit: Option<u64>,
    /// As the watch cache holds them (`resourceVersion=0`: no round trip to the store), not a
    /// consistent read.
    pub cached: bool,
}

/// An in-process caller's handle on the registry (a controller's, an admission plugin's, a
/// module's host functions').
#[derive(Debug, Clone)]
pub struct Client {
    registry: std::sync::Weak<Registry>,
    /// The field manager its writes are recorded under.
    manager: Arc<str>,
    /// Who it acts as; the server itself when none.
    user: Option<Arc<UserInfo>>,
    /// For logs; the manager's name when none.
    request_id: Option<Arc<str>>,
    /// Writes are dry runs.
    dry_run: bool,
    /// The After-hook depth of its writes.
    hook_depth: u32,
}

impl Client {
    /// A client of `registry` acting as the server, writing as `manager`.
    pub fn new(registry: &Arc<Registry>, manager: impl Into<Arc<str>>) -> Self {
        Self {
            registry: Arc::downgrade(registry),
            manager: manager.into(),
            user: None,
            request_id: None,
            dry_run: false,
            hook_depth: 0,
        }
    }

    /// The same client acting as `user` (whose admission and audit see who wrote).
    #[must_use]
    pub fn as_user(mut self, user: Arc<UserInfo>) -> Self {
        self.user = Some(user);
        self
    }

    /// The same client naming its requests `request_id` in logs.
    #[must_use]
    pub fn with_request_id(mut self, request_id: impl Into<Arc<str>>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// The same client making its writes dry runs when `dry_run` is set.
    #[must_use]
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// The same client writing at After-hook depth `depth` (a write a hook makes).
    #[must_use]
    pub fn at_hook_depth(mut self, depth: u32) -> Self {
        self.hook_depth = depth;
        self
    }

    /// The registry, while the server runs.
    pub fn registry(&self) -> Option<Arc<Registry>> {
        self.registry.upgrade()
    }

    fn scope(&self, object: &ObjectRef) -> RequestScope {
        let mut scope = RequestScope {
            version: object.version.clone(),
            namespace: object.namespace.clone(),
            request_id: self
                .request_id
                .as_deref()
                .unwrap_or(&self.manager)
                .to_string(),
            field_manager: self.manager.to_string(),
            dry_run: self.dry_run,
            hook_depth: self.hook_depth,
            ..Default::default()
        };
        if let Some(user) = &self.user {
            scope.user = user.clone();
        }
        scope
    }

    fn served(&self, object: &ObjectRef) -> Result<ServedResource> {
        let registry = self
            .registry()
            .ok_or_else(|| Error::Internal("the server is stopping".into()))?;
        registry
            .resolve(&object.group, &object.version, &object.plural)
            .ok_or_else(|| {
                Error::Internal(format!(
                    "{}.{} is no longer served",
                    object.plural, object.group
                ))
            })
    }

    /// Reads `object` consistently; `None` when it does not exist.
    ///
    /// # Errors
    /// Storage failures; the resource is no longer served.
    pub async fn get(&self, object: &ObjectRef) -> Result<Option<Value>> {
        self.get_with(object, GetOptions::default()).await
    }

    /// Reads `object` as the watch cache holds it (`resourceVersion=0`: no round trip to the
    /// store); `None` when it does not exist.
    ///
    /// # Errors
    /// Storage failures; the resource is no longer served.
    pub async fn get_cached(&self, object: &ObjectRef) -> Result<Option<Value>> {
        let cached = GetOptions {
            resource_version: "0".into(),
            ignore_not_found: false,
        };
        self.get_with(object, cached).await
    }

    async fn get_with(&self, object: &ObjectRef, opts: GetOptions) -> Result<Option<Value>> {
        let served = self.served(object)?;
        match served
            .store
            .get(&self.scope(object), &object.name, opts)
            .await
        {
            Ok(obj) => Ok(Some(obj)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Changes `object` with `edit` if its uid is still `uid` (retried on conflicts by the
    /// registry); nothing when it is gone or `edit` answers `false` (nothing to change).
    ///
    /// # Errors
    /// The update's failures other than NotFound.
    pub async fn update(
        &self,
        object: &ObjectRef,
        uid: &str,
        subresource: Option<&str>,
        edit: impl Fn(&mut Value) -> bool + Send + Sync + 'static,
    ) -> Result<()> {
        let served = self.served(object)?;
        let target = served.store.target(&object.name);
        let uid = uid.to_string();
        let input: UpdateFn = Arc::new(move |old: Option<&Value>| {
            let gone = || Error::NotFound(Box::new(target.clone()));
            let mut obj = old.cloned().ok_or_else(gone)?;
            if meta_str(&obj, "uid") != Some(uid.as_str()) {
                return Err(gone());
            }
            edit(&mut obj);
            Ok(obj)
        });
        let mut scope = self.scope(object);
        scope.subresource = subresource.map(String::from);
        match served.store.update(&scope, &object.name, input).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Replaces `object` with `obj`, whose `metadata.resourceVersion` is the precondition: a
    /// compare-and-swap on what the caller read.
    ///
    /// # Errors
    /// Conflict when the object changed since; the update's other failures.
    pub async fn replace(&self, object: &ObjectRef, obj: Value) -> Result<Value> {
        self.replace_at(object, None, obj).await
    }

    /// [`Client::replace`] through `subresource` (`status`): only what the subresource owns
    /// is written.
    ///
    /// # Errors
    /// Conflict when the object changed since; the update's other failures.
    pub async fn replace_at(
        &self,
        object: &ObjectRef,
        subresource: Option<&str>,
        obj: Value,
    ) -> Result<Value> {
        let served = self.served(object)?;
        let input: UpdateFn = Arc::new(move |_: Option<&Value>| Ok(obj.clone()));
        let mut scope = self.scope(object);
        scope.subresource = subresource.map(String::from);
        let outcome = served.store.update(&scope, &object.name, input).await?;
        Ok(outcome.object)
    }

    /// Lists, consistently, every object of `group`/`version`/`plural` in `namespace` (none:
    /// in every namespace, or a cluster-scoped resource's).
    ///
    /// # Errors
    /// Storage failures; the resource is no longer served.
    pub async fn list(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>> {
        let collection = ObjectRef::new(group, version, plural, namespace, "");
        self.list_with(&collection, &ListParams::default()).await
    }

    /// Lists the objects of `collection`'s resource in its namespace (none: in every
    /// namespace, or a cluster-scoped resource's; its name is not looked at), as `params` say.
    ///
    /// # Errors
    /// A label selector that does not parse; storage failures; the resource is no longer
    /// served.
    pub async fn list_with(
        &self,
        collection: &ObjectRef,
        params: &ListParams,
    ) -> Result<Vec<Value>> {
        let label = match &params.label_selector {
            Some(selector) => LabelSelector::parse(selector).map_err(|e| Error::BadRequest(e.0))?,
            None => LabelSelector::default(),
        };
        let opts = ListOptions {
            resource_version: if params.cached { "0" } else { "" }.into(),
            limit: params.limit.unwrap_or(0),
            predicate: SelectionPredicate {
                label,
                ..Default::default()
            },
            ..Default::default()
        };
        let served = self.served(collection)?;
        let page = served.store.list(&self.scope(collection), opts).await?;
        Ok(page.item_values())
    }

    /// Server-side applies `obj` to `object`, as its field manager; `force` takes over the
    /// fields other managers own (as a controller applies).
    ///
    /// # Errors
    /// The apply's failures (a conflict with another manager when not forced).
    pub async fn apply(&self, object: &ObjectRef, obj: Value, force: bool) -> Result<Value> {
        let served = self.served(object)?;
        let outcome = served
            .store
            .apply(&self.scope(object), &object.name, obj, force)
            .await?;
        Ok(outcome.object)
    }

    /// Deletes `object` if `preconditions` hold (its uid, its resourceVersion), with
    /// `propagation` (or the object's own finalizers); nothing when it is gone or changed.
    ///
    /// # Errors
    /// The delete's failures other than NotFound and a failed precondition.
    pub async fn delete(
        &self,
        object: &ObjectRef,
        preconditions: Preconditions,
        propagation: Option<&str>,
    ) -> Result<()> {
        let served = self.served(object)?;
        let opts = DeleteOptions {
            preconditions,
            grace_period_seconds: None,
            propagation_policy: propagation.map(String::from),
        };
        match served
            .store
            .delete(&self.scope(object), &object.name, &opts)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Creates `obj` in the resource `group`/`version`/`plural` (an Event, ...).
    ///
    /// # Errors
    /// The create's failures.
    pub async fn create(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: Option<&str>,
        obj: Value,
    ) -> Result<Value> {
        let object = ObjectRef::new(group, version, plural, namespace, "");
        let served = self.served(&object)?;
        let outcome = served.store.create(&self.scope(&object), obj).await?;
        Ok(outcome.object)
    }
}
