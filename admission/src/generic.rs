//! What validating and mutating admission policies share (Kubernetes' `policy/generic`): the
//! policies and bindings followed from the API, the bindings in force that match a write (the
//! policy's `matchConstraints`, then the binding's `matchResources`), a binding's params, the
//! `request` variable, the Audit action's record, and the readers of a policy's spec.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, Weak};

use serde_json::{json, Value};

use crate::rules::{strings, MatchResources};
use strategy_host_cel::expression::{self as cel, Expression};
use strategy_host_registry::admission::AdmissionRequest;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::labels::{labels_of, selector_matches};
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::Registry;

const GROUP: &str = "admissionregistration.k8s.io";

/// What every policy's spec holds besides what it does: `failurePolicy`, `matchConstraints`,
/// `matchConditions`, `variables` and `paramKind`, the expressions compiled.
#[derive(Debug)]
pub struct PolicySpec {
    /// `failurePolicy` is not `Ignore`.
    pub fail_closed: bool,
    /// `matchConstraints`; `None` when it names no resources (Kubernetes refuses such a
    /// policy; here it matches nothing).
    pub matching: Option<MatchResources>,
    /// `matchConditions`.
    pub match_conditions: Vec<cel::Result<Expression>>,
    /// `variables`: (name, expression), in order.
    pub variables: Vec<(String, cel::Result<Expression>)>,
    /// `paramKind`: (group, version, kind).
    pub param_kind: Option<(String, String, String)>,
}

impl PolicySpec {
    /// Reads a policy's `spec`.
    pub fn parse(spec: &Value) -> Self {
        Self {
            fail_closed: spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore"),
            matching: spec
                .get("matchConstraints")
                .map(MatchResources::parse)
                .filter(MatchResources::names_resources),
            match_conditions: items(spec.get("matchConditions"))
                .iter()
                .map(|c| compile(c, "expression"))
                .collect(),
            variables: variables_of(spec),
            param_kind: param_kind_of(spec),
        }
    }
}

/// What the generic parts read of a policy.
pub trait GenericPolicy: Send + Sync + 'static {
    /// Its spec's common part.
    fn spec(&self) -> &PolicySpec;
}

/// One binding of a policy (validating or mutating).
#[derive(Debug, Clone)]
pub struct PolicyBinding {
    /// Its name.
    pub name: String,
    /// The policy it binds (`policyName`).
    pub policy: String,
    /// `validationActions` (none for a mutating binding).
    pub actions: Vec<String>,
    /// `matchResources`.
    pub matching: Option<MatchResources>,
    /// `paramRef`.
    pub param_ref: Option<Value>,
}

impl PolicyBinding {
    fn parse(obj: &Value) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        Self {
            name: text(obj.pointer("/metadata/name")),
            policy: text(spec.get("policyName")),
            actions: strings(&spec, "validationActions"),
            matching: spec.get("matchResources").map(MatchResources::parse),
            param_ref: spec.get("paramRef").cloned(),
        }
    }
}

/// The policies and bindings in force at one moment.
#[derive(Debug)]
pub struct InForce<P> {
    /// Policies by name.
    pub policies: BTreeMap<String, Arc<P>>,
    /// Bindings, in name order.
    pub bindings: Vec<PolicyBinding>,
}

impl<P: GenericPolicy> InForce<P> {
    /// Each binding whose policy exists and whose match, and its policy's, names the write
    /// (`namespace`: the object's namespace), with its index among the bindings.
    pub fn matching<'a>(
        &'a self,
        request: &'a AdmissionRequest<'_>,
        namespace: Option<&'a Value>,
    ) -> impl Iterator<Item = (usize, &'a PolicyBinding, &'a Arc<P>)> + 'a {
        self.bindings
            .iter()
            .enumerate()
            .filter_map(move |(index, binding)| {
                let policy = self.policies.get(&binding.policy)?;
                let named = policy
                    .spec()
                    .matching
                    .as_ref()
                    .is_some_and(|m| m.matches(request, namespace))
                    && binding
                        .matching
                        .as_ref()
                        .is_none_or(|m| m.matches(request, namespace));
                named.then_some((index, binding, policy))
            })
    }
}

/// One kind of policy and its bindings, followed from the API.
pub struct Followed<P> {
    policies: Arc<RwLock<BTreeMap<String, Arc<P>>>>,
    bindings: Arc<RwLock<Vec<PolicyBinding>>>,
}

impl<P: GenericPolicy> Followed<P> {
    /// Follows `plurals` (policies, bindings) of `admissionregistration.k8s.io/{version}`,
    /// reading each policy's `spec` with `parse`.
    pub fn start(
        registry: &Registry,
        version: &str,
        (policies, bindings): (&str, &str),
        parse: fn(&Value) -> P,
    ) -> Self {
        let followed = Self {
            policies: Arc::default(),
            bindings: Arc::default(),
        };
        use crate::followed::follow_into;
        follow_into(
            registry,
            (GROUP, version, policies),
            &followed.policies,
            move |all| {
                all.iter()
                    .map(|o| {
                        let name = meta_str(o, "name").unwrap_or_default().to_owned();
                        (name, Arc::new(parse(o.get("spec").unwrap_or(&Value::Null))))
                    })
                    .collect()
            },
        );
        follow_into(
            registry,
            (GROUP, version, bindings),
            &followed.bindings,
            |all| all.iter().map(|o| PolicyBinding::parse(o)).collect(),
        );
        followed
    }

