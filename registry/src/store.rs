//! `RegistryStore`: the generic store of one served resource (Kubernetes' `registry.Store`):
//! its request scope, versions, admission and After hooks. Reads (get, list, watch) are in
//! `read.rs`; writes in `create.rs`, `update.rs` and `delete.rs`; the checks they share in
//! `write_checks.rs`.

use std::sync::Arc;

use serde_json::Value;

use super::admission::{AdmissionChain, AdmissionRequest, AuditAnnotations, Operation, Rejection};
use super::definition::ResourceDefinition;
use super::error::{Error, Result, Target};
use super::fieldmanager;

use crate::strategy::{FieldError, FieldErrorKind, Strategy, StrategyContext};
use crate::user::UserInfo;
use strategy_host_storage::Storage;

/// How unknown and duplicate fields in a request body are treated (`?fieldValidation=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the default).
    #[default]
    Warn,
    /// Refuse the request with 400.
    Strict,
}

impl FieldValidation {
    /// The one field validation rule, over the problems found in a body (unknown or duplicate
    /// fields): `Strict` refuses them with Kubernetes' `strict decoding error: ...` (the `Err`
    /// text, for a 400), `Warn` returns them as warnings, `Ignore` drops them.
    ///
    /// # Errors
    /// Under `Strict`, when there is any problem.
    pub fn judge(self, problems: Vec<String>) -> std::result::Result<Vec<String>, StrictDecoding> {
        match self {
            Self::Ignore => Ok(Vec::new()),
            Self::Warn => Ok(problems),
            Self::Strict if problems.is_empty() => Ok(Vec::new()),
            Self::Strict => Err(StrictDecoding(problems)),
        }
    }
}

/// Unknown or duplicate fields refused under `fieldValidation=Strict` (a 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strict decoding error: {}", .0.join(", "))]
pub struct StrictDecoding(pub Vec<String>);

/// What one request is about, beyond the object itself.
#[derive(Debug, Clone)]
pub struct RequestScope {
    /// The API version of the request path (`v1`).
    pub version: String,
    /// The namespace of the request path.
    pub namespace: Option<String>,
    /// `?dryRun=All`.
    pub dry_run: bool,
    /// For logs.
    pub request_id: String,
    /// `Some("status")` for the status subresource.
    pub subresource: Option<String>,
    /// `?fieldValidation=`.
    pub field_validation: FieldValidation,
    /// The After-hook depth of the write (see `StrategyContext::hook_depth`).
    pub hook_depth: u32,
    /// The field manager a write is recorded under in `managedFields` (`?fieldManager=`, else
    /// from the User-Agent); empty: not recorded.
    pub field_manager: String,
    /// The write is a server-side apply: its `managedFields` are already computed.
    pub applying: bool,
    /// Who makes the request ([`UserInfo::server`] when the server writes on its own behalf).
    pub user: Arc<UserInfo>,
    /// The request's audit record, for admission's annotations (`None`: not audited).
    pub audit: Option<Arc<dyn AuditAnnotations>>,
}

impl Default for RequestScope {
    /// A request of the server's own (startup objects, expiry): no version or namespace yet,
    /// as `system:apiserver`.
    fn default() -> Self {
        Self {
            version: String::new(),
            namespace: None,
            dry_run: false,
            request_id: String::new(),
            subresource: None,
            field_validation: FieldValidation::default(),
            hook_depth: 0,
            field_manager: String::new(),
            applying: false,
            user: Arc::new(UserInfo::server()),
            audit: None,
        }
    }
}

/// The result of a write.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The object as stored (or as it would be, for a dry run), at the request's version.
    pub object: Value,
    /// Warnings for `Warning: 299` headers.
    pub warnings: Vec<String>,
    /// True when the write created the object (201).
    pub created: bool,
}

/// The generic store of one resource: drives the strategy around storage.
#[derive(Clone)]
pub struct RegistryStore {
    pub(super) def: Arc<ResourceDefinition>,
    pub(super) storage: Arc<dyn Storage>,
    pub(super) strategy: Arc<dyn Strategy>,
    /// The namespaces resource's storage, to refuse objects in missing namespaces.
    pub(super) namespaces: Option<Arc<dyn Storage>>,
    /// The validating admission plugins writes pass.
    pub(super) admission: Arc<AdmissionChain>,
    /// The conversions this resource's watchers share.
    pub(super) conversions: Arc<super::conversion_memo::ConversionMemo>,
}

