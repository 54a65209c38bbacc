//! The `authorization.k8s.io/v1` reviews, as kube-apiserver answers them: SubjectAccessReview,
//! LocalSubjectAccessReview, SelfSubjectAccessReview (whether a user may do something) and
//! SelfSubjectRulesReview (what the requester may do in a namespace). Each takes the decoded
//! request body and returns the response object, or a registry error (400, 422) for the API
//! layer's one Status mapping.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::{Attributes, Authorizer, Decision, RuleResolver};
use crate::rbac::policy::go_quote;
use crate::strategy::{FieldError, FieldErrorKind};
use crate::user::UserInfo;
use strategy_host_registry::system_fields::strings;
use strategy_host_registry::{Error, Result, Target};

/// The API group of the reviews.
pub const GROUP: &str = "authorization.k8s.io";
/// Their version.
pub const VERSION: &str = "v1";

fn target(kind: &str) -> Target {
    Target {
        group: GROUP.into(),
        plural: format!("{}s", kind.to_ascii_lowercase()),
        kind: kind.into(),
        name: String::new(),
    }
}

fn invalid(field: &str, detail: String) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Invalid,
        field: field.into(),
        detail,
    }
}

/// Checks the body is an object of `kind` (when it names one) and returns it.
fn body_of(kind: &str, body: Value) -> Result<Map<String, Value>> {
    strategy_host_registry::check_type(&body, &format!("{GROUP}/{VERSION}"), kind)?;
    let Value::Object(map) = body else {
        return Err(Error::BadRequest(format!(
            "not a {kind}: the body must be a JSON object"
        )));
    };
    Ok(map)
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// Whether `metadata` is empty but for the fields named (null values and managedFields count
/// as unset).
fn metadata_empty_except(metadata: Option<&Value>, allowed: &[&str]) -> bool {
    metadata.and_then(Value::as_object).is_none_or(|m| {
        m.iter().all(|(k, v)| {
            v.is_null()
                || k == "managedFields"
                || allowed.contains(&k.as_str())
                || v.as_object().is_some_and(Map::is_empty)
                || v.as_array().is_some_and(Vec::is_empty)
                || v.as_str().is_some_and(str::is_empty)
        })
    })
}

/// Go's `%#v` of a non-resource attributes struct, as Kubernetes prints the invalid value.
fn go_non_resource(v: &Value) -> String {
    format!(
        "authorization.NonResourceAttributes{{Path:{}, Verb:{}}}",
        go_quote(text(v, "path")),
        go_quote(text(v, "verb"))
    )
}

/// The errors every access review spec is checked for (`ValidateSelfSubjectAccessReviewSpec`).
fn validate_attributes(spec: &Value) -> Vec<FieldError> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(_), Some(nr)) => vec![invalid(
            "spec.nonResourceAttributes",
            format!(
                "{}: cannot be specified in combination with resourceAttributes",
                go_non_resource(nr)
            ),
        )],
        (None, None) => vec![invalid(
            "spec.resourceAttributes",
            "\"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
                .into(),
        )],
        _ => vec![],
    }
}

/// The user a SubjectAccessReview asks about.
fn spec_user(spec: &Value) -> UserInfo {
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), strings(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        username: text(spec, "user").into(),
        uid: text(spec, "uid").into(),
        groups: strings(spec.get("groups")),
        extra,
    }
}

/// The attributes a spec asks about for `user` (`ResourceAttributesFrom`,
/// `NonResourceAttributesFrom`; an empty version means all versions).
fn attributes(user: UserInfo, spec: &Value) -> Attributes {
    if let Some(r) = spec.get("resourceAttributes").filter(|v| !v.is_null()) {
        let version = text(r, "version");
        return Attributes {
            user,
            verb: text(r, "verb").into(),
            resource_request: true,
            path: String::new(),
            api_group: text(r, "group").into(),
            api_version: if version.is_empty() { "*" } else { version }.into(),
            resource: text(r, "resource").into(),
            subresource: text(r, "subresource").into(),
            namespace: text(r, "namespace").into(),
            name: text(r, "name").into(),
        };
    }
    let nr = spec.get("nonResourceAttributes").unwrap_or(&Value::Null);
    Attributes {
        user,
        verb: text(nr, "verb").into(),
        path: text(nr, "path").into(),
        ..Attributes::default()
    }
}

