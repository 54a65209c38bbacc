//! The hyper server: accepts TLS (HTTP/1.1 and HTTP/2 by ALPN) or, in development mode,
//! cleartext HTTP/1.1 and HTTP/2 (prior knowledge) on one port; passes each request through the
//! filters (authentication, authorization) and hands it to `dispatch.rs`; and shuts down
//! gracefully: on the shutdown signal it stops accepting, ends open watches, lets in-flight
//! requests finish (up to a grace period), then returns.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use std::time::{Duration, Instant};

use futures::FutureExt as _;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use super::audit;
use super::filters;
use super::first_read::FirstReadDeadline;
use super::flowcontrol::{self, Classification};
use super::idle::ConnectionActivity;
use super::impersonation;
use super::metrics::RequestInfo;
use super::query::Query;
use super::response::{self, Body};
use super::route::Route;
use super::state::AppState;
use super::status::Status;
use super::tls::{ConnectionIdentity, TlsServing};
use strategy_host_authorization::Attributes;

/// How long in-flight requests may run after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// The longest a non-watch request may take before it answers 504.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What one client connection may hold.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// A connection must send its first bytes, and each request's headers, within this, and
    /// an idle HTTP/1.1 connection is closed after it (kube-apiserver's `ReadHeaderTimeout`,
    /// 32 s): connections that never finish a request cannot pile up.
    pub read_header_timeout: Duration,
    /// The most streams an HTTP/2 connection may have open at once (kube-apiserver's
    /// `--http2-max-streams-per-connection`; Go's default, 250).
    pub http2_max_streams: u32,
    /// A connection with nothing in progress this long is closed (kube-apiserver's
    /// `IdleTimeout`, 90 s; on HTTP/2 with a GOAWAY).
    pub idle_timeout: Duration,
}

/// How often an HTTP/2 connection is pinged, and how long a ping may go unanswered before the
/// connection is closed: a peer that vanished does not hold its streams forever.
const HTTP2_PING_INTERVAL: Duration = Duration::from_secs(30);
const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// Serves `state` on `listener` (over TLS when `tls` is given) until `shutdown` resolves, each
/// connection within `limits`.
///
/// # Errors
/// Only when accepting connections fails for good.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsServing>,
    mut state: AppState,
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let read_header_timeout = limits.read_header_timeout;
    let (stop_tx, stop_rx) = watch::channel(false);
    state.shutdown = stop_rx.clone();
    // Each connection holds a sender; all dropped means all connections ended.
    let (open_tx, mut open_rx) = mpsc::channel::<()>(1);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(read_header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.http2_max_streams)
        .keep_alive_interval(HTTP2_PING_INTERVAL)
        .keep_alive_timeout(HTTP2_PING_TIMEOUT);
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
                prepare(&stream, peer);
                let state = state.clone();
                let (builder, tls, stop, open) =
                    (builder.clone(), tls.clone(), stop_rx.clone(), open_tx.clone());
                tokio::spawn(async move {
                    let _open = open;
                    let activity = ConnectionActivity::new();
                    // The handshake runs here, not in the accept loop: a slow client delays
                    // only itself.
                    let result = match tls {
                        Some(tls) => match tls.accept(stream).await {
                            Ok((stream, identity)) => {
                                let service = service(state, peer, Arc::new(identity), activity.clone());
                                let stream = FirstReadDeadline::new(stream, read_header_timeout);
                                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                                until_stopped_or_idle(conn, |c| c.graceful_shutdown(), stop, &activity, limits.idle_timeout).await
                            }
                            Err(e) => {
                                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                                return;
                            }
                        },
                        None => {
                            let service = service(state, peer, Arc::default(), activity.clone());
                            let stream = FirstReadDeadline::new(stream, read_header_timeout);
                            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                            until_stopped_or_idle(conn, |c| c.graceful_shutdown(), stop, &activity, limits.idle_timeout).await
                        }
                    };
                    if let Err(e) = result {
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
    drop(open_tx);
    if tokio::time::timeout(SHUTDOWN_GRACE, open_rx.recv())
        .await
        .is_err()
    {
        tracing::warn!("grace period over; closing the remaining connections");
    }
    Ok(())
}

/// Serves `conn` to its end, closing it gracefully with `close` (HTTP/2: GOAWAY, then the
/// streams in progress finish; HTTP/1.1: after the request in progress) once shutdown begins
/// or it has been idle for `idle_timeout`.
async fn until_stopped_or_idle<C, E>(
    conn: C,
    close: impl FnOnce(std::pin::Pin<&mut C>),
    mut stop: watch::Receiver<bool>,
    activity: &ConnectionActivity,
    idle_timeout: Duration,
) -> Result<(), E>
where
    C: std::future::Future<Output = Result<(), E>>,
{
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => return result,
        _ = stop.wait_for(|stopping| *stopping) => {}
        () = activity.idle(idle_timeout) => {}
    }
    close(conn.as_mut());
    conn.await
}

/// Sets up an accepted connection: `TCP_NODELAY`, as Go's servers (Kubernetes') do. Without
/// it Nagle's algorithm holds a small write (an HTTP/2 frame, a watch event) while an earlier
/// one is unacknowledged, and the peer's delayed ACK makes that a 40 ms stall: seen as a 44 ms
/// p99 on cached GETs over one HTTP/2 connection.
fn prepare(stream: &tokio::net::TcpStream, peer: SocketAddr) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(%peer, error = %e, "could not set TCP_NODELAY");
    }
}

