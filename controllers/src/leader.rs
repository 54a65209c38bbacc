//! One controller runner per cluster: hosts sharing a store elect a leader through a
//! `coordination.k8s.io/v1` Lease (client-go's leader election is the model: a lease taken
//! over only when its holder has not renewed it for a lease duration, measured on this host's
//! clock from when the record last changed; a compare-and-swap on its resourceVersion). The
//! controllers run while this host holds the lease and stop when it cannot renew in time.

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::system_fields::{format_rfc3339, new_uid};
use strategy_host_registry::Result;

/// The Lease the controllers of every host sharing a store compete for.
pub const LEASE_NAME: &str = "strategy-host-controller-manager";
/// Where it lives.
pub const LEASE_NAMESPACE: &str = "kube-system";

/// Timing of the election (kube-controller-manager's `--leader-elect-*` flags).
#[derive(Debug, Clone)]
pub struct ElectionConfig {
    /// How long a lease holds without renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops its controllers.
    pub renew_deadline: Duration,
    /// The pause between attempts.
    pub retry_period: Duration,
}

/// This host's identity in the Lease: its hostname and a uid (two processes on one machine
/// differ).
pub fn identity() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "strategy-host".into());
    format!("{host}_{}", new_uid())
}

/// A `MicroTime` for now.
fn now_micro() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    let seconds = format_rfc3339(secs);
    format!(
        "{}.{:06}Z",
        seconds.trim_end_matches('Z'),
        now.subsec_micros()
    )
}

/// The election's view of the Lease: the holder record last seen and when it changed.
#[derive(Debug, Default)]
struct Observed {
    spec: Value,
    at: Option<Instant>,
}

/// Competes for the Lease forever as `identity`: `lead` starts the controllers when this host
/// becomes the leader (what it returns is dropped, stopping them, when leadership is lost).
pub async fn run<R, F>(client: Client, identity: String, config: ElectionConfig, lead: F)
where
    F: Fn() -> R,
    R: Send,
{
    let lease = ObjectRef {
        group: "coordination.k8s.io".into(),
        version: "v1".into(),
        plural: "leases".into(),
        namespace: Some(LEASE_NAMESPACE.into()),
        name: LEASE_NAME.into(),
    };
    let mut observed = Observed::default();
    let mut running: Option<R> = None;
    let mut renewed = Instant::now();
    loop {
        match try_acquire_or_renew(&client, &lease, &identity, &config, &mut observed).await {
            Ok(true) => {
                renewed = Instant::now();
                if running.is_none() {
                    tracing::info!(%identity, lease = LEASE_NAME, "became the controllers' leader");
                    running = Some(lead());
                }
            }
            Ok(false) => {
                if running.take().is_some() {
                    tracing::warn!(%identity, "another host took the controllers' lease; controllers stopped");
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "leader election attempt failed");
                if running.is_some() && renewed.elapsed() > config.renew_deadline {
                    running = None;
                    tracing::warn!(%identity, error = %e, "could not renew the controllers' lease in time; controllers stopped");
                }
            }
        }
        sleep(config.retry_period).await;
    }
}

fn sleep(d: Duration) -> impl Future<Output = ()> {
    tokio::time::sleep(d)
}

/// One attempt: creates the Lease, renews it, or takes it over when it expired; answers
/// whether this host holds it now.
async fn try_acquire_or_renew(
    client: &Client,
    lease: &ObjectRef,
    identity: &str,
    config: &ElectionConfig,
    observed: &mut Observed,
) -> Result<bool> {
    let now = now_micro();
    let duration_seconds = config.lease_duration.as_secs().max(1);
    let Some(mut current) = client.get(lease).await? else {
        let fresh = json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": lease.name, "namespace": lease.namespace},
            "spec": {
                "holderIdentity": identity,
                "leaseDurationSeconds": duration_seconds,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        });
        return match client
            .create(
                &lease.group,
                &lease.version,
                &lease.plural,
                lease.namespace.as_deref(),
                fresh,
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.is_already_exists() => Ok(false),
            Err(e) => Err(e),
        };
    };
    let spec = current.get("spec").cloned().unwrap_or_else(|| json!({}));
    if spec != observed.spec || observed.at.is_none() {
        observed.spec = spec.clone();
        observed.at = Some(Instant::now());
    }
    let holder = spec["holderIdentity"].as_str().unwrap_or_default();
    let held_for = spec["leaseDurationSeconds"]
        .as_u64()
        .map_or(config.lease_duration, Duration::from_secs);
    let expired = observed.at.is_some_and(|at| at.elapsed() > held_for);
    if holder != identity && !holder.is_empty() && !expired {
        return Ok(false);
    }
    let transitions = spec["leaseTransitions"].as_u64().unwrap_or(0);
    let acquired = if holder == identity {
        spec["acquireTime"].clone()
    } else {
        Value::String(now.clone())
    };
    current["spec"] = json!({
        "holderIdentity": identity,
        "leaseDurationSeconds": duration_seconds,
        "acquireTime": acquired,
        "renewTime": now,
        "leaseTransitions": if holder == identity { transitions } else { transitions + 1 },
    });
    match client.replace(lease, current).await {
        Ok(written) => {
            observed.spec = written["spec"].clone();
            observed.at = Some(Instant::now());
            Ok(true)
        }
        Err(e) if e.is_conflict() => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_times_carry_six_fraction_digits() {
        let t = now_micro();
        let (_, fraction) = t.split_once('.').unwrap();
        assert_eq!(fraction.len(), 7, "{t}");
        assert!(fraction.ends_with('Z'));
        assert!(
            strategy_host_registry::system_fields::parse_rfc3339(&t).is_some(),
            "{t}"
        );
    }

    #[test]
    fn identities_differ_per_process_start() {
        assert_ne!(identity(), identity());
    }
}
