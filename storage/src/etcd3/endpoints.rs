//! Which etcd member serves the next request: one client per member, round-robin over the members
//! in rotation, and a background probe that puts a member back once it answers again.
//!
//! `etcd-client` balances one channel over every endpoint and keeps a dead one in its rotation,
//! so a share of requests keeps failing while a member is down. Here each member has its own
//! client (its own connection), a member that fails at the transport level leaves the rotation
//! ([`Endpoints::mark_down`]), and a probe task reads from it with backoff until it answers,
//! then returns it. When every member is out, requests still go to them all, in turn: a member
//! may be back before its probe notices, and the caller needs etcd's real answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use etcd_client::{Client, GetOptions};

use super::client::build_client;
use super::Etcd3Config;
use crate::error::{Result, StorageError};

/// The first pause before probing a member that left the rotation; doubled up to `PROBE_MAX`.
const PROBE_FIRST: Duration = Duration::from_millis(200);
const PROBE_MAX: Duration = Duration::from_secs(2);

/// The etcd members of one store and which of them are in rotation.
pub(super) struct Endpoints {
    members: Vec<Arc<Member>>,
    /// Round-robin position: spreads requests over the members like the balanced channel did.
    next: AtomicUsize,
    /// The key a probe reads (count only), so a probe needs no more permission than the store.
    probe_key: String,
    /// How long a probe may take.
    probe_timeout: Duration,
}

/// One member: its URL, its own client, and whether it is in rotation.
struct Member {
    url: String,
    /// Shared with each request (an `etcd_client::Client` clone copies a dozen service clients).
    client: Arc<Client>,
    health: Mutex<Health>,
}

#[derive(Debug, Clone, Copy)]
struct Health {
    up: bool,
    /// Counts the times the member left the rotation, so a probe started for an earlier outage
    /// stops instead of running beside the current one.
    outage: u64,
}

/// A member chosen for one attempt of a request.
pub(super) struct Picked {
    /// The member's position, to report the outcome with.
    pub index: usize,
    /// The member's client.
    pub client: Arc<Client>,
}

impl Endpoints {
    /// One lazily connected client per endpoint of `config`, all in rotation.
    ///
    /// # Errors
    /// `BadRequest` for no endpoints, an unusable endpoint URL or unusable TLS files.
    pub(super) async fn connect(config: &Etcd3Config, probe_key: String) -> Result<Self> {
        if config.endpoints.is_empty() {
            return Err(StorageError::BadRequest(
                "no etcd endpoints configured".into(),
            ));
        }
        let mut members = Vec::with_capacity(config.endpoints.len());
        for url in &config.endpoints {
            members.push(Arc::new(Member {
                url: url.clone(),
                client: Arc::new(build_client(config, url).await?),
                health: Mutex::new(Health {
                    up: true,
                    outage: 0,
                }),
            }));
        }
        Ok(Self {
            members,
            next: AtomicUsize::new(0),
            probe_key,
            probe_timeout: config.dial_timeout.min(config.request_timeout),
        })
    }

    /// The next member in rotation that `tried` does not hold; when none is in rotation, the
    /// next member `tried` does not hold; `None` once every member was tried.
    pub(super) fn pick(&self, tried: &[usize]) -> Option<Picked> {
        let count = self.members.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let untried = (0..count)
            .map(|offset| (start + offset) % count)
            .filter(|index| !tried.contains(index));
        let mut fallback = None;
        for index in untried {
            if self.members[index].health().up {
                return Some(self.picked(index));
            }
            fallback.get_or_insert(index);
        }
        fallback.map(|index| self.picked(index))
    }

    fn picked(&self, index: usize) -> Picked {
        Picked {
            index,
            client: self.members[index].client.clone(),
        }
    }

    /// The URL of the member at `index`, for error messages.
    pub(super) fn url(&self, index: usize) -> &str {
        &self.members[index].url
    }

    /// Takes the member at `index` out of rotation after a transport failure (`cause`), and
    /// starts probing it. Must run inside a tokio runtime.
    pub(super) fn mark_down(&self, index: usize, cause: &str) {
        let member = &self.members[index];
        let outage = {
            let mut health = member.lock_health();
            if !health.up {
                return;
            }
            health.up = false;
            health.outage += 1;
            health.outage
        };
        tracing::warn!(endpoint = %member.url, %cause, "etcd member out of rotation");
        // The probe holds the member weakly: dropping the store ends it.
        tokio::spawn(probe(
            Arc::downgrade(member),
            outage,
            self.probe_key.clone(),
            self.probe_timeout,
        ));
    }

    /// Puts the member at `index` back in rotation: a request to it just succeeded.
    pub(super) fn mark_up(&self, index: usize) {
        self.members[index].set_up();
    }
}

impl Member {
    fn lock_health(&self) -> std::sync::MutexGuard<'_, Health> {
        // The guarded data is two plain fields, valid whatever a panicking holder did.
        self.health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn health(&self) -> Health {
        *self.lock_health()
    }

    fn set_up(&self) {
        let mut health = self.lock_health();
        if !health.up {
            health.up = true;
            tracing::info!(endpoint = %self.url, "etcd member back in rotation");
        }
    }
}

/// Reads from a member out of rotation, with backoff, until it answers (then puts it back), it
/// is back already, a later outage has its own probe, or the store is gone.
async fn probe(member: Weak<Member>, outage: u64, key: String, timeout: Duration) {
    let mut pause = PROBE_FIRST;
    loop {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(PROBE_MAX);
        let Some(member) = member.upgrade() else {
            return;
        };
        let health = member.health();
        if health.up || health.outage != outage {
            return;
        }
        // A linearizable read: it answers only once the member has a leader and has caught up,
        // i.e. once it can serve requests again.
        let mut kv = member.client.kv_client();
        let read = kv.get(key.as_str(), Some(GetOptions::new().with_count_only()));
        if let Ok(Ok(_)) = tokio::time::timeout(timeout, read).await {
            member.set_up();
            return;
        }
    }
}
