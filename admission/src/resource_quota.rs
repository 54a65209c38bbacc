//! Quota admission (Kubernetes' `ResourceQuota` plugin, the last validating one): a create —
//! or an update that changes what an object uses, a Service's type — in a namespace with
//! ResourceQuotas is charged to each quota limiting what it uses. Past a limit it is refused
//! (403, Kubernetes' `exceeded quota: …` wording); otherwise the quotas' `status.used` is raised
//! before the write proceeds, each a compare-and-swap on the quota, so concurrent writes never
//! together exceed a limit. Usage is what `registry::quota` says; giving it back when objects
//! go is the quota controller's recount (`controllers/src/resource_quota.rs`).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::admission_policy::Operation;
use crate::strategy::Refusal;
use strategy_host_apimachinery::expiring_cache::ExpiringCache;
use strategy_host_registry::admission::{
    AdmissionRequest, Rejection, ValidatingAdmission, Verdict,
};
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::{Store, Writer};
use strategy_host_registry::quota::{
    pretty, resource_list, resource_list_value, Evaluator, ResourceList,
};
use strategy_host_registry::system_fields::meta_str;
use strategy_host_registry::Registry;

/// The field manager of the status writes that charge a quota.
const MANAGER: &str = "resourcequota-admission";
/// How often a charge is tried again when a quota changed under it.
const ATTEMPTS: usize = 8;
/// How long quotas read live (the follower had none for a namespace) are trusted.
const LIVE_TTL: Duration = Duration::from_secs(30);

/// The quota admission plugin.
pub struct ResourceQuotaAdmission {
    client: Client,
    /// Every ResourceQuota, indexed by namespace.
    quotas: Store,
    /// Namespaces' quotas read live where the follower had none (a quota created a moment ago
    /// may not have reached it), as Kubernetes' live lookup does.
    live: ExpiringCache<String, Arc<Vec<Value>>>,
    /// One charge at a time per namespace, so concurrent creates queue rather than race each
    /// other's compare-and-swap (Kubernetes batches a namespace's admissions the same way).
    charging: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    follower: tokio::task::JoinHandle<()>,
}

impl Drop for ResourceQuotaAdmission {
    fn drop(&mut self) {
        self.follower.abort();
    }
}

/// Starts quota admission over `registry`; `None` when ResourceQuotas are not served.
pub fn start(registry: &Arc<Registry>) -> Option<Arc<ResourceQuotaAdmission>> {
    let served = registry.resolve("", "v1", "resourcequotas")?;
    let writer = Writer::new().with_index("namespace", |q| {
        meta_str(q, "namespace")
            .map(String::from)
            .into_iter()
            .collect()
    });
    let (quotas, follower) = served.reflect("v1", writer);
    Some(Arc::new(ResourceQuotaAdmission {
        client: Client::new(registry, MANAGER),
        quotas,
        live: ExpiringCache::new(4096),
        charging: std::sync::Mutex::default(),
        follower,
    }))
}

/// A 403 worded as Kubernetes words a quota refusal.
fn forbidden(message: String) -> Rejection {
    Rejection::Refused(Refusal::Forbidden(message))
}

/// Only the names in `names`.
fn mask(list: &ResourceList, names: &BTreeSet<&str>) -> ResourceList {
    list.iter()
        .filter(|(n, _)| names.contains(n.as_str()))
        .map(|(n, q)| (n.clone(), *q))
        .collect()
}

impl ResourceQuotaAdmission {
    /// The quotas of `namespace`: the follower's, or (when it has none, or `fresh`) read live.
    async fn quotas_in(&self, namespace: &str, fresh: bool) -> Result<Arc<Vec<Value>>, Rejection> {
        if !fresh && self.quotas.is_ready() {
            let followed = self.quotas.indexed("namespace", namespace);
            if !followed.is_empty() {
                return Ok(Arc::new(followed.iter().map(|q| (**q).clone()).collect()));
            }
            if let Some(live) = self.live.get(&namespace.to_string()) {
                return Ok(live);
            }
        }
        let live = self
            .client
            .list("", "v1", "resourcequotas", Some(namespace))
            .await
            .map_err(|e| {
                Rejection::Failed(format!("reading the namespace's resource quotas: {e}"))
            })?;
        let live = Arc::new(live);
        self.live
            .insert(namespace.to_string(), live.clone(), LIVE_TTL);
        Ok(live)
    }