impl std::fmt::Debug for RegistryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryStore")
            .field("resource", &self.def.key_prefix())
            .field("strategy", &self.strategy.name())
            .finish()
    }
}

impl RegistryStore {
    /// A store for `def` over `storage` with `strategy`; `namespaces` (the namespaces
    /// resource's storage) enables the missing-namespace check for namespaced resources.
    pub fn new(
        def: Arc<ResourceDefinition>,
        storage: Arc<dyn Storage>,
        strategy: Arc<dyn Strategy>,
        namespaces: Option<Arc<dyn Storage>>,
    ) -> Self {
        Self {
            def,
            storage,
            strategy,
            namespaces,
            admission: Arc::default(),
            conversions: Arc::default(),
        }
    }

    /// The store with writes passing `admission`.
    #[must_use]
    pub fn with_admission(mut self, admission: Arc<AdmissionChain>) -> Self {
        self.admission = admission;
        self
    }

    /// The admission request of a write of `object` (`old` before an update).
    fn admission_request<'a>(
        &'a self,
        scope: &'a RequestScope,
        operation: Operation,
        object: &'a Value,
        old: Option<&'a Value>,
    ) -> AdmissionRequest<'a> {
        AdmissionRequest {
            operation,
            resource: &self.def,
            version: &scope.version,
            subresource: scope.subresource.as_deref(),
            namespace: scope.namespace.as_deref().filter(|_| self.def.namespaced),
            name: object
                .pointer("/metadata/name")
                .or_else(|| old.and_then(|o| o.pointer("/metadata/name")))
                .and_then(Value::as_str)
                .unwrap_or_default(),
            object,
            old_object: old,
            user: &scope.user,
            dry_run: scope.dry_run,
            audit: scope.audit.as_deref(),
        }
    }

    /// Lets the mutating admission plugins change `object` (`old` before an update); answers
    /// their warnings.
    pub(super) async fn mutate(
        &self,
        scope: &RequestScope,
        operation: Operation,
        object: &mut Value,
        old: Option<&Value>,
    ) -> Result<Vec<String>> {
        let before = object.clone();
        let request = self.admission_request(scope, operation, &before, old);
        let name = request.name.to_string();
        self.admission
            .mutate(&request, object)
            .await
            .map_err(|r| self.rejected(&name, r))
    }

    /// Asks the validating admission plugins about a write of `object` (`old` before an
    /// update); answers their warnings.
    pub(super) async fn admit(
        &self,
        scope: &RequestScope,
        operation: Operation,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<Vec<String>> {
        let request = self.admission_request(scope, operation, object, old);
        self.admission
            .validate(&request)
            .await
            .map_err(|r| self.rejected(request.name, r))
    }

    fn rejected(&self, name: &str, rejection: Rejection) -> Error {
        match rejection {
            Rejection::Refused(refusal) => Error::refused(&self.target(name), refusal),
            Rejection::Denied {
                code,
                reason,
                message,
            } => Error::Denied {
                code,
                reason,
                message,
            },
            Rejection::Failed(why) => Error::Internal(why),
        }
    }

    /// The resource served.
    pub fn definition(&self) -> &Arc<ResourceDefinition> {
        &self.def
    }

    /// The object `name` of this resource, as errors name it.
    pub fn target(&self, name: &str) -> Target {
        Target {
            group: self.def.group.clone(),
            plural: self.def.plural.clone(),
            kind: self.def.kind.clone(),
            name: name.to_string(),
        }
    }

    pub(super) fn ctx(&self, scope: &RequestScope) -> StrategyContext {
        StrategyContext {
            resource: self.def.info(&scope.version),
            dry_run: scope.dry_run,
            request_id: scope.request_id.clone(),
            hook_depth: scope.hook_depth,
            user: scope.user.clone(),
        }
    }

    /// Who a write is recorded under, if anyone.
    pub(super) fn manager(&self, scope: &RequestScope) -> Option<fieldmanager::Manager> {
        if scope.field_manager.is_empty() {
            return None;
        }
        Some(fieldmanager::Manager {
            name: scope.field_manager.clone(),
            api_version: self.def.api_version(&scope.version),
            subresource: scope.subresource.clone().unwrap_or_default(),
            time: super::system_fields::now_rfc3339(),
            status_subresource: self
                .def
                .version(&scope.version)
                .is_some_and(|v| v.status_subresource),
        })
    }

    /// The schema `managedFields` are computed by.
    pub(super) fn schema(&self, scope: &RequestScope) -> Option<&Value> {
        self.def
            .version(&scope.version)
            .and_then(|v| v.schema.as_ref())
    }

    /// A registry error for a refused ownership change.
    pub(super) fn refused(&self, name: &str, refusal: fieldmanager::Refusal) -> Error {
        match refusal {
            fieldmanager::Refusal::Conflicts(conflicts) => Error::ApplyConflict {
                target: self.target(name).into(),
                conflicts,
            },
            fieldmanager::Refusal::Invalid(field, detail) => Error::invalid(
                &self.target(name),
                FieldError {
                    kind: FieldErrorKind::Invalid,
                    field: format!("metadata.{field}"),
                    detail,
                },
            ),
        }
    }

    pub(super) fn key(&self, scope: &RequestScope, name: &str) -> String {
        self.def.object_key(scope.namespace.as_deref(), name)
    }

    /// A stored object at the request's version: stamped with its `apiVersion` and `kind`
    /// (conversion strategy None), its fields renamed when the resource is served over another's
    /// stored objects.
    pub fn to_version(&self, obj: Value, version: &str) -> Value {
        let obj = match &self.def.stored_as {
            Some(stored)
                if obj.get("apiVersion").and_then(Value::as_str)
                    == Some(stored.api_version.as_str()) =>
            {
                stored.from_stored(obj)
            }
            _ => obj,
        };
        self.stamp(obj, version)
    }

    /// An object of the request's shape as it is stored: stamped with the storage version, or
    /// renamed into the stored resource's shape.
    pub fn to_storage_version(&self, obj: Value) -> Value {
        match &self.def.stored_as {
            Some(stored) => {
                let mut obj = stored.to_stored(obj);
                if let Some(map) = obj.as_object_mut() {
                    map.insert(
                        "apiVersion".into(),
                        Value::String(stored.api_version.clone()),
                    );
                    map.insert("kind".into(), Value::String(stored.kind.clone()));
                }
                obj
            }
            None => self.stamp(obj, self.def.storage_version()),
        }
    }

    fn stamp(&self, mut obj: Value, version: &str) -> Value {
        if let Some(map) = obj.as_object_mut() {
            map.insert(
                "apiVersion".into(),
                Value::String(self.def.api_version(version)),
            );
            map.insert("kind".into(), Value::String(self.def.kind.clone()));
        }
        obj
    }

    /// Runs the After hook of `operation` and waits for it, so its failure reaches the client
    /// as a warning (the write stands, as Kubernetes' AfterCreate/AfterUpdate/AfterDelete never
    /// undo one). The hook runs in its own task: a client that goes away mid-hook does not
    /// cancel it. `hook` makes it from the strategy and the request's context (with its own
    /// copies of the objects) only when the strategy has one.
    pub(super) async fn run_hook<F>(
        &self,
        scope: &RequestScope,
        operation: Operation,
        hook: impl FnOnce(Arc<dyn Strategy>, StrategyContext) -> F,
    ) -> Option<String>
    where
        F: std::future::Future<Output = std::result::Result<(), crate::strategy::StrategyError>>
            + Send
            + 'static,
    {
        if !self.strategy.runs_after(operation) {
            return None;
        }
        let what = match operation {
            Operation::Create => "after_create",
            Operation::Update => "after_update",
            Operation::Delete => "after_delete",
        };
        let hook = hook(self.strategy.clone(), self.ctx(scope));
        let failure = match tokio::spawn(hook).await {
            Ok(Ok(())) => return None,
            Ok(Err(e)) => e.to_string(),
            Err(e) => format!("the hook's task failed: {e}"),
        };
        let resource = self.def.key_prefix();
        tracing::warn!(%resource, hook = what, error = %failure, "after hook failed");
        Some(format!("{what} hook failed (the write stands): {failure}"))
    }
}
