//! Dispatch: each authorized request's route to the handler that answers it (health, metrics,
//! discovery, OpenAPI, the issuer's documents, the resource verbs), or to an aggregated API
//! server that serves its group and version.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};

use super::health::{self, Reply};
use super::openapi_v2_protobuf::{self, Form};
use super::query::Query;
use super::response::{self, Body};
use super::route::Route;
use super::state::AppState;
use super::status::Status;
use super::{aggregated_discovery, discovery, modules, openapi, verbs};

fn accept(req: &Request<Incoming>) -> Option<&str> {
    req.headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
}

fn reply(r: Reply) -> Response<Body> {
    match r {
        Reply::Text(code, text) => response::text(code, text),
        Reply::Json(code, value) => response::json(code, &value, &[]),
    }
}

fn not_found(path: &str) -> Response<Body> {
    response::status(&Status::not_found(format!(
        "the server could not find the requested resource ({path})"
    )))
}

/// The ServiceAccount issuer's OpenID configuration or key set (`keys`), cacheable as
/// kube-apiserver serves them; 404 when the issuer allows neither.
fn issuer_document(state: &AppState, keys: bool, path: &str) -> Response<Body> {
    use strategy_host_authentication::issuer_discovery::{CACHE_CONTROL, JWKS_CONTENT_TYPE};
    let Some(discovery) = &state.issuer_discovery else {
        return not_found(path);
    };
    let (content_type, body) = if keys {
        (JWKS_CONTENT_TYPE, discovery.jwks.clone())
    } else {
        ("application/json", discovery.configuration.clone())
    };
    let mut response = response::bytes(200, content_type, body);
    response.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static(CACHE_CONTROL),
    );
    response
}

/// A GET-only document, or 404 when there is none.
fn document(doc: Option<serde_json::Value>, path: &str) -> Response<Body> {
    match doc {
        Some(doc) => response::json(200, &doc, &[]),
        None => not_found(path),
    }
}

/// The response to an authorized, admitted request: proxied to an aggregated API server, or
/// answered by the handler its route names.
pub(super) async fn dispatch(
    req: Request<Incoming>,
    state: &AppState,
    route: Route,
    query: Query,
) -> Response<Body> {
    let path = req.uri().path().to_string();
    let registry = &state.registry;
    if let Some(aggregation) = &state.aggregation {
        let remote = route
            .group_version()
            .and_then(|(group, version)| aggregation.remote(group, version));
        let user = req
            .extensions()
            .get::<Arc<crate::user::UserInfo>>()
            .cloned();
        if let (Some(apiservice), Some(user)) = (remote, user) {
            return super::aggregator::proxy(aggregation, &apiservice, req, &user).await;
        }
    }
    if matches!(
        route,
        Route::Resource(..) | Route::ResourceMethodNotAllowed(..)
    ) {
        if let Some(starting) = modules::starting_gate(state) {
            return response::status(&starting);
        }
    }
    match route {
        Route::Live => reply(health::live()),
        Route::Ready => {
            let kms = state.encryption.as_ref().and_then(|e| e.kms_failure());
            let loading = modules::still_loading(state);
            reply(health::ready(&state.storage, registry.is_synced(), kms, loading).await)
        }
        Route::Version => response::json(200, &health::version(), &[]),
        Route::Metrics => response::open_metrics(state.metrics.encode()),
        Route::StorageSnapshot => super::snapshot::save(state).await,
        Route::DebugStrategies => match &state.modules {
            Some(m) => reply(modules::debug_strategies(m)),
            None => not_found(&path),
        },
        Route::OpenIdConfiguration | Route::OpenIdKeySet => {
            issuer_document(state, matches!(route, Route::OpenIdKeySet), &path)
        }
        Route::OpenApiV2 => match openapi_v2_protobuf::negotiate(accept(&req)) {
            Some(Form::Json) => document(Some(openapi::v2(registry)), &path),
            Some(Form::Protobuf) => response::bytes(
                200,
                openapi_v2_protobuf::MEDIA_TYPE,
                openapi_v2_protobuf::encode(&openapi::v2(registry)),
            ),
            None => response::status(&Status::not_acceptable(&[
                "application/json",
                openapi_v2_protobuf::MEDIA_TYPE,
            ])),
        },
        Route::OpenApiV3 => document(
            Some(openapi::v3_index(registry, state.aggregation.as_deref())),
            &path,
        ),
        Route::OpenApiV3GroupVersion { group, version } => {
            document(openapi::v3_group_version(registry, &group, &version), &path)
        }
        Route::CoreVersions | Route::Groups if aggregated_discovery::wanted(accept(&req)) => {
            let core = matches!(route, Route::CoreVersions);
            let doc = aggregated_discovery::document(registry, state.aggregation.as_deref(), core);
            response::json_as(&doc, aggregated_discovery::CONTENT_TYPE)
        }
        Route::CoreVersions => document(Some(discovery::core_versions()), &path),
        Route::Groups => document(
            Some(discovery::group_list(
                registry,
                state.aggregation.as_deref(),
            )),
            &path,
        ),
        Route::Group(g) => document(
            discovery::group(registry, state.aggregation.as_deref(), &g),
            &path,
        ),
        Route::GroupVersion(g, v) => document(discovery::resource_list(registry, &g, &v), &path),
        Route::Resource(p, verb) => verbs::handle(state, req, p, Some(verb), &query).await,
        Route::ResourceMethodNotAllowed(p) => verbs::handle(state, req, p, None, &query).await,
        Route::MethodNotAllowed => response::status(&Status::method_not_allowed(format!(
            "the server does not allow the method {} on {path}",
            req.method()
        ))),
        Route::NotFound => not_found(&path),
    }
}