    /// Checks `charge` against `quotas`: the quotas to raise and their new usage, or why not.
    fn check(
        evaluator: &Evaluator<'_>,
        charge: &ResourceList,
        quotas: &[Value],
        charged: &BTreeSet<String>,
    ) -> Result<Vec<(Value, ResourceList)>, Rejection> {
        let names: Vec<String> = evaluator.names();
        let mut raised = Vec::new();
        let mut sorted: Vec<&Value> = quotas.iter().collect();
        sorted.sort_by_key(|q| meta_str(q, "name").unwrap_or_default().to_string());
        for quota in sorted {
            let name = meta_str(quota, "name").unwrap_or_default();
            if !evaluator.selected_by(quota)
                || charged.contains(meta_str(quota, "uid").unwrap_or_default())
            {
                continue;
            }
            let hard = resource_list(&quota["status"]["hard"]);
            let restricted: BTreeSet<&str> = names
                .iter()
                .map(String::as_str)
                .filter(|n| hard.contains_key(*n))
                .collect();
            if restricted.is_empty() {
                continue;
            }
            let used = resource_list(&quota["status"]["used"]);
            if restricted.iter().any(|n| !used.contains_key(*n)) {
                let listed: Vec<&str> = restricted.iter().copied().collect();
                return Err(forbidden(format!(
                    "status unknown for quota: {name}, resources: {}",
                    listed.join(",")
                )));
            }
            let requested = mask(charge, &restricted);
            if requested.is_empty() {
                continue;
            }
            let mut new_used = used.clone();
            for (n, q) in &requested {
                let total = new_used.get(n).copied().unwrap_or_default() + *q;
                new_used.insert(n.clone(), total);
            }
            let exceeded: BTreeSet<&str> = requested
                .keys()
                .map(String::as_str)
                .filter(|n| new_used[*n] > hard[*n])
                .collect();
            if !exceeded.is_empty() {
                return Err(forbidden(format!(
                    "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                    pretty(&mask(&requested, &exceeded)),
                    pretty(&mask(&used, &exceeded)),
                    pretty(&mask(&hard, &exceeded)),
                )));
            }
            raised.push((quota.clone(), new_used));
        }
        Ok(raised)
    }
}

/// What a write adds to the usage of `evaluator`'s resource: all an object uses on create;
/// on update, what it uses beyond what it used before. Zeros are left out.
fn charge(evaluator: &Evaluator<'_>, request: &AdmissionRequest<'_>) -> ResourceList {
    let mut usage = evaluator.usage(request.object);
    if let (Operation::Update, Some(old)) = (request.operation, request.old_object) {
        let before = evaluator.usage(old);
        for (n, q) in &mut usage {
            let prior = before.get(n).copied().unwrap_or_default();
            *q = if *q > prior {
                *q - prior
            } else {
                Default::default()
            };
        }
    }
    usage.retain(|_, q| !q.is_zero());
    usage
}

#[async_trait]
impl ValidatingAdmission for ResourceQuotaAdmission {
    fn name(&self) -> &str {
        "ResourceQuota"
    }

    async fn validate(&self, request: &AdmissionRequest<'_>) -> Verdict {
        let (Some(namespace), None) = (request.namespace, request.subresource) else {
            return Ok(Vec::new());
        };
        let def = request.resource;
        let Some(evaluator) = Evaluator::of(&def.group, &def.plural) else {
            return Ok(Vec::new());
        };
        let charges = match request.operation {
            Operation::Create => true,
            Operation::Update => evaluator.charges_updates(),
            Operation::Delete => false,
        };
        if !charges {
            return Ok(Vec::new());
        }
        // Most namespaces have no quota: nothing is measured there.
        let mut quotas = self.quotas_in(namespace, false).await?;
        if quotas.is_empty() {
            return Ok(Vec::new());
        }
        let charge = charge(&evaluator, request);
        if charge.is_empty() {
            return Ok(Vec::new());
        }
        let lock = {
            let mut locks = self.charging.lock().unwrap_or_else(|p| p.into_inner());
            // Namespaces no charge holds are forgotten, so the map stays as small as the work.
            locks.retain(|_, l| Arc::strong_count(l) > 1);
            locks.entry(namespace.to_string()).or_default().clone()
        };
        let _charging = lock.lock().await;
        // Quotas already raised by this request, when a later one changed under it.
        let mut charged = BTreeSet::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                quotas = self.quotas_in(namespace, true).await?;
            }
            let raised = Self::check(&evaluator, &charge, &quotas, &charged)?;
            if request.dry_run || raised.is_empty() {
                return Ok(Vec::new());
            }
            let mut conflicted = false;
            for (mut quota, used) in raised {
                let name = meta_str(&quota, "name").unwrap_or_default().to_string();
                let uid = meta_str(&quota, "uid").unwrap_or_default().to_string();
                quota["status"]["used"] = resource_list_value(&used);
                let target = ObjectRef::new("", "v1", "resourcequotas", Some(namespace), &name);
                match self.client.replace_at(&target, Some("status"), quota).await {
                    Ok(_) => {
                        charged.insert(uid);
                    }
                    Err(e) if e.is_conflict() || e.is_not_found() => conflicted = true,
                    Err(e) => {
                        return Err(Rejection::Failed(format!(
                            "charging resource quota {name}: {e}"
                        )))
                    }
                }
            }
            if !conflicted {
                return Ok(Vec::new());
            }
        }
        Err(Rejection::Failed(format!(
            "resource quota evaluation for namespace {namespace} kept conflicting with other writes; try again"
        )))
    }
}