/// `status` of an access review from a decision.
fn access_status(decision: &Decision) -> Value {
    let mut status = json!({ "allowed": decision.allowed() });
    if matches!(decision, Decision::Deny(_)) {
        status["denied"] = json!(true);
    }
    if !decision.reason().is_empty() {
        status["reason"] = json!(decision.reason());
    }
    if let Some(error) = decision.error() {
        status["evaluationError"] = json!(error);
    }
    status
}

/// The response object: the request with `apiVersion`, `kind` and `status` set.
fn respond(kind: &str, mut obj: Map<String, Value>, status: Value) -> Value {
    obj.insert("apiVersion".into(), json!(format!("{GROUP}/{VERSION}")));
    obj.insert("kind".into(), json!(kind));
    let metadata = obj.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.entry("creationTimestamp").or_insert(Value::Null);
    }
    obj.entry("spec").or_insert_with(|| json!({}));
    obj.insert("status".into(), status);
    Value::Object(obj)
}

fn refuse(kind: &str, causes: Vec<FieldError>) -> Result<()> {
    if causes.is_empty() {
        return Ok(());
    }
    Err(Error::Invalid {
        target: Box::new(target(kind)),
        causes,
    })
}

/// The spec of an access review and the causes every such spec is refused for.
fn access_spec(obj: &Map<String, Value>) -> (Value, Vec<FieldError>) {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let causes = validate_attributes(&spec);
    (spec, causes)
}

/// The spec of a SubjectAccessReview (local or not), the user it asks about, and the causes
/// the spec is refused for (`ValidateSubjectAccessReviewSpec`).
fn subject_spec(obj: &Map<String, Value>) -> (Value, UserInfo, Vec<FieldError>) {
    let (spec, mut causes) = access_spec(obj);
    let user = spec_user(&spec);
    if user.username.is_empty() && user.groups.is_empty() {
        causes.push(invalid(
            "spec.user",
            "\"\": at least one of user or group must be specified".into(),
        ));
    }
    (spec, user, causes)
}

/// The cause of a review whose metadata holds more than the fields `allowed`.
fn metadata_cause(obj: &Map<String, Value>, allowed: &[&str]) -> Option<FieldError> {
    if metadata_empty_except(obj.get("metadata"), allowed) {
        return None;
    }
    let except = match allowed {
        [] => String::new(),
        fields => format!(" except for {}", fields.join(", ")),
    };
    Some(invalid(
        "metadata",
        format!("{}: must be empty{except}", obj["metadata"]),
    ))
}

/// Answers an access review: refused for `causes`, otherwise with whether `user` may do what
/// `spec` describes.
async fn decide(
    authorizer: &dyn Authorizer,
    kind: &str,
    obj: Map<String, Value>,
    spec: &Value,
    user: UserInfo,
    causes: Vec<FieldError>,
) -> Result<Value> {
    refuse(kind, causes)?;
    let decision = authorizer.authorize(&attributes(user, spec)).await;
    Ok(respond(kind, obj, access_status(&decision)))
}

/// Answers a SubjectAccessReview about `spec.user`, or with a `requester` a
/// SelfSubjectAccessReview about them: the two differ only in whose access is asked about.
async fn access_review(
    authorizer: &dyn Authorizer,
    kind: &str,
    body: Value,
    requester: Option<&UserInfo>,
) -> Result<Value> {
    let obj = body_of(kind, body)?;
    let (spec, user, mut causes) = match requester {
        Some(requester) => {
            let (spec, causes) = access_spec(&obj);
            (spec, requester.clone(), causes)
        }
        None => subject_spec(&obj),
    };
    causes.extend(metadata_cause(&obj, &[]));
    decide(authorizer, kind, obj, &spec, user, causes).await
}

