//! The hyper server: accepts HTTP/1.1 and HTTP/2 (cleartext, prior knowledge) on one port,
//! routes requests, and shuts down gracefully: on the shutdown signal it stops accepting, lets
//! in-flight requests finish (up to a grace period), then returns.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use super::health::{self, Reply};
use super::status::Status;
use crate::storage::Storage;

/// How long in-flight requests may run after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What every request handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The store (the cacher over etcd3 or the embedded store, once the cacher lands).
    pub storage: Arc<dyn Storage>,
}

/// Serves `state` on `listener` until `shutdown` resolves.
///
/// # Errors
/// Only when accepting connections fails for good.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
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
                    async move { Ok::<_, Infallible>(route(req, &state, peer).await) }
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
    tracing::info!("shutting down: finishing in-flight requests");
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("grace period over; closing the remaining connections");
    }
    Ok(())
}

async fn route(
    req: Request<Incoming>,
    state: &AppState,
    peer: SocketAddr,
) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    tracing::debug!(%peer, method = %req.method(), %path, "request");
    let reply = match health::handle(&path, &state.storage).await {
        Some(reply) if req.method() == hyper::Method::GET => reply,
        Some(_) => Status::method_not_allowed(format!(
            "the server does not allow the method {} on {path}",
            req.method()
        ))
        .into(),
        None => Status::not_found(format!(
            "the server could not find the requested resource ({path})"
        ))
        .into(),
    };
    render(reply)
}

fn render(reply: Reply) -> Response<Full<Bytes>> {
    let (code, content_type, body) = match reply {
        Reply::Text(code, text) => (code, "text/plain; charset=utf-8", Bytes::from(text)),
        Reply::Json(code, value) => (
            code,
            "application/json",
            Bytes::from(serde_json::to_vec(&value).unwrap_or_default()),
        ),
    };
    Response::builder()
        .status(code)
        .header(hyper::header::CONTENT_TYPE, content_type)
        .body(Full::new(body))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}
