//! The aggregator's proxy (kube-aggregator's `proxyHandler`): a request to a group/version an
//! APIService serves from a Service is sent to a ready endpoint of it, after this server has
//! authenticated, authorized, audited and admitted it through priority and fairness, with the
//! front proxy's client certificate and the caller's identity in `X-Remote-*` headers. The
//! response streams back as it comes (watches, chunked lists), over HTTP/2 or HTTP/1.1.

use std::convert::Infallible;

use futures::StreamExt as _;
use http_body_util::{BodyExt as _, BodyStream, StreamBody};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{HeaderMap, Request, Response};
use serde_json::Value;

use super::response::{self, Body};
use super::status::Status;
use crate::user::UserInfo;
use strategy_host_registry::aggregation::{is_available, proxy_body, Aggregation};

/// Headers of one hop, never forwarded (RFC 9110 §7.6.1), and `Host` (the backend's own).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// Kubernetes' answer when an aggregated API cannot be reached.
fn service_unavailable() -> Response<Body> {
    response::status(&Status::new(
        503,
        "ServiceUnavailable",
        "service unavailable",
    ))
}

/// Whether a request header is the caller's own and must not reach the backend: hop-by-hop
/// headers, its credentials (the backend trusts the front proxy, not the caller's token), what
/// impersonation already decided, and any identity headers it sent itself.
fn dropped(name: &HeaderName) -> bool {
    let name = name.as_str();
    HOP_BY_HOP.contains(&name)
        || name == "authorization"
        || name.starts_with("impersonate-")
        || name.starts_with("x-remote-")
}

/// `user` in the headers kube-aggregator sends (`X-Remote-User`, `X-Remote-Uid`, one
/// `X-Remote-Group` per group, `X-Remote-Extra-<key>` with the key percent-encoded).
fn identity_headers(headers: &mut HeaderMap, user: &UserInfo) {
    let mut add = |name: String, value: &str| {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::from_str(value)) {
            headers.append(name, value);
        }
    };
    add("x-remote-user".into(), &user.username);
    if !user.uid.is_empty() {
        add("x-remote-uid".into(), &user.uid);
    }
    for group in &user.groups {
        add("x-remote-group".into(), group);
    }
    for (key, values) in &user.extra {
        let key = percent_encoding::utf8_percent_encode(key, EXTRA_KEY).to_string();
        for value in values {
            add(format!("x-remote-extra-{key}"), value);
        }
    }
}

/// What Kubernetes percent-encodes in an extra key: everything but unreserved characters.
const EXTRA_KEY: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Proxies `req`, made by `user`, to the backend of `apiservice`.
pub(crate) async fn proxy(
    aggregation: &Aggregation,
    apiservice: &Value,
    req: Request<Incoming>,
    user: &UserInfo,
) -> Response<Body> {
    if !is_available(apiservice) {
        return service_unavailable();
    }
    let backend = match aggregation.backend(apiservice) {
        Ok(backend) => backend,
        Err(why) => {
            tracing::debug!(reason = why.reason, message = %why.message, "aggregated API unreachable");
            return service_unavailable();
        }
    };
    let (parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{path}", backend.location.base_url());
    let mut forwarded = Request::builder().method(parts.method).uri(&url);
    let headers = forwarded.headers_mut().expect("a valid request head");
    for (name, value) in &parts.headers {
        if !dropped(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    identity_headers(headers, user);
    let Ok(request) = forwarded.body(proxy_body(body)) else {
        return service_unavailable();
    };
    match backend.client.send(request).await {
        Ok(answer) => {
            let (mut parts, body) = answer.into_parts();
            let hop: Vec<HeaderName> = parts
                .headers
                .keys()
                .filter(|n| HOP_BY_HOP.contains(&n.as_str()))
                .cloned()
                .collect();
            for name in hop {
                parts.headers.remove(name);
            }
            Response::from_parts(parts, streamed(body))
        }
        Err(why) => {
            tracing::info!(%url, error = %why, "aggregated API backend failed");
            if let Some(name) = apiservice.pointer("/metadata/name").and_then(Value::as_str) {
                aggregation.report_failure(name);
            }
            service_unavailable()
        }
    }
}

/// The backend's body as it arrives; a broken stream ends it (the client sees the watch or
/// the chunked response end, as when kube-aggregator's backend goes away).
fn streamed(body: Incoming) -> Body {
    let frames = BodyStream::new(body)
        .take_while(|frame| std::future::ready(frame.is_ok()))
        .filter_map(|frame| std::future::ready(frame.ok()))
        .map(Ok::<_, Infallible>);
    StreamBody::new(frames).boxed_unsync()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callers_credentials_and_identity_headers_never_reach_the_backend() {
        for name in [
            "authorization",
            "x-remote-user",
            "x-remote-extra-scopes",
            "impersonate-user",
            "connection",
            "host",
        ] {
            assert!(dropped(&HeaderName::from_static(name)), "{name}");
        }
        assert!(!dropped(&HeaderName::from_static("accept")));
        assert!(!dropped(&HeaderName::from_static("content-type")));
    }

    #[test]
    fn the_identity_is_sent_as_kube_aggregator_sends_it() {
        let user = UserInfo {
            username: "alice".into(),
            uid: "42".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: [(
                "example.com/scope Name".to_string(),
                vec!["a".to_string(), "b".to_string()],
            )]
            .into_iter()
            .collect(),
        };
        let mut headers = HeaderMap::new();
        identity_headers(&mut headers, &user);
        assert_eq!(headers["x-remote-user"], "alice");
        assert_eq!(headers["x-remote-uid"], "42");
        let groups: Vec<_> = headers.get_all("x-remote-group").iter().collect();
        assert_eq!(groups, ["dev", "system:authenticated"]);
        let extra: Vec<_> = headers
            .get_all("x-remote-extra-example.com%2Fscope%20name")
            .iter()
            .collect();
        assert_eq!(extra, ["a", "b"]);
    }
}
