//! Connecting to one etcd member: timeouts, keep-alive and TLS.

use std::path::Path;
use std::time::Duration;

use etcd_client::{Certificate, Client, ConnectOptions, Identity, TlsOptions};

use super::errors::{map_error, unreachable_error};
use super::{Etcd3Config, TlsFiles};
use crate::error::{Result, StorageError};

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

#[cfg(test)]
mod tests {
    use super::*;

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
