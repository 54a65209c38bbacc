//! Resource requests: resolves the served resource of a path and runs the verb (get, list,
//! watch, create, update, patch, delete, deletecollection, and the status subresource).

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::Value;

use super::body;
use super::patch::{patch_kind, Patch};
use super::request::{Query, ResourcePath};
use super::response::{self, Body};
use super::state::AppState;
use super::status::Status;
use super::table;
use super::watch::{self, WatchFormat};
use crate::registry::{
    DeleteOptions, Error, FieldValidation, Outcome, RequestScope, ServedResource, UpdateFn,
};
use crate::storage::{FieldSelector, GetOptions};
use crate::strategy::{FieldError, FieldErrorKind};

/// How long a CRD write waits for the served table to reflect it.
const DEFINITION_PROPAGATION: Duration = Duration::from_secs(3);

fn not_served(path: &str) -> Status {
    Status::not_found(format!(
        "the server could not find the requested resource ({path})"
    ))
}

/// Handles one resource request.
pub async fn handle(
    state: &AppState,
    req: Request<Incoming>,
    path: ResourcePath,
    query: Query,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let mut body = Some(body);
    let resp = match run(state, &parts, &mut body, &path, &query).await {
        Ok(resp) => resp,
        Err(status) => response::status(&status),
    };
    // A body the handler did not read is drained (up to the cap), so the connection stays
    // usable for the client's next request.
    if let Some(unread) = body {
        let _ = body::read(unread, state.max_body_bytes).await;
    }
    resp
}

fn header(req: &hyper::http::request::Parts, name: hyper::header::HeaderName) -> Option<&str> {
    req.headers.get(name).and_then(|v| v.to_str().ok())
}

async fn run(
    state: &AppState,
    req: &hyper::http::request::Parts,
    incoming: &mut Option<Incoming>,
    path: &ResourcePath,
    query: &Query,
) -> Result<Response<Body>, Status> {
    let uri_path = req.uri.path().to_string();
    let served = state
        .registry
        .resolve(&path.group, &path.version, &path.plural)
        .ok_or_else(|| not_served(&uri_path))?;
    let def = served.def.clone();
    if path.namespace.is_some() && !def.namespaced {
        return Err(not_served(&uri_path));
    }
    if let Some(sub) = &path.subresource {
        let ok = sub == "status"
            && def
                .version(&path.version)
                .is_some_and(|v| v.status_subresource);
        if !ok {
            return Err(not_served(&uri_path));
        }
    }
    if def.namespaced
        && path.namespace.is_none()
        && (path.name.is_some() || req.method == Method::POST)
    {
        return Err(not_served(&uri_path));
    }
    let scope = RequestScope {
        version: path.version.clone(),
        namespace: path.namespace.clone(),
        dry_run: query.dry_run()?,
        request_id: format!("{:016x}", rand::random::<u64>()),
        subresource: path.subresource.clone(),
        field_validation: query.field_validation()?,
        hook_depth: 0,
    };
    let accept = header(req, hyper::header::ACCEPT).map(String::from);
    let as_table = table::wants_table(accept.as_deref());
    let include_object = query.get("includeObject").unwrap_or("Metadata").to_string();
    let method = req.method.clone();
    let content_type = header(req, hyper::header::CONTENT_TYPE).map(String::from);
    let wants_watch = path.legacy_watch || query.flag("watch")?;
    if path.legacy_watch && method != Method::GET {
        return Err(Status::method_not_allowed(format!(
            "the server does not allow the method {method} on {uri_path}"
        )));
    }
    let store = served.store.clone();
    let name = path.name.clone();
    match (&method, name) {
        (&Method::GET, name) if wants_watch => {
            let mut opts = query.list_options()?;
            if let Some(n) = name {
                if !opts.predicate.field.is_empty() {
                    return Err(Status::bad_request(
                        "a single-object watch may not have a field selector",
                    ));
                }
                opts.predicate.field = FieldSelector::name_equals(&n);
            }
            let format = WatchFormat {
                table: as_table,
                include_object,
            };
            let timeout = query.number("timeoutSeconds")?;
            Ok(watch::serve(store, scope, opts, timeout, format, state.shutdown.clone()).await)
        }
        (&Method::GET, Some(n)) => {
            let opts = GetOptions {
                resource_version: query.get("resourceVersion").unwrap_or("").to_string(),
                ignore_not_found: false,
            };
            let obj = store
                .get(&scope, &n, opts)
                .await
                .map_err(|e| Status::from(&e))?;
            if as_table {
                let meta = serde_json::json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or_default()});
                return Ok(response::json(
                    200,
                    &table::table(&def, &scope.version, &[obj], meta, &include_object, true),
                    &[],
                ));
            }
            Ok(response::json(200, &obj, &[]))
        }
        (&Method::GET, None) => {
            let list = store
                .list(&scope, query.list_options()?)
                .await
                .map_err(|e| Status::from(&e))?;
            if as_table {
                let items = list["items"].as_array().cloned().unwrap_or_default();
                return Ok(response::json(
                    200,
                    &table::table(
                        &def,
                        &scope.version,
                        &items,
                        list["metadata"].clone(),
                        &include_object,
                        true,
                    ),
                    &[],
                ));
            }
            Ok(response::json(200, &list, &[]))
        }
        (&Method::POST, None) if path.subresource.is_none() => {
            body::require_json(content_type.as_deref())?;
            let bytes = read_body(incoming, state.max_body_bytes).await?;
            let (obj, mut warnings) = decode_checked(&bytes, scope.field_validation)?;
            let outcome = store
                .create(&scope, obj)
                .await
                .map_err(|e| Status::from(&e))?;
            warnings.extend(outcome.warnings.iter().cloned());
            after_write(state, &served, &scope, &outcome).await;
            Ok(response::json(201, &outcome.object, &warnings))
        }
        (&Method::PUT, Some(n)) => {
            body::require_json(content_type.as_deref())?;
            let bytes = read_body(incoming, state.max_body_bytes).await?;
            let (obj, mut warnings) = decode_checked(&bytes, scope.field_validation)?;
            let input: UpdateFn = Arc::new(move |_| Ok(obj.clone()));
            let outcome = store
                .update(&scope, &n, input)
                .await
                .map_err(|e| Status::from(&e))?;
            warnings.extend(outcome.warnings.iter().cloned());
            after_write(state, &served, &scope, &outcome).await;
            Ok(response::json(
                if outcome.created { 201 } else { 200 },
                &outcome.object,
                &warnings,
            ))
        }
        (&Method::PATCH, Some(n)) => {
            let kind = patch_kind(content_type.as_deref())?;
            let bytes = read_body(incoming, state.max_body_bytes).await?;
            let patch = Patch::decode(kind, &bytes)?;
            let mut warnings = Vec::new();
            if scope.field_validation != FieldValidation::Ignore {
                let dups = body::duplicate_fields(&bytes);
                if !dups.is_empty() {
                    let list: Vec<String> = dups
                        .iter()
                        .map(|d| format!("duplicate field {d:?}"))
                        .collect();
                    if scope.field_validation == FieldValidation::Strict {
                        return Err(Status::bad_request(format!(
                            "strict decoding error: {}",
                            list.join(", ")
                        )));
                    }
                    warnings.extend(list);
                }
            }
            let def = store.definition().clone();
            let target = crate::registry::Target {
                group: def.group.clone(),
                plural: def.plural.clone(),
                kind: def.kind.clone(),
                name: n.clone(),
            };
            let input: UpdateFn = Arc::new(move |current: Option<&Value>| {
                let Some(current) = current else {
                    return Err(Error::NotFound(Box::new(target.clone())));
                };
                patch.apply(current).map_err(|why| {
                    Error::invalid(
                        &target,
                        FieldError {
                            kind: FieldErrorKind::Invalid,
                            field: String::new(),
                            detail: format!("the patch could not be applied: {why}"),
                        },
                    )
                })
            });
            let outcome = store
                .update(&scope, &n, input)
                .await
                .map_err(|e| Status::from(&e))?;
            warnings.extend(outcome.warnings.iter().cloned());
            after_write(state, &served, &scope, &outcome).await;
            Ok(response::json(200, &outcome.object, &warnings))
        }
        (&Method::DELETE, name) if path.subresource.is_none() => {
            let bytes = read_body(incoming, state.max_body_bytes).await?;
            let opts_body = if bytes.iter().all(u8::is_ascii_whitespace) {
                Value::Object(Default::default())
            } else {
                body::decode_object(&bytes)?
            };
            let mut opts = DeleteOptions::from_json(&opts_body).map_err(|e| Status::from(&e))?;
            if let Some(g) = query.get("gracePeriodSeconds") {
                opts.grace_period_seconds =
                    Some(g.parse().map_err(|_| {
                        Status::bad_request("gracePeriodSeconds must be an integer")
                    })?);
            }
            if let Some(p) = query.get("propagationPolicy") {
                opts.propagation_policy = Some(p.to_string());
            }
            let outcome = match name {
                Some(n) => store.delete(&scope, &n, &opts).await,
                None => {
                    store
                        .delete_collection(&scope, query.list_options()?, &opts)
                        .await
                }
            }
            .map_err(|e| Status::from(&e))?;
            after_write(state, &served, &scope, &outcome).await;
            Ok(response::json(200, &outcome.object, &outcome.warnings))
        }
        _ => Err(Status::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method} {uri_path})"
        ))),
    }
}

