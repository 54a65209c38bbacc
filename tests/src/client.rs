//! The HTTP client the tests and load tools talk to the server with: plain requests, JSON calls
//! answering a `Reply` (with a secure server's CA and token from the environment), raw bytes, and
//! watches read line by line.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::bail;

use crate::secure;

/// GETs `url` and returns the status code and body, whatever the code.
pub fn get(url: &str) -> anyhow::Result<(u16, String)> {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    match agent.get(url).call() {
        Ok(resp) => Ok((resp.status(), resp.into_string()?)),
        Err(ureq::Error::Status(code, resp)) => Ok((code, resp.into_string()?)),
        Err(e) => Err(e.into()),
    }
}

/// Sends `method` to `url` with no body and returns the status code and body.
pub fn request(method: &str, url: &str) -> anyhow::Result<(u16, String)> {
    match ureq::request(method, url).call() {
        Ok(resp) => Ok((resp.status(), resp.into_string()?)),
        Err(ureq::Error::Status(code, resp)) => Ok((code, resp.into_string()?)),
        Err(e) => Err(e.into()),
    }
}

/// A response: status code, `Warning` headers and body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status code.
    pub code: u16,
    /// The `Warning` headers, as sent.
    pub warnings: Vec<String>,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The body.
    pub body: String,
    /// The `Retry-After` header, if any.
    pub retry_after: Option<String>,
    /// Every header by its lower-case name (the last value of a repeated one).
    pub headers: std::collections::BTreeMap<String, String>,
}

impl Reply {
    /// Reads a response, whatever its code.
    ///
    /// # Errors
    /// The body cannot be read.
    pub fn read(resp: ureq::Response) -> anyhow::Result<Self> {
        let headers = resp
            .headers_names()
            .into_iter()
            .filter_map(|name| {
                let value = resp.header(&name)?.to_string();
                Some((name.to_ascii_lowercase(), value))
            })
            .collect();
        Ok(Reply {
            headers,
            code: resp.status(),
            warnings: resp.all("warning").iter().map(|s| s.to_string()).collect(),
            content_type: resp.header("content-type").unwrap_or("").to_string(),
            retry_after: resp.header("retry-after").map(str::to_string),
            body: resp.into_string()?,
        })
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

thread_local! {
    /// One agent per thread, so its connections are kept alive across calls.
    static AGENT: ureq::Agent = match client_identity().ca_file.as_deref() {
        Some(ca) => secure::https_agent(std::path::Path::new(ca), None)
            .expect("STRATEGY_HOST_CA_FILE names a readable PEM CA"),
        None => ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(30))
            .build(),
    };
}

/// What the load tools talk to a secure server with: `STRATEGY_HOST_CA_FILE` (the CA to
/// trust) and `STRATEGY_HOST_TOKEN` (a bearer token sent with every request), read once.
struct ClientIdentity {
    ca_file: Option<String>,
    authorization: Option<String>,
}

fn client_identity() -> &'static ClientIdentity {
    static IDENTITY: std::sync::OnceLock<ClientIdentity> = std::sync::OnceLock::new();
    IDENTITY.get_or_init(|| ClientIdentity {
        ca_file: std::env::var("STRATEGY_HOST_CA_FILE").ok(),
        authorization: std::env::var("STRATEGY_HOST_TOKEN")
            .ok()
            .map(|t| format!("Bearer {t}")),
    })
}

fn agent() -> ureq::Agent {
    AGENT.with(Clone::clone)
}

/// Sends `method` to `url` with an optional body and content type (JSON by default when there
/// is a body) and extra headers; the response whatever its code.
fn send(
    method: &str,
    url: &str,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> anyhow::Result<ureq::Response> {
    let mut req = agent().request(method, url);
    if body.is_some()
        && !headers
            .iter()
            .any(|(h, _)| h.eq_ignore_ascii_case("content-type"))
    {
        req = req.set("Content-Type", "application/json");
    }
    for (h, v) in headers {
        req = req.set(h, v);
    }
    if let Some(authorization) = &client_identity().authorization {
        req = req.set("Authorization", authorization);
    }
    let result = match body {
        Some(b) => req.send_bytes(b),
        None => req.call(),
    };
    match result {
        Ok(resp) => Ok(resp),
        Err(ureq::Error::Status(_, resp)) => Ok(resp),
        Err(e) => Err(e.into()),
    }
}

/// Sends `method` to `url` with an optional body and content type (JSON by default when there
/// is a body) and extra headers; answers whatever the code.
pub fn call_with(
    method: &str,
    url: &str,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> anyhow::Result<Reply> {
    Reply::read(send(method, url, body, headers)?)
}

/// A response read as bytes (for binary bodies such as Kubernetes protobuf).
#[derive(Debug, Clone)]
pub struct RawReply {
    /// The HTTP status code.
    pub code: u16,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

/// [`call_with`], keeping the body as bytes.
pub fn call_raw(
    method: &str,
    url: &str,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> anyhow::Result<RawReply> {
    let resp = send(method, url, body, headers)?;
    let code = resp.status();
    let content_type = resp.header("content-type").unwrap_or("").to_string();
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut body)?;
    Ok(RawReply {
        code,
        content_type,
        body,
    })
}

/// Sends a JSON body (or none) with `method`.
pub fn call(method: &str, url: &str, body: Option<&serde_json::Value>) -> anyhow::Result<Reply> {
    let bytes = body.map(serde_json::to_vec).transpose()?;
    call_with(method, url, bytes.as_deref(), &[])
}

/// An open watch: its events arrive on a thread and are read with a timeout.
pub struct WatchReader {
    events: mpsc::Receiver<serde_json::Value>,
}

impl WatchReader {
    /// Opens `url` (a watch request) and starts reading its JSON lines.
    pub fn open(url: &str) -> anyhow::Result<Self> {
        let resp = match agent().get(url).call() {
            Ok(resp) => resp,
            Err(ureq::Error::Status(code, resp)) => {
                bail!("watch answered {code}: {}", resp.into_string()?)
            }
            Err(e) => return Err(e.into()),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(resp.into_reader()).lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str(&line) else {
                    break;
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Ok(Self { events: rx })
    }

    /// The next event, or `None` when none came within `timeout` or the stream ended.
    pub fn next(&self, timeout: Duration) -> Option<serde_json::Value> {
        self.events.recv_timeout(timeout).ok()
    }

    /// True when the stream ended (no more events) within `timeout`.
    pub fn ended(&self, timeout: Duration) -> bool {
        matches!(
            self.events.recv_timeout(timeout),
            Err(mpsc::RecvTimeoutError::Disconnected)
        )
    }
}