/// The hyper service of one connection.
fn service(
    state: AppState,
    peer: SocketAddr,
    identity: Arc<ConnectionIdentity>,
    activity: Arc<ConnectionActivity>,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<Body>,
    Error = Infallible,
    Future = futures::future::BoxFuture<'static, Result<Response<Body>, Infallible>>,
> {
    hyper::service::service_fn(move |req| {
        let (state, identity) = (state.clone(), identity.clone());
        // In progress until the response body is written (a watch: until it ends).
        let in_progress = activity.begin();
        // Boxed: hyper keeps each HTTP/2 stream's task for as long as its response body
        // streams, and a task is as large as the future it was spawned with. Unboxed, every
        // open watch kept the whole request handler's state (~8 KiB) after it had answered.
        async move {
            let response = guarded(req, state, peer, &identity).await;
            Ok::<_, Infallible>(response::holding(response, in_progress))
        }
        .boxed()
    })
}

/// Authenticates and routes the request once, authorizes it, then dispatches it with the
/// in-flight limit, the request timeout and a panic guard: whatever happens, the client gets a
/// `Status` and the server carries on.
async fn guarded(
    mut req: Request<Incoming>,
    state: AppState,
    peer: SocketAddr,
    identity: &ConnectionIdentity,
) -> Response<Body> {
    tracing::debug!(%peer, method = %req.method(), path = %req.uri().path(), "request");
    let user = match state
        .security
        .authenticate(req.headers(), req.uri().path(), identity)
        .await
    {
        Ok(user) => user,
        Err(status) => {
            let mut response = response::status(&status);
            if let Some(auditor) = &state.audit {
                // Logged as Kubernetes does a failed authentication: who is not known.
                let attributes = Attributes {
                    verb: req.method().as_str().to_ascii_lowercase(),
                    path: req.uri().path().to_string(),
                    ..Attributes::default()
                };
                auditor
                    .begin(&attributes, &mut req, peer.ip())
                    .complete(&mut response);
            }
            return response;
        }
    };
    let query = Query::parse(req.uri().query());
    let route = match Route::parse(req.method(), req.uri().path(), &query) {
        Ok(route) => route,
        Err(status) => return response::status(&status),
    };
    let attributes = filters::attributes(&route, req.method(), req.uri().path(), &query, user);
    // The audit begins before impersonation and authorization, so a refusal is logged too,
    // under the user who asked.
    let audit = state
        .audit
        .as_ref()
        .map(|a| a.begin(&attributes, &mut req, peer.ip()));
    let attributes = match impersonation::act_as(&mut req, &state.security, attributes).await {
        Ok(attributes) => attributes,
        Err(status) => {
            let mut response = response::status(&status);
            if let Some(audit) = audit {
                audit.complete(&mut response);
            }
            return response;
        }
    };
    let decision = state.security.authorize(&attributes).await;
    let reason = match decision.error() {
        Some(_) => "internal error",
        None => decision.reason(),
    };
    audit::set_decision(req.extensions(), decision.allowed(), reason);
    let mut response = if decision.allowed() {
        let flow = state.flow_control.classify(&attributes);
        req.extensions_mut().insert(Arc::new(attributes.user));
        routed(req, &state, route, query, flow).await
    } else if let Some(error) = decision.error() {
        // An authorizer failed and none allowed: kube-apiserver's 500, not a 403.
        response::status(&Status::internal(error))
    } else {
        response::status(&filters::forbidden(&attributes, decision.reason()))
    };
    if let Some(audit) = audit {
        audit.complete(&mut response);
    }
    response
}

/// Dispatches an authorized request of `flow`, counted in the request metrics.
async fn routed(
    req: Request<Incoming>,
    state: &AppState,
    route: Route,
    query: Query,
    flow: Classification,
) -> Response<Body> {
    let info = RequestInfo::of(req.method(), &route);
    let started = Instant::now();
    let _inflight = state.metrics.in_flight(&info);
    // Kubernetes names the schema and level that served a request in its response.
    let served_by = [
        ("x-kubernetes-pf-flowschema-uid", flow.schema_uid.clone()),
        ("x-kubernetes-pf-prioritylevel-uid", flow.level_uid.clone()),
    ];
    let mut response = limited(req, state, route, query, flow).await;
    for (header, uid) in served_by.into_iter().filter(|(_, uid)| !uid.is_empty()) {
        if let Ok(value) = hyper::header::HeaderValue::from_str(&uid) {
            response.headers_mut().insert(header, value);
        }
    }
    state
        .metrics
        .observe(&info, response.status().as_u16(), started.elapsed());
    response
}

/// `dispatch` once its flow's priority level admits it, within the request timeout (watches
/// excepted), under a panic guard.
async fn limited(
    req: Request<Incoming>,
    state: &AppState,
    route: Route,
    query: Query,
    flow: Classification,
) -> Response<Body> {
    // Watches stay open for as long as the client wants: they take no seat and have no
    // request timeout.
    let long_running = route.is_long_running();
    let permit = if long_running {
        None
    } else {
        let seats = flowcontrol::estimate_seats(&route, &query, &state.registry);
        match state.flow_control.admit(&flow, seats).await {
            Ok(admitted) => Some(admitted),
            Err(status) => return response::status(&status),
        }
    };
    let work = AssertUnwindSafe(super::dispatch::dispatch(req, state, route, query)).catch_unwind();
    let result = if long_running {
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
    let response = result.unwrap_or_else(|payload| {
        tracing::error!("a request handler panicked");
        let mut response =
            response::status(&Status::internal("the request could not be completed"));
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        audit::mark_panicked(&mut response, message);
        response
    });
    // The seats are held until the body is written: a list's cost is mostly there.
    match permit {
        Some(admitted) => response::holding(response, admitted),
        None => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_send_small_writes_at_once() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::net::TcpStream::connect(addr);
        let ((accepted, peer), _client) =
            tokio::join!(async { listener.accept().await.unwrap() }, async {
                client.await.unwrap()
            });
        assert!(
            !accepted.nodelay().unwrap(),
            "the default is Nagle's algorithm"
        );
        prepare(&accepted, peer);
        assert!(accepted.nodelay().unwrap());
    }
}