/// `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`: whether `spec.user` (with
/// `spec.groups`, `uid`, `extra`) may do what `spec.resourceAttributes` or
/// `spec.nonResourceAttributes` describe.
///
/// # Errors
/// 400 for a body that is not a SubjectAccessReview, 422 for an invalid spec.
pub async fn subject_access_review(authorizer: &dyn Authorizer, body: Value) -> Result<Value> {
    access_review(authorizer, "SubjectAccessReview", body, None).await
}

/// `POST /apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews`: a
/// SubjectAccessReview limited to `namespace` (the path's).
///
/// # Errors
/// 400 without a namespace or with another one in the object, 422 for an invalid spec (a
/// different `spec.resourceAttributes.namespace`, non-resource attributes).
pub async fn local_subject_access_review(
    authorizer: &dyn Authorizer,
    namespace: &str,
    body: Value,
) -> Result<Value> {
    const KIND: &str = "LocalSubjectAccessReview";
    let mut obj = body_of(KIND, body)?;
    if namespace.is_empty() {
        return Err(Error::BadRequest(
            "namespace is required on this type: ".into(),
        ));
    }
    let metadata = obj.entry("metadata").or_insert_with(|| json!({}));
    match metadata.get("namespace").and_then(Value::as_str) {
        None | Some("") => metadata["namespace"] = json!(namespace),
        Some(ns) if ns == namespace => {}
        Some(_) => return Err(Error::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
                .into(),
        )),
    }
    let (spec, user, mut causes) = subject_spec(&obj);
    causes.extend(metadata_cause(&obj, &["namespace"]));
    if let Some(r) = spec.get("resourceAttributes").filter(|v| !v.is_null()) {
        if text(r, "namespace") != namespace {
            causes.push(invalid(
                "spec.resourceAttributes.namespace",
                format!(
                    "{}: must match metadata.namespace",
                    go_quote(text(r, "namespace"))
                ),
            ));
        }
    }
    if let Some(nr) = spec.get("nonResourceAttributes").filter(|v| !v.is_null()) {
        causes.push(invalid(
            "spec.nonResourceAttributes",
            format!(
                "{}: disallowed on this kind of request",
                go_non_resource(nr)
            ),
        ));
    }
    decide(authorizer, KIND, obj, &spec, user, causes).await
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: whether the requester may
/// do what the spec describes (`kubectl auth can-i`).
///
/// # Errors
/// 400 for a body that is not a SelfSubjectAccessReview, 422 for an invalid spec.
pub async fn self_subject_access_review(
    authorizer: &dyn Authorizer,
    requester: &UserInfo,
    body: Value,
) -> Result<Value> {
    access_review(authorizer, "SelfSubjectAccessReview", body, Some(requester)).await
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`: every rule the requester
/// holds in `spec.namespace` (`kubectl auth can-i --list`).
///
/// # Errors
/// 400 for a body that is not a SelfSubjectRulesReview or one without `spec.namespace`.
pub fn self_subject_rules_review(
    resolver: &dyn RuleResolver,
    requester: &UserInfo,
    body: Value,
) -> Result<Value> {
    const KIND: &str = "SelfSubjectRulesReview";
    let obj = body_of(KIND, body)?;
    let namespace = obj
        .get("spec")
        .map(|s| text(s, "namespace"))
        .unwrap_or_default();
    if namespace.is_empty() {
        return Err(Error::BadRequest("no namespace on request".into()));
    }
    let rules = resolver.rules_for(requester, namespace);
    let mut status = json!({
        "resourceRules": rules.resource_rules,
        "nonResourceRules": rules.non_resource_rules,
        "incomplete": rules.incomplete,
    });
    if !rules.evaluation_error.is_empty() {
        status["evaluationError"] = json!(rules.evaluation_error);
    }
    // kube-apiserver answers with a fresh object: no spec, empty metadata.
    let fresh = Map::from_iter([("metadata".to_string(), json!({}))]);
    Ok(respond(KIND, fresh, status))
}
