//! An HTTP/2 client for load runs: a few connections, each multiplexing many requests (h2c
//! by prior knowledge on `http://`, TLS with ALPN `h2` on `https://`), so ten thousand
//! watches need tens of sockets rather than ten thousand.
//!
//! Like the other load clients it trusts `STRATEGY_HOST_CA_FILE` and sends
//! `STRATEGY_HOST_TOKEN` as a bearer token when they are set.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context as _};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper::{Request, Response, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;

/// Connections to one server, requests spread over them round-robin or placed on one.
#[derive(Clone)]
pub struct H2Client {
    senders: Vec<SendRequest<Full<Bytes>>>,
    /// `scheme://host:port`, prefixed to every path (HTTP/2 wants absolute URIs).
    origin: String,
    authorization: Option<String>,
    next: Arc<AtomicUsize>,
}

impl H2Client {
    /// Opens `connections` HTTP/2 connections to `server` (`http://host:port` or `https://…`).
    ///
    /// # Errors
    /// The server cannot be reached, refuses HTTP/2, or (https) its certificate is not signed
    /// by `STRATEGY_HOST_CA_FILE`.
    pub async fn connect(server: &str, connections: usize) -> anyhow::Result<Self> {
        let uri: Uri = server.parse().context("the server URL")?;
        let host = uri.host().context("the server URL has no host")?.to_owned();
        let tls = match uri.scheme_str() {
            Some("http") => None,
            Some("https") => Some(tls_connector()?),
            _ => bail!("{server}: the scheme must be http or https"),
        };
        let port = uri
            .port_u16()
            .unwrap_or(if tls.is_some() { 443 } else { 80 });
        let mut senders = Vec::with_capacity(connections);
        for _ in 0..connections.max(1) {
            let tcp = TcpStream::connect((host.as_str(), port))
                .await
                .with_context(|| format!("connecting to {server}"))?;
            tcp.set_nodelay(true)?;
            let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
            // Large windows: a watch connection carries hundreds of streams that each receive
            // continuously, and small windows would make flow control the figure.
            builder
                .initial_stream_window_size(4 << 20)
                .initial_connection_window_size(64 << 20);
            let sender = match &tls {
                None => {
                    let (sender, conn) = builder.handshake(TokioIo::new(tcp)).await?;
                    tokio::spawn(conn);
                    sender
                }
                Some(connector) => {
                    let name = ServerName::try_from(host.clone())?;
                    let stream = connector.connect(name, tcp).await?;
                    let (sender, conn) = builder.handshake(TokioIo::new(stream)).await?;
                    tokio::spawn(conn);
                    sender
                }
            };
            senders.push(sender);
        }
        Ok(H2Client {
            senders,
            origin: server.trim_end_matches('/').to_owned(),
            authorization: std::env::var("STRATEGY_HOST_TOKEN")
                .ok()
                .map(|t| format!("Bearer {t}")),
            next: Arc::default(),
        })
    }

    /// How many connections the client holds.
    pub fn connections(&self) -> usize {
        self.senders.len()
    }

    /// Sends `method` to `path` (with a body of `content_type`) on the next connection in turn;
    /// the response with its body still to read.
    ///
    /// # Errors
    /// The connection failed.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
    ) -> anyhow::Result<Response<Incoming>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.send_on(n, method, path, body).await
    }

    /// [`Self::send`] on connection `connection` (modulo their number).
    ///
    /// # Errors
    /// The connection failed.
    pub async fn send_on(
        &self,
        connection: usize,
        method: &str,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
    ) -> anyhow::Result<Response<Incoming>> {
        self.send_accepting(connection, method, path, body, None)
            .await
    }

    /// [`Self::send_on`] with an `Accept` header (the server's default, JSON, without one).
    ///
    /// # Errors
    /// The connection failed.
    pub async fn send_accepting(
        &self,
        connection: usize,
        method: &str,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
        accept: Option<&str>,
    ) -> anyhow::Result<Response<Incoming>> {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.origin));
        if let Some(accept) = accept {
            req = req.header("accept", accept);
        }
        if let Some(authorization) = &self.authorization {
            req = req.header("authorization", authorization);
        }
        let req = match body {
            Some((bytes, content_type)) => req
                .header("content-type", content_type)
                .body(Full::new(Bytes::from(bytes)))?,
            None => req.body(Full::default())?,
        };
        // The sender is a handle onto the connection's queue: cloning it is how requests share
        // one connection.
        let mut sender = self.senders[connection % self.senders.len()].clone();
        Ok(sender.send_request(req).await?)
    }

    /// Sends a request and reads the whole answer: its status and body.
    ///
    /// # Errors
    /// The connection failed or the body could not be read.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<(Vec<u8>, &str)>,
    ) -> anyhow::Result<(u16, Bytes)> {
        let resp = self.send(method, path, body).await?;
        let status = resp.status().as_u16();
        Ok((status, resp.into_body().collect().await?.to_bytes()))
    }
}

/// TLS that trusts `STRATEGY_HOST_CA_FILE` and offers only HTTP/2.
fn tls_connector() -> anyhow::Result<tokio_rustls::TlsConnector> {
    let ca = std::env::var("STRATEGY_HOST_CA_FILE")
        .context("https needs STRATEGY_HOST_CA_FILE (the CA to trust)")?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&ca).context("the CA file")? {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}
