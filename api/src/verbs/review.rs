//! Creates that store nothing and answer a question about the requester: a ServiceAccount's
//! `token` subresource (TokenRequest, `kubectl create token`), `TokenReview` (what a
//! delegating extension API server asks of a token), `SelfSubjectReview`
//! (`kubectl auth whoami`) and the access and rules reviews (`kubectl auth can-i`).

use hyper::Response;
use serde_json::{json, Value};

use super::resolve::Resolved;
use crate::params::Format;
use crate::response::{self, Body};
use crate::state::AppState;
use crate::status::Status;
use crate::strategy::{FieldError, FieldErrorKind};
use strategy_host_authentication::token_request::{token_request, TokenRequestError};
use strategy_host_authorization::review as access;
use strategy_host_registry::system_fields::now_rfc3339;
use strategy_host_registry::{Error as RegistryError, Target};
use strategy_host_storage::GetOptions;

/// `POST .../serviceaccounts/{name}/token`: a signed token for the account (201).
///
/// # Errors
/// 404 when the account does not exist; 422 for a bad spec.
pub(super) async fn token(
    state: &AppState,
    res: &Resolved,
    request: Value,
    format: Format,
) -> Result<Response<Body>, Status> {
    let Some(tokens) = &state.tokens else {
        return Err(Status::not_found(
            "ServiceAccount tokens are not issued here",
        ));
    };
    let account = res
        .store()
        .get(&res.read_scope(), res.name(), GetOptions::default())
        .await
        .map_err(|e| Status::from(&e))?;
    let answer = token_request(tokens, &account, &request).map_err(|e| match e {
        TokenRequestError::Invalid(field, detail) => {
            let target = Target {
                group: "authentication.k8s.io".into(),
                plural: "tokenrequests".into(),
                kind: "TokenRequest".into(),
                name: res.name().to_string(),
            };
            let cause = FieldError {
                kind: FieldErrorKind::Invalid,
                field: field.into(),
                detail,
            };
            Status::from(&RegistryError::invalid(&target, cause))
        }
        TokenRequestError::Failed(why) => Status::internal(why),
    })?;
    Ok(response::object(201, &answer, &[], format.protobuf))
}

/// A create of a create-only kind: the review answered for the requester (201).
///
/// # Errors
/// 400/422 for a malformed review.
pub(super) async fn create(
    state: &AppState,
    res: &Resolved,
    review: Value,
    format: Format,
) -> Result<Response<Body>, Status> {
    let def = res.def();
    let (authorizer, rules) = (&*state.reviews.authorizer, &*state.reviews.rules);
    let user = &*res.user;
    let answer = match (def.group.as_str(), def.plural.as_str()) {
        ("authentication.k8s.io", "selfsubjectreviews") => Ok(json!({
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": now_rfc3339()},
            "status": {"userInfo": user},
        })),
        ("authentication.k8s.io", "tokenreviews") => {
            let token = review
                .pointer("/spec/token")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if token.is_empty() {
                return Err(Status::bad_request(
                    "token is required for TokenReview in authentication",
                ));
            }
            let status = match state.security.authenticate_token(token).await {
                Ok(user) => json!({"authenticated": true, "user": user}),
                Err(why) => json!({"user": {}, "error": why.to_string()}),
            };
            Ok(json!({
                "kind": "TokenReview",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"creationTimestamp": null},
                "spec": review["spec"],
                "status": status,
            }))
        }
        ("authorization.k8s.io", "subjectaccessreviews") => {
            access::subject_access_review(authorizer, review).await
        }
        ("authorization.k8s.io", "localsubjectaccessreviews") => {
            let ns = res.path.namespace.as_deref().unwrap_or_default();
            access::local_subject_access_review(authorizer, ns, review).await
        }
        ("authorization.k8s.io", "selfsubjectaccessreviews") => {
            access::self_subject_access_review(authorizer, user, review).await
        }
        ("authorization.k8s.io", "selfsubjectrulesreviews") => {
            access::self_subject_rules_review(rules, user, review)
        }
        _ => {
            return Err(Status::not_found(format!(
                "the server could not find the requested resource ({})",
                def.plural
            )))
        }
    };
    let answer = answer.map_err(|e| Status::from(&e))?;
    Ok(response::object(201, &answer, &[], format.protobuf))
}
