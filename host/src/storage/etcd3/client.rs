//! Connecting to etcd members (timeouts, TLS, the first check that one answers) and turning
//! every `etcd-client` error into a typed [`StorageError`].

use std::path::Path;
use std::time::Duration;

use etcd_client::{Certificate, Client, ConnectOptions, Identity, TlsOptions};

use super::endpoints::Endpoints;
use super::failover::{self, Retry};
use super::{Etcd3Config, TlsFiles};
use crate::storage::error::{Result, StorageError};

/// etcd's error text for a read or watch below the compacted revision.
const COMPACTED: &str = "required revision has been compacted";
/// etcd's error text for a read at a revision it has not reached.
const FUTURE_REVISION: &str = "required revision is a future revision";

/// HTTP/2 keep-alive on the etcd connection, so a dead peer breaks watch streams promptly.
/// etcd refuses pings more often than every 5 s.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Builds a client for the one member at `endpoint`, with `config`'s timeouts and TLS (lazily
/// connected: nothing is sent until the first request).
pub(super) async fn build_client(config: &Etcd3Config, endpoint: &str) -> Result<Client> {
    let mut options = ConnectOptions::new()
        .with_connect_timeout(config.dial_timeout)
        .with_keep_alive(KEEP_ALIVE_INTERVAL, KEEP_ALIVE_TIMEOUT)
        // A member cut off from the leader turns requests away at once ("no leader"), before
        // proposing anything, instead of holding them until etcd's own timeout: such a write
        // can safely go to another member.
        .with_require_leader(true);
    if let Some(tls) = &config.tls {
        options = options.with_tls(tls_options(tls)?);
    }
    Client::connect([endpoint], Some(options))
        .await
        .map_err(|e| match e {
            etcd_client::Error::InvalidArgs(m) => {
                StorageError::BadRequest(format!("etcd endpoint {endpoint:?}: {m}"))
            }
            etcd_client::Error::InvalidUri(u) => {
                StorageError::BadRequest(format!("etcd endpoint {endpoint:?}: {u}"))
            }
            other => unreachable_error(&config.endpoints, &map_error(other)),
        })
}

/// Checks that some member answers within the dial timeout.
pub(super) async fn verify_reachable(endpoints: &Endpoints, config: &Etcd3Config) -> Result<()> {
    let probe = |client: Client| {
        let key = config.prefix.clone();
        async move {
            let options = etcd_client::GetOptions::new().with_count_only();
            client.kv_client().get(key, Some(options)).await
        }
    };
    failover::run(endpoints, Retry::Always, config.dial_timeout, probe)
        .await
        .map(drop)
        .map_err(|e| unreachable_error(&config.endpoints, &e))
}

fn unreachable_error(endpoints: &[String], cause: &StorageError) -> StorageError {
    let cause = match cause {
        StorageError::Unavailable(message) => message.clone(),
        other => other.to_string(),
    };
    StorageError::Unavailable(format!(
        "cannot reach etcd at {}: {cause}",
        endpoints.join(",")
    ))
}

/// Reads the CA and client certificate files into `etcd-client`'s TLS options.
fn tls_options(files: &TlsFiles) -> Result<TlsOptions> {
    let read = |path: &Path, what: &str| {
        std::fs::read(path).map_err(|e| {
            StorageError::BadRequest(format!("reading etcd {what} {}: {e}", path.display()))
        })
    };
    let mut tls = TlsOptions::new();
    if let Some(ca) = &files.ca_file {
        tls = tls.ca_certificate(Certificate::from_pem(read(ca, "CA file")?));
    }
    match (&files.cert_file, &files.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(
                read(cert, "certificate file")?,
                read(key, "key file")?,
            ));
        }
        (None, None) => {}
        _ => {
            return Err(StorageError::BadRequest(
                "the etcd client certificate and key files must be given together".into(),
            ))
        }
    }
    Ok(tls)
}

/// Maps an `etcd-client` error to a storage error. A compacted revision becomes a bare `Expired`
/// and a future revision a `TooLargeResourceVersion` with zero revisions; callers that know the
/// revisions involved rebuild those with [`is_compacted`] / [`is_future_revision`].
pub(super) fn map_error(e: etcd_client::Error) -> StorageError {
    use etcd_client::Error as E;
    match e {
        E::GRpcStatus(status) => map_status(i32::from(status.code()), status.message()),
        E::TransportError(_) | E::IoError(_) | E::WatchError(_) | E::EndpointError(_) => {
            StorageError::Unavailable(e.to_string())
        }
        E::InvalidArgs(_) | E::InvalidUri(_) => StorageError::BadRequest(e.to_string()),
        other => StorageError::Internal(other.to_string()),
    }
}

/// Maps a gRPC status (its numeric code and message) to a storage error.
fn map_status(code: i32, message: &str) -> StorageError {
    if message.contains(COMPACTED) {
        return StorageError::Expired {
            message: format!("etcd: {message}"),
        };
    }
    if message.contains(FUTURE_REVISION) {
        return StorageError::TooLargeResourceVersion {
            requested: 0,
            current: 0,
        };
    }
    // gRPC codes: 1 Cancelled, 2 Unknown, 3 InvalidArgument, 4 DeadlineExceeded,
    // 8 ResourceExhausted, 9 FailedPrecondition, 10 Aborted, 11 OutOfRange, 14 Unavailable.
    match code {
        1 | 2 | 4 | 8 | 10 | 14 => StorageError::Unavailable(format!("etcd: {message}")),
        3 | 9 | 11 => StorageError::BadRequest(format!("etcd: {message}")),
        _ => StorageError::Internal(format!("etcd: grpc status {code}: {message}")),
    }
}

/// True for the error [`map_error`] makes of etcd's "required revision has been compacted".
pub(super) fn is_compacted(e: &StorageError) -> bool {
    matches!(e, StorageError::Expired { message } if message.contains(COMPACTED))
}

/// True for the error [`map_error`] makes of etcd's "required revision is a future revision".
pub(super) fn is_future_revision(e: &StorageError) -> bool {
    matches!(
        e,
        StorageError::TooLargeResourceVersion {
            requested: 0,
            current: 0
        }
    )
}

/// The etcd server's version (e.g. `3.4.23`), if some member answers the status call.
pub(super) async fn server_version(endpoints: &Endpoints, config: &Etcd3Config) -> Option<String> {
    let status = |client: Client| async move { client.maintenance_client().status().await };
    let status = failover::run(endpoints, Retry::Always, config.dial_timeout, status)
        .await
        .ok()?;
    Some(status.version().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_errors_are_typed() {
        let e = map_status(11, "etcdserver: mvcc: required revision has been compacted");
        assert!(is_compacted(&e) && e.is_expired());
        let e = map_status(
            11,
            "etcdserver: mvcc: required revision is a future revision",
        );
        assert!(is_future_revision(&e) && e.is_too_large_resource_version());
        assert!(map_status(14, "connection refused").is_unavailable());
        assert!(map_status(4, "slow").is_unavailable());
        assert!(map_status(3, "bad").is_bad_request());
        assert!(map_error(etcd_client::Error::WatchError("closed".into())).is_unavailable());
    }

    #[test]
    fn certificate_and_key_go_together() {
        let files = TlsFiles {
            ca_file: None,
            cert_file: Some("/nonexistent.pem".into()),
            key_file: None,
        };
        assert!(tls_options(&files).unwrap_err().is_bad_request());
    }
}
