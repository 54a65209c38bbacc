//! The first checks of a cluster at startup: that some member answers, and its version.

use etcd_client::Client;
use std::sync::Arc;

use super::endpoints::Endpoints;
use super::errors::unreachable_error;
use super::failover;
use super::Etcd3Config;
use crate::error::Result;

/// Checks that some member answers within the dial timeout.
pub(super) async fn verify_reachable(endpoints: &Endpoints, config: &Etcd3Config) -> Result<()> {
    let probe = |client: Arc<Client>| {
        let key = config.prefix.clone();
        async move {
            let options = etcd_client::GetOptions::new().with_count_only();
            client.kv_client().get(key, Some(options)).await
        }
    };
    failover::run_patiently(endpoints, config.dial_timeout, probe)
        .await
        .map(drop)
        .map_err(|e| unreachable_error(&config.endpoints, &e))
}

/// The etcd server's version (e.g. `3.4.23`), if some member answers the status call.
pub(super) async fn server_version(endpoints: &Endpoints, config: &Etcd3Config) -> Option<String> {
    let status = |client: Arc<Client>| async move { client.maintenance_client().status().await };
    let status = failover::run_patiently(endpoints, config.dial_timeout, status)
        .await
        .ok()?;
    Some(status.version().to_string())
}
