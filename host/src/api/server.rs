//! The hyper server: accepts HTTP/1.1 and HTTP/2 (cleartext, prior knowledge) on one port,
//! routes requests, and shuts down gracefully: on the shutdown signal it stops accepting, ends
//! open watches, lets in-flight requests finish (up to a grace period), then returns.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;

use std::time::{Duration, Instant};

use futures::FutureExt as _;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::health::{self, Reply};
use super::metrics::RequestInfo;
use super::request::{parse_path, Query, Route};
use super::response::{self, Body};
use super::state::AppState;
use super::status::Status;
use super::{discovery, openapi, resource};

/// How long in-flight requests may run after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// The longest a non-watch request may take before it answers 504.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Serves `state` on `listener` until `shutdown` resolves.
///
/// # Errors
/// Only when accepting connections fails for good.
pub async fn serve(
    listener: TcpListener,
    mut state: AppState,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    state.shutdown = stop_rx;
    let graceful = GracefulShutdown::new();
    let builder = auto::Builder::new(TokioExecutor::new());
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(conn) => conn,
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let state = state.clone();
                let service = hyper::service::service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(guarded(req, state, peer).await) }
                });
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                let conn = graceful.watch(conn.into_owned());
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    tracing::info!("shutting down: ending watches and finishing in-flight requests");
    let _ = stop_tx.send(true);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("grace period over; closing the remaining connections");
    }
    Ok(())
}

/// Runs `route` with the in-flight limit, the request timeout, and a panic guard: whatever
/// happens, the client gets a `Status` and the server carries on.
async fn guarded(req: Request<Incoming>, state: AppState, peer: SocketAddr) -> Response<Body> {
    let info = RequestInfo::of(req.method(), req.uri().path(), req.uri().query());
    let started = Instant::now();
    let _inflight = state.metrics.in_flight(&info);
    let response = limited(req, &state, peer).await;
    state
        .metrics
        .observe(&info, response.status().as_u16(), started.elapsed());
    response
}

/// `route` within the in-flight limit (watches excepted).
async fn limited(req: Request<Incoming>, state: &AppState, peer: SocketAddr) -> Response<Body> {
    let is_watch = req.uri().path().contains("/watch/")
        || req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let permit = if is_watch {
        None
    } else {
        match state.inflight.clone().try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) => {
                return response::status(&Status::too_many_requests(
                    "Too many requests, please try again later.",
                ))
            }
        }
    };
    answer(req, state, peer, is_watch, permit).await
}

/// `route` under the request timeout and a panic guard.
async fn answer(
    req: Request<Incoming>,
    state: &AppState,
    peer: SocketAddr,
    is_watch: bool,
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response<Body> {
    let work = AssertUnwindSafe(route(req, state, peer)).catch_unwind();
    let result = if is_watch {
        work.await
    } else {
        match tokio::time::timeout(REQUEST_TIMEOUT, work).await {
            Ok(r) => r,
            Err(_) => {
                return response::status(&Status::timeout(
                    "the request did not complete within the allowed duration",
                ))
            }
        }
    };
    drop(permit);
    result.unwrap_or_else(|_| {
        tracing::error!("a request handler panicked");
        response::status(&Status::internal("the request could not be completed"))
    })
}

async fn route(req: Request<Incoming>, state: &AppState, peer: SocketAddr) -> Response<Body> {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    tracing::debug!(%peer, %method, %path, "request");
    if path == "/metrics" && method == Method::GET {
        return response::open_metrics(state.metrics.encode());
    }
    let runtime_reply = state
        .modules
        .as_deref()
        .and_then(|m| super::modules::handle(&path, m));
    let reply = match runtime_reply {
        Some(r) => Some(r),
        None => health::handle(&path, &state.storage).await,
    };
    if let Some(reply) = reply {
        if method != Method::GET {
            return response::status(&Status::method_not_allowed(format!(
                "the server does not allow the method {method} on {path}"
            )));
        }
        let reply = match reply {
            Reply::Text(200, _) if path == "/readyz" && !state.registry.is_synced() => Reply::Text(
                503,
                "[-]resource definitions not synced\nreadyz check failed".into(),
            ),
            other => other,
        };
        return match reply {
            Reply::Text(code, text) => response::text(code, text),
            Reply::Json(code, value) => response::json(code, &value, &[]),
        };
    }
    let not_found = || {
        response::status(&Status::not_found(format!(
            "the server could not find the requested resource ({path})"
        )))
    };
    let get_only = |doc: Option<serde_json::Value>| {
        if method != Method::GET {
            return response::status(&Status::method_not_allowed(format!(
                "the server does not allow the method {method} on {path}"
            )));
        }
        match doc {
            Some(doc) => response::json(200, &doc, &[]),
            None => not_found(),
        }
    };
    if let Some(rest) = path.strip_prefix("/openapi/") {
        let doc = match rest.trim_end_matches('/') {
            "v2" => Some(openapi::v2(&state.registry)),
            "v3" => Some(openapi::v3_index(&state.registry)),
            other => match other
                .strip_prefix("v3/")
                .map(|p| p.split('/').collect::<Vec<_>>())
            {
                Some(parts) => match parts.as_slice() {
                    ["api", v] => openapi::v3_group_version(&state.registry, "", v),
                    ["apis", g, v] => openapi::v3_group_version(&state.registry, g, v),
                    _ => None,
                },
                None => None,
            },
        };
        return get_only(doc);
    }
    match parse_path(&path) {
        Some(Route::CoreVersions) => get_only(Some(discovery::core_versions())),
        Some(Route::Groups) => get_only(Some(discovery::group_list(&state.registry))),
        Some(Route::Group(g)) => get_only(discovery::group(&state.registry, &g)),
        Some(Route::GroupVersion(g, v)) => {
            get_only(discovery::resource_list(&state.registry, &g, &v))
        }
        Some(Route::Resource(p)) => {
            let query = Query::parse(req.uri().query());
            resource::handle(state, req, p, query).await
        }
        None => not_found(),
    }
}
