//! The strategy contract: what a resource's behaviour module decides before and after each write.
//!
//! The registry calls one method per phase of a request (a wasm strategy runs each on one fresh
//! instance): `before_create` = prepare_for_create → validate → warnings → canonicalize;
//! `before_update` = prepare_for_update → validate_update → warnings → canonicalize;
//! `before_delete`; and the After hooks, which run after the write is committed and never undo it.
//! `DefaultStrategy` is what a resource without a module gets.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::admission_policy::Operation;
use crate::user::UserInfo;

/// Kubernetes' field error kinds (`k8s.io/apimachinery/pkg/util/validation/field`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FieldErrorKind {
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `FieldValueTypeInvalid`: a member of the wrong type for the resource's schema.
    TypeInvalid,
}

impl FieldErrorKind {
    /// The `reason` Kubernetes puts in a Status cause (`FieldValueRequired`, ...).
    pub fn cause_type(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::Forbidden => "FieldValueForbidden",
            Self::Duplicate => "FieldValueDuplicate",
            Self::NotSupported => "FieldValueNotSupported",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::TypeInvalid => "FieldValueTypeInvalid",
        }
    }
}

/// One field error: which field, what kind, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FieldError {
    /// The kind of error.
    pub kind: FieldErrorKind,
    /// The field path, e.g. `spec.replicas` or `metadata.labels[app]`.
    pub field: String,
    /// A human-readable detail.
    pub detail: String,
}

impl FieldError {
    /// `Invalid value: <value>: <detail>`, Kubernetes' `field.Invalid` (a string value quoted,
    /// a number bare).
    pub fn invalid(
        field: impl Into<String>,
        value: &Value,
        detail: impl std::fmt::Display,
    ) -> Self {
        Self {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            detail: format!("{value}: {detail}"),
        }
    }

