//! Resource requests, one module per verb: this dispatcher resolves the resource
//! (`resolve.rs`), parses the verb's typed parameters (`api/params.rs`), decodes its body
//! through `api/body.rs`, and hands the typed values to the verb's handler.

pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod delete_collection;
pub(crate) mod get;
pub(crate) mod list;
pub(crate) mod patch;
pub(crate) mod resolve;
mod review;
mod scale;
pub(crate) mod update;
pub(crate) mod watch;

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::http::request::Parts;
use hyper::{Request, Response};
use serde_json::Value;

use super::audit::AuditContext;
use super::body;
use super::params::{
    manager_from_user_agent, DeleteCollectionParams, DeleteParams, Format, GetParams, ListParams,
    PatchParams, PostParams, WatchParams,
};
use super::patch::{patch_kind, Patch};
use super::query::Query;
use super::response::{self, Body};
use super::route::{ResourcePath, Verb};
use super::state::AppState;
use super::status::Status;
use crate::user::UserInfo;
use resolve::Resolved;
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::{Outcome, RequestScope};

/// How long a CRD write waits for the served table to reflect it.
const DEFINITION_PROPAGATION: Duration = Duration::from_secs(3);

/// Handles one resource request; `verb` is `None` when the method selects none (405).
pub(crate) async fn handle(
    state: &AppState,
    req: Request<Incoming>,
    path: ResourcePath,
    verb: Option<Verb>,
    query: &Query,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let mut body = Some(body);
    let resp = match run(state, &parts, &mut body, path, verb, query).await {
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

fn header(parts: &Parts, name: hyper::header::HeaderName) -> Option<&str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// Reads the request body (once).
async fn read_body(incoming: &mut Option<Incoming>, max: usize) -> Result<bytes::Bytes, Status> {
    match incoming.take() {
        Some(b) => body::read(b, max).await,
        None => Ok(bytes::Bytes::new()),
    }
}

async fn run(
    state: &AppState,
    parts: &Parts,
    incoming: &mut Option<Incoming>,
    path: ResourcePath,
    verb: Option<Verb>,
    query: &Query,
) -> Result<Response<Body>, Status> {
    let uri_path = parts.uri.path();
    // The resource is resolved first: a path nothing serves is a 404 whatever the method.
    let user = parts
        .extensions
        .get::<Arc<UserInfo>>()
        .cloned()
        .unwrap_or_default();
    let mut res = Resolved::resolve(&state.registry, user, path, verb, uri_path)?;
    res.audit = AuditContext::of(&parts.extensions);
    // A deprecated version warns on every answer, errors included, as Kubernetes does.
    let deprecation = res.def().deprecation_warning(&res.path.version);
    let strategy_modules =
        res.path.group == "strategyhost.io" && res.path.plural == "strategymodules";
    let mut resp = match serve(state, parts, incoming, res, verb, query).await {
        Ok(resp) => resp,
        Err(status) if strategy_modules => response::status(&with_module_size_hint(status)),
        Err(status) => response::status(&status),
    };
    if let Some(warning) = deprecation {
        if let Ok(value) = hyper::header::HeaderValue::from_str(&response::warning_header(&warning))
        {
            resp.headers_mut().append("Warning", value);
        }
    }
    Ok(resp)
}

/// A `StrategyModule` too large for the request body limit (413) or for etcd's request limit
/// gets the way out in its message: the module by URL, or the flag.
fn with_module_size_hint(mut status: Status) -> Status {
    if status.code == 413 || status.message.contains("request is too large") {
        status.message.push_str(
            "; a StrategyModule can name its module by spec.url (oci:// or https://, pulled by \
             every replica) instead of carrying it in spec.module, or the server's \
             --max-request-body-bytes can be raised (etcd's own limit, --max-request-bytes, is \
             1.5 MiB by default)",
        );
    }
    status
}

/// Serves a request for a resolved resource.
async fn serve(
    state: &AppState,
    parts: &Parts,
    incoming: &mut Option<Incoming>,
    res: Resolved,
    verb: Option<Verb>,
    query: &Query,
) -> Result<Response<Body>, Status> {
    let uri_path = parts.uri.path();
    let not_allowed = || {
        Status::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({} {uri_path})",
            parts.method
        ))
    };
    let Some(verb) = verb else {
        return Err(not_allowed());
    };
    let content_type = header(parts, hyper::header::CONTENT_TYPE);
    // Creates that store nothing: a ServiceAccount's token, the reviews.
    let asks = res.def().create_only || res.path.subresource.as_deref() == Some("token");
    if asks {
        if verb != Verb::Create {
            return Err(not_allowed());
        }
        let bytes = read_body(incoming, state.max_body_bytes).await?;
        let (request, _) = body::decode_object_in(
            content_type,
            &bytes,
            strategy_host_registry::FieldValidation::Ignore,
            true,
        )?;
        // A review has no metadata to print in a Table: a client that accepts only a Table
        // gets 406, as from kube-apiserver.
        if crate::table::only_table(header(parts, hyper::header::ACCEPT)) {
            return Err(Status::not_acceptable(&[
                "application/json",
                "application/yaml",
                crate::protobuf::PROTOBUF,
            ]));
        }
        let format = Format::parse(header(parts, hyper::header::ACCEPT), query);
        return if res.def().create_only {
            review::create(state, &res, request, format).await
        } else {
            review::token(state, &res, request, format).await
        };
    }
    let user_agent = header(parts, hyper::header::USER_AGENT);
    if res.path.subresource.as_deref() == Some("scale") {
        let format = Format::parse(header(parts, hyper::header::ACCEPT), query);
        let max = state.max_body_bytes;
        return match verb {
            Verb::Get => scale::get(&res, GetParams::from_query(query)?, format).await,
            Verb::Update => {
                let mut params = PostParams::from_query(query)?;
                if params.field_manager.is_empty() {
                    params.field_manager = manager_from_user_agent(user_agent);
                }
                let bytes = read_body(incoming, max).await?;
                let (scale, _) =
                    body::decode_object_in(content_type, &bytes, params.field_validation, true)?;
                res.audit.log_request_object(&scale);
                scale::update(&res, params, scale, format).await
            }
            Verb::Patch => {
                let params = PatchParams::from_query(query)?;
                let kind = patch_kind(content_type, true)?;
                let bytes = read_body(incoming, max).await?;
                let (patch, _) = body::decode_patch(kind, &bytes, params.field_validation)?;
                res.audit.log_request_body(|| patch_json(&patch));
                scale::patch(&res, params, patch, format, user_agent).await
            }
            _ => Err(not_allowed()),
        };
    }
    let selectable = res.def().selectable_fields(&res.path.version);
    let format = || Format::parse(header(parts, hyper::header::ACCEPT), query);
    let max = state.max_body_bytes;
    match verb {
        Verb::Get => get::get(&res, GetParams::from_query(query)?, format()).await,
        Verb::List => list::list(&res, ListParams::from_query(query, &selectable)?, format()).await,
        Verb::Watch => {
            let params = WatchParams::from_query(query, &selectable)?;
            watch::watch(&res, params, format(), state.shutdown.clone()).await
        }
        Verb::Create | Verb::Update => {
            let mut params = PostParams::from_query(query)?;
            if params.field_manager.is_empty() {
                params.field_manager = manager_from_user_agent(user_agent);
            }
            let bytes = read_body(incoming, max).await?;
            let builtin = res.store().definition().builtin;
            let (obj, warnings) =
                body::decode_object_in(content_type, &bytes, params.field_validation, builtin)?;
            res.audit.log_request_object(&obj);
            let mut scope = res.scope(params.dry_run, params.field_validation);
            scope.field_manager = params.field_manager;
            let outcome = if verb == Verb::Create {
                create::create(&res, &scope, obj).await?
            } else {
                update::update(&res, &scope, obj).await?
            };
            // A create answers 201, and so does an update that created (create-on-update).
            let code = if outcome.created { 201 } else { 200 };
            Ok(written(state, &res, &scope, outcome, warnings, code, format()).await)
        }
        Verb::Patch => {
            let params = PatchParams::from_query(query)?;
            let kind = patch_kind(content_type, res.store().definition().builtin)?;
            let bytes = read_body(incoming, max).await?;
            let (patch, warnings) = body::decode_patch(kind, &bytes, params.field_validation)?;
            res.audit.log_request_body(|| patch_json(&patch));
            patch::patch(state, &res, params, patch, warnings, format(), user_agent).await
        }
        Verb::Delete => {
            let bytes = read_body(incoming, max).await?;
            let options = body::decode_delete_options(content_type, &bytes)?;
            res.audit
                .log_request_body(|| delete_options_json(content_type, &bytes));
            delete::delete(state, &res, DeleteParams::new(query, options)?, format()).await
        }
        Verb::DeleteCollection => {
            let list = ListParams::from_query(query, &selectable)?;
            let bytes = read_body(incoming, max).await?;
            let options = body::decode_delete_options(content_type, &bytes)?;
            res.audit
                .log_request_body(|| delete_options_json(content_type, &bytes));
            let params = DeleteCollectionParams {
                list,
                delete: DeleteParams::new(query, options)?,
            };
            delete_collection::delete_collection(state, &res, params, format()).await
        }
    }
}

