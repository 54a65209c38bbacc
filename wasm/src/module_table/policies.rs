//! The slots of admission policy modules: a policy module serves no resource of its own but a
//! slot named after its policy, so its versions swap, shadow and canary as a strategy's do; the
//! admission chain lists the policies in force from here, and replays a staged version over the
//! stored objects it matches.

use std::sync::{Arc, Weak};

use async_trait::async_trait;

use super::{Key, ModuleTable};
use crate::admission_policy::AdmissionPolicy;
use crate::rollout::{StagedVersion, Version};
use crate::slot::SlotStrategy;
use strategy_host_wasm_runtime::StrategyModule;

/// The kind part of an admission policy's slot key: a `/` no real kind has, then its name.
pub(super) const POLICY_KEY_PREFIX: &str = "admission-policy/";

/// The slot of the admission policy module named `name`.
pub(super) fn policy_key(name: &str) -> Key {
    (String::new(), format!("{POLICY_KEY_PREFIX}{name}"))
}

/// An admission policy module in force (or staged), as the admission chain asks it.
#[derive(Clone)]
pub struct PolicyInForce {
    /// The policy's name (its manifest's).
    pub name: String,
    /// The module whose declaration says which writes it is asked about: the version in force,
    /// or the staged one when nothing is in force yet.
    pub module: Arc<StrategyModule>,
    /// Asks it through its slot (with any shadow or canary beside it).
    pub policy: Arc<dyn AdmissionPolicy>,
}

/// Replays a staged admission policy module over the stored objects it is asked about: what a
/// policy matches (its rules, selectors and match conditions) is the admission layer's to say.
#[async_trait]
pub trait PolicyReplay: Send + Sync {
    /// Asks `in_force` and `staged` about every stored object `staged`'s declaration matches,
    /// as a create and as an update, recording their answers in `staged`'s report; answers how
    /// many objects were replayed.
    ///
    /// # Errors
    /// A resource could not be listed.
    async fn replay(
        &self,
        in_force: &dyn Version,
        staged: &StagedVersion,
    ) -> Result<u64, ReplayError>;
}

/// Why a staged policy's replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The server is stopping.
    #[error("the server is stopping")]
    Stopping,
    /// The staged module declares no admission policy.
    #[error("not an admission policy module")]
    NotAPolicy,
    /// A resource could not be listed.
    #[error("listing {plural}: {source}")]
    List {
        /// The resource.
        plural: String,
        /// Why.
        source: strategy_host_registry::Error,
    },
}

impl ModuleTable {
    /// Installs what replays staged policy modules (the admission plugin of policy modules).
    pub fn set_policy_replay(&self, replay: Weak<dyn PolicyReplay>) {
        *self.policy_replay.write().expect("policy replay") = Some(replay);
    }

    /// What answers what replays staged policy modules, once it is installed.
    pub(super) fn policy_replay(&self) -> impl Fn() -> Option<Arc<dyn PolicyReplay>> + Send {
        let installed = self.policy_replay.clone();
        move || {
            installed
                .read()
                .expect("policy replay")
                .as_ref()
                .and_then(Weak::upgrade)
        }
    }

    /// Every admission policy module with a version in force or staged, by name.
    pub fn policies(&self) -> Vec<PolicyInForce> {
        let slots = self.slots.read().expect("slots");
        let mut policies: Vec<PolicyInForce> = slots
            .iter()
            .filter_map(|((_, kind), slot)| {
                let name = kind.strip_prefix(POLICY_KEY_PREFIX)?;
                let module = match slot.current.load_full() {
                    Some(binding) => binding.strategy.module().clone(),
                    None => slot.staged.load_full()?.module().clone(),
                };
                Some(PolicyInForce {
                    name: name.to_owned(),
                    module,
                    policy: Arc::new(SlotStrategy::new(slot.clone())),
                })
            })
            .collect();
        policies.sort_by(|a, b| a.name.cmp(&b.name));
        policies
    }
}