    /// What is in force now.
    pub fn in_force(&self) -> InForce<P> {
        InForce {
            policies: self
                .policies
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            bindings: self
                .bindings
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}

/// The items of a JSON list (none when absent).
pub fn items(list: Option<&Value>) -> Vec<Value> {
    list.and_then(Value::as_array).cloned().unwrap_or_default()
}

/// Compiles the expression in `v[field]`.
pub fn compile(v: &Value, field: &str) -> cel::Result<Expression> {
    Expression::compile(v.get(field).and_then(Value::as_str).unwrap_or_default())
}

/// A policy spec's `paramKind`, as (group, version, kind).
fn param_kind_of(spec: &Value) -> Option<(String, String, String)> {
    spec.get("paramKind").map(|p| {
        let api_version = p
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (group, version) = strategy_host_apimachinery::group_version(api_version);
        let kind = p.get("kind").and_then(Value::as_str).unwrap_or_default();
        (group.to_string(), version.to_string(), kind.to_string())
    })
}

/// A policy spec's `variables`, compiled: (name, expression), in order.
fn variables_of(spec: &Value) -> Vec<(String, cel::Result<Expression>)> {
    items(spec.get("variables"))
        .iter()
        .map(|v| {
            let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
            (name.to_string(), compile(v, "expression"))
        })
        .collect()
}

/// Why a binding's params could not be read, worded as Kubernetes words it.
#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    /// The policy has a `paramKind` and the binding no `paramRef`.
    #[error("failed to configure binding: paramRef is required when the policy has paramKind {0}")]
    NoParamRef(String),
    /// The `paramKind` is not served.
    #[error("failed to configure binding: paramKind {group}/{version} {kind} is not served")]
    NotServed {
        /// Its group.
        group: String,
        /// Its version.
        version: String,
        /// Its kind.
        kind: String,
    },
    /// The server is stopping.
    #[error("the server is stopping")]
    Stopping,
    /// Reading the params failed.
    #[error(transparent)]
    Read(#[from] strategy_host_registry::Error),
    /// None found, and the binding's `parameterNotFoundAction` is `Deny`.
    #[error("no params found for policy binding with `Deny` parameterNotFoundAction")]
    NotFound,
}

/// The params a binding names (`param_ref`) for a policy taking `param_kind` (group, version,
/// kind): `paramRef.name` in its namespace (or the request's), or every object
/// `paramRef.selector` selects; `None` when the policy takes none.
///
/// # Errors
/// Why no params could be read, worded as Kubernetes words it.
pub async fn params(
    registry: &Weak<Registry>,
    param_kind: Option<&(String, String, String)>,
    param_ref: Option<&Value>,
    request: &AdmissionRequest<'_>,
) -> Result<Option<Vec<Value>>, ParamsError> {
    let Some((group, version, kind)) = param_kind else {
        return Ok(None);
    };
    let Some(param_ref) = param_ref else {
        return Err(ParamsError::NoParamRef(kind.clone()));
    };
    let registry = registry.upgrade().ok_or(ParamsError::Stopping)?;
    let served =
        registry
            .resolve_kind(group, version, kind)
            .ok_or_else(|| ParamsError::NotServed {
                group: group.clone(),
                version: version.clone(),
                kind: kind.clone(),
            })?;
    let namespace = param_ref
        .get("namespace")
        .and_then(Value::as_str)
        .or(request.namespace)
        .filter(|_| served.def.namespaced)
        .map(String::from);
    let client = Client::new(&registry, "admission-params");
    let (group, plural) = (&served.def.group, &served.def.plural);
    let found: Vec<Value> = match param_ref.get("name").and_then(Value::as_str) {
        Some(name) => {
            let object = ObjectRef::new(group, version, plural, namespace.as_deref(), name);
            client.get(&object).await?.into_iter().collect()
        }
        None => {
            let listed = client
                .list(group, version, plural, namespace.as_deref())
                .await?;
            let selector = param_ref.get("selector").cloned().unwrap_or(Value::Null);
            listed
                .into_iter()
                .filter(|o| selector.is_null() || selector_matches(&selector, &labels_of(o)))
                .collect()
        }
    };
    if found.is_empty()
        && param_ref
            .get("parameterNotFoundAction")
            .and_then(Value::as_str)
            != Some("Allow")
    {
        return Err(ParamsError::NotFound);
    }
    Ok(Some(found))
}

/// The `request` variable CEL expressions see.
pub fn request_variable(request: &AdmissionRequest<'_>) -> Value {
    let def = request.resource;
    let user = request.user;
    json!({
        "operation": request.operation.as_str(),
        "userInfo": {"username": user.username, "uid": user.uid, "groups": user.groups},
        "name": request.name,
        "namespace": request.namespace.unwrap_or_default(),
        "dryRun": request.dry_run,
        "kind": {"group": def.group, "version": request.version, "kind": def.kind},
        "resource": {"group": def.group, "version": request.version, "resource": def.plural},
        "subResource": request.subresource.unwrap_or_default(),
    })
}

/// The annotation Kubernetes puts the Audit action's failures under.
pub const VALIDATION_FAILURE_ANNOTATION: &str =
    "validation.policy.admission.k8s.io/validation_failure";

/// Records the Audit action's failures on the request's audit events, as a JSON list.
pub fn record_audit_failures(request: &AdmissionRequest<'_>, failures: &[Value]) {
    if !failures.is_empty() {
        request.annotate(
            VALIDATION_FAILURE_ANNOTATION,
            &Value::from(failures.to_vec()).to_string(),
        );
    }
}