/// Reads the request body (once).
async fn read_body(incoming: &mut Option<Incoming>, max: usize) -> Result<bytes::Bytes, Status> {
    match incoming.take() {
        Some(b) => body::read(b, max).await,
        None => Ok(bytes::Bytes::new()),
    }
}

/// Decodes a create/update body, applying the field validation mode to duplicate fields.
fn decode_checked(bytes: &[u8], mode: FieldValidation) -> Result<(Value, Vec<String>), Status> {
    let obj = body::decode_object(bytes)?;
    let mut warnings = Vec::new();
    if mode != FieldValidation::Ignore {
        let dups = body::duplicate_fields(bytes);
        if !dups.is_empty() {
            let list: Vec<String> = dups
                .iter()
                .map(|d| format!("duplicate field {d:?}"))
                .collect();
            if mode == FieldValidation::Strict {
                return Err(Status::bad_request(format!(
                    "strict decoding error: {}",
                    list.join(", ")
                )));
            }
            warnings.extend(list);
        }
    }
    Ok((obj, warnings))
}

/// After a definition write, waits until the served table reflects it, so the client's next
/// request sees the change.
async fn after_write(
    state: &AppState,
    served: &ServedResource,
    scope: &RequestScope,
    outcome: &Outcome,
) {
    if scope.dry_run || served.def.group != crate::registry::definition::CRD_GROUP {
        return;
    }
    let rv = outcome
        .object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok());
    match rv {
        Some(rv) => {
            state
                .registry
                .wait_observed(rv, DEFINITION_PROPAGATION)
                .await
        }
        None => {
            if let Ok(rev) = state.storage.current_revision().await {
                state
                    .registry
                    .wait_observed(rev, DEFINITION_PROPAGATION)
                    .await;
            }
        }
    }
}