/// A read's answer as a Table (`as=Table` in the client's Accept): `items`' rows under the
/// list metadata `meta`, recorded for audit.
fn table_response(
    res: &Resolved,
    version: &str,
    items: &[Value],
    meta: Value,
    format: &Format,
) -> Response<Body> {
    let include_object = format.include_object.as_str();
    let t = super::table::table(res.def(), version, items, meta, include_object, true);
    res.audit.log_response_object(&t);
    response::json(200, &t, &[])
}

/// What every write verb answers with: the written object in the client's encoding, with the
/// request's warnings and the write's, once a definition write is served (see
/// [`settle_definitions`]).
async fn written(
    state: &AppState,
    res: &Resolved,
    scope: &RequestScope,
    outcome: Outcome,
    mut warnings: Vec<String>,
    code: u16,
    format: Format,
) -> Response<Body> {
    warnings.extend(outcome.warnings.iter().cloned());
    settle_definitions(state, res, scope, &outcome).await;
    res.audit.log_response_object(&outcome.object);
    response::object(code, &outcome.object, &warnings, format.protobuf)
}

/// After a definition write, waits until the served table reflects it, so the client's next
/// request sees the change.
async fn settle_definitions(
    state: &AppState,
    res: &Resolved,
    scope: &RequestScope,
    outcome: &Outcome,
) {
    if scope.dry_run || res.def().group != strategy_host_registry::definition::CRD_GROUP {
        return;
    }
    let rv = meta_str(&outcome.object, "resourceVersion").and_then(|r| r.parse().ok());
    let rev = match rv {
        Some(rv) => rv,
        // A deletecollection answers a list; wait for the store's current revision instead.
        None => match state.storage.current_revision().await {
            Ok(rev) => rev,
            Err(_) => return,
        },
    };
    state
        .registry
        .wait_observed(rev, DEFINITION_PROPAGATION)
        .await;
}

/// A patch as the audit log records it (the patch document; a JSON patch as its operations).
fn patch_json(patch: &Patch) -> Option<Value> {
    match patch {
        Patch::Merge(v) | Patch::Strategic(v) | Patch::Apply(v) => Some(v.clone()),
        Patch::Json(ops) => serde_json::to_value(ops).ok(),
    }
}

/// A delete's `DeleteOptions` as the audit log records them: the body (JSON or protobuf), typed
/// `meta.k8s.io/v1` `DeleteOptions` as Kubernetes writes them.
fn delete_options_json(content_type: Option<&str>, bytes: &[u8]) -> Option<Value> {
    let mut options = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Object(serde_json::Map::new())
    } else if super::media::media_type(content_type) == super::protobuf::PROTOBUF {
        super::protobuf::decode(bytes).ok()?
    } else {
        serde_json::from_slice(bytes).ok()?
    };
    let map = options.as_object_mut()?;
    map.insert("kind".into(), Value::from("DeleteOptions"));
    map.insert("apiVersion".into(), Value::from("meta.k8s.io/v1"));
    Some(options)
}