    /// `Required value[: <detail>]`, Kubernetes' `field.Required`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Required,
            field: field.into(),
            detail: detail.into(),
        }
    }

    /// `Forbidden: <detail>`, Kubernetes' `field.Forbidden`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Forbidden,
            field: field.into(),
            detail: detail.into(),
        }
    }

    /// `Duplicate value: <value>`, Kubernetes' `field.Duplicate`.
    pub fn duplicate(field: impl Into<String>, value: &Value) -> Self {
        Self {
            kind: FieldErrorKind::Duplicate,
            field: field.into(),
            detail: value.to_string(),
        }
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`, Kubernetes'
    /// `field.NotSupported`.
    pub fn not_supported(field: impl Into<String>, value: &Value, supported: &[&str]) -> Self {
        let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Self {
            kind: FieldErrorKind::NotSupported,
            field: field.into(),
            detail: format!("{value}: supported values: {}", supported.join(", ")),
        }
    }

    /// `Too long: may not be more than <max> bytes`, Kubernetes' `field.TooLong` (the value is
    /// not shown).
    pub fn too_long(field: impl Into<String>, max: u64) -> Self {
        Self {
            kind: FieldErrorKind::TooLong,
            field: field.into(),
            detail: format!("may not be more than {max} {}", plural(max, "byte")),
        }
    }

    /// `Too many: <actual>: must have at most <max> items`, Kubernetes' `field.TooMany`.
    pub fn too_many(field: impl Into<String>, actual: u64, max: u64) -> Self {
        Self {
            kind: FieldErrorKind::TooMany,
            field: field.into(),
            detail: format!("{actual}: must have at most {max} {}", plural(max, "item")),
        }
    }

    /// Kubernetes' message for the error, without the field (`Invalid value: 3: must be ...`).
    pub fn message(&self) -> String {
        let head = match self.kind {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid | FieldErrorKind::TypeInvalid => "Invalid value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
        };
        match self.detail.is_empty() {
            true => head.to_string(),
            false => format!("{head}: {}", self.detail),
        }
    }
}

/// `unit` or its plural, as Kubernetes words a limit of one (`1 byte`, `2 bytes`).
fn plural(n: u64, unit: &str) -> String {
    match n {
        1 => unit.to_string(),
        _ => format!("{unit}s"),
    }
}

impl std::fmt::Display for FieldError {
    /// `field: message`, as Kubernetes lists causes (the message alone without a field).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.field.is_empty() {
            true => f.write_str(&self.message()),
            false => write!(f, "{}: {}", self.field, self.message()),
        }
    }
}

/// The resource a strategy call is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group (`""` for core).
    pub group: String,
    /// The version the request was made at.
    pub version: String,
    /// The kind, e.g. `Widget`.
    pub kind: String,
    /// The plural resource name, e.g. `widgets`.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

/// What every strategy call is told about the request.
#[derive(Debug, Clone)]
pub struct StrategyContext {
    /// The resource.
    pub resource: ResourceInfo,
    /// `?dryRun=All`: nothing will be persisted.
    pub dry_run: bool,
    /// An id for logs, so a module's log lines can be tied to a request.
    pub request_id: String,
    /// How many After-hook writes led to this request: 0 for a client's request, n + 1 for a
    /// write an After hook made at depth n. It travels with the chain so nesting stays bounded.
    pub hook_depth: u32,
    /// Who makes the request.
    pub user: Arc<UserInfo>,
}

/// A write refused as a whole rather than for its fields (Kubernetes' storage and admission
/// refusals, e.g. RBAC's escalation check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 403 Forbidden: `{resource} "{name}" is forbidden: {message}`.
    Forbidden(String),
    /// 404 NotFound of another object the write depends on (a binding's role).
    NotFound {
        /// Its API group.
        group: String,
        /// Its plural resource.
        plural: String,
        /// Its name.
        name: String,
    },
}

/// The outcome of a before-write phase.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Admission {
    /// Field errors; any → the request fails with 422 Invalid.
    pub field_errors: Vec<FieldError>,
    /// Warnings for the client (`Warning: 299` headers).
    pub warnings: Vec<String>,
    /// The write is refused outright (checked before the field errors).
    pub refusal: Option<Refusal>,
}

/// A before-write phase's answer: the admission, or why the strategy could not run.
pub type Answer = Result<Admission, StrategyError>;

/// A strategy that could not run (trap, deadline, memory cap, garbage output): the request
/// fails with 500 naming the module and the reason; the server carries on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strategy module {module:?} failed: {reason}")]
pub struct StrategyError {
    /// The module's name.
    pub module: String,
    /// What went wrong.
    pub reason: String,
}

/// A resource's behaviour. Every method has the default Kubernetes behaviour for custom
/// resources, so an implementation overrides only what it changes.
#[async_trait]
pub trait Strategy: Send + Sync + 'static {
    /// A name for logs and errors (the module's name for wasm strategies).
    fn name(&self) -> &str;

    /// prepare_for_create, validate, warnings and canonicalize on a new object (mutated in place).
    async fn before_create(&self, _ctx: &StrategyContext, _obj: &mut Value) -> Answer {
        Ok(Admission::default())
    }

    /// prepare_for_update, validate_update, warnings and canonicalize on `new` given `old`.
    async fn before_update(
        &self,
        _ctx: &StrategyContext,
        _new: &mut Value,
        _old: &Value,
    ) -> Answer {
        Ok(Admission::default())
    }

    /// May refuse the deletion of `obj` (field errors → 422) or warn.
    async fn before_delete(&self, _ctx: &StrategyContext, _obj: &Value) -> Answer {
        Ok(Admission::default())
    }

    /// Whether a PUT of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether a PUT without a resourceVersion is accepted (custom resources: yes).
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Whether the After hook of `operation` does anything: when it does not, the registry
    /// neither copies the committed object for it nor starts its task. An implementation that
    /// overrides an After hook keeps the default (`true`).
    fn runs_after(&self, _operation: Operation) -> bool {
        true
    }

    /// Runs after a create is committed; a failure is logged and counted, never undone.
    async fn after_create(
        &self,
        _ctx: &StrategyContext,
        _obj: &Value,
    ) -> Result<(), StrategyError> {
        Ok(())
    }

    /// Runs after an update is committed.
    async fn after_update(
        &self,
        _ctx: &StrategyContext,
        _new: &Value,
        _old: &Value,
    ) -> Result<(), StrategyError> {
        Ok(())
    }

    /// Runs after a delete is committed.
    async fn after_delete(
        &self,
        _ctx: &StrategyContext,
        _obj: &Value,
    ) -> Result<(), StrategyError> {
        Ok(())
    }

    /// Whether this strategy converts the resource's objects between its versions (a module
    /// that exports a conversion): such a strategy is asked instead of the definition's
    /// `spec.conversion`.
    fn converts(&self) -> bool {
        false
    }

    /// Who converts now (a module's digest), so conversions remembered for one converter are
    /// not served for another after a hot swap; empty when the strategy does not convert.
    fn converter_id(&self) -> String {
        String::new()
    }

    /// `objects` (each a JSON object at the version its `apiVersion` names) converted to
    /// `desired_api_version`, in order, as JSON. Bytes in and out: a list's objects go from the
    /// watch cache to the converter and back into it without being parsed by the host, unless
    /// the checks of what came back need to look closer.
    async fn convert(
        &self,
        _resource: &ResourceInfo,
        objects: Vec<Vec<u8>>,
        _desired_api_version: &str,
    ) -> Result<Vec<Vec<u8>>, StrategyError> {
        Ok(objects)
    }
}

/// The strategy of a resource with no module: Kubernetes' defaults for custom resources.
#[derive(Debug, Default, Clone)]
pub struct DefaultStrategy;

impl Strategy for DefaultStrategy {
    fn name(&self) -> &str {
        "default"
    }

    fn runs_after(&self, _operation: Operation) -> bool {
        false
    }
}

/// The strategy of a built-in resource whose objects one function defaults and checks, on
/// create and on update alike; Kubernetes' defaults for everything else.
#[derive(Debug, Clone, Copy)]
pub struct AdmitStrategy {
    /// The name in logs and metrics (`builtin-apiservices`).
    pub name: &'static str,
    /// Defaults an object and answers its field errors and warnings.
    pub admit: fn(&mut Value) -> Admission,
}

#[async_trait]
impl Strategy for AdmitStrategy {
    fn name(&self) -> &str {
        self.name
    }

    async fn before_create(&self, _ctx: &StrategyContext, obj: &mut Value) -> Answer {
        Ok((self.admit)(obj))
    }

    async fn before_update(&self, _ctx: &StrategyContext, new: &mut Value, _old: &Value) -> Answer {
        Ok((self.admit)(new))
    }

    fn runs_after(&self, _operation: Operation) -> bool {
        false
    }
}

/// Chooses the strategy of a custom resource (the wasm module table in production).
pub trait StrategyResolver: Send + Sync + 'static {
    /// The strategy of the resource with `group` and `kind`.
    fn strategy(&self, group: &str, kind: &str) -> Arc<dyn Strategy>;
}

/// Every custom resource gets `DefaultStrategy`.
#[derive(Debug, Default)]
pub struct DefaultResolver;

impl StrategyResolver for DefaultResolver {
    fn strategy(&self, _group: &str, _kind: &str) -> Arc<dyn Strategy> {
        Arc::new(DefaultStrategy)
    }
}
