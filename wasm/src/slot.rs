//! One resource's slot in the module table — the binding in force and the staged version, each
//! swapped atomically — and the `Strategy` the registry holds for it (or the `AdmissionPolicy` the
//! admission chain holds for a policy's slot, the `AuthorizerModule` the authorizer chain holds
//! for an authorizer's), which calls whatever is in force at each call,
//! runs a shadow beside it, or hands a canary its share.

use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwapOption;
use async_trait::async_trait;
use serde_json::Value;

use super::rollout::{Outcome, Role, RolloutMode, StagedVersion, Verb};
use super::wasm_strategy::WasmStrategy;
use crate::admission_policy::{AdmissionAttributes, AdmissionPolicy};
use crate::authorizer::AuthorizerModule;
use crate::strategy::{
    Answer, DefaultStrategy, ResourceInfo, Strategy, StrategyContext, StrategyError,
};

/// A module version bound to a slot, and the source it came from.
pub(crate) struct Binding {
    pub source: String,
    pub strategy: WasmStrategy,
}

/// One resource's (group, kind) slot.
pub(crate) struct Slot {
    pub name: String,
    /// The version in force (`None`: the default strategy).
    pub current: ArcSwapOption<Binding>,
    /// A version staged beside it (shadow or canary).
    pub staged: ArcSwapOption<StagedVersion>,
}

impl Slot {
    pub(crate) fn new(name: String) -> Self {
        Self {
            name,
            current: ArcSwapOption::empty(),
            staged: ArcSwapOption::empty(),
        }
    }

    /// Whether a version is in force whose binding `holds` says yes to.
    pub(crate) fn in_force_is(&self, holds: impl FnOnce(&Binding) -> bool) -> bool {
        self.current.load().as_deref().is_some_and(holds)
    }

    /// Whether `version` itself is the one staged here.
    pub(crate) fn stages(&self, version: &Arc<StagedVersion>) -> bool {
        let staged = self.staged.load();
        staged.as_ref().is_some_and(|v| Arc::ptr_eq(v, version))
    }

    fn live_staged(&self) -> Option<Arc<StagedVersion>> {
        self.staged.load_full().filter(|s| s.is_live())
    }
}

macro_rules! in_force {
    ($slot:expr, $method:ident($($arg:expr),*)) => {{
        match $slot.current.load_full() {
            Some(b) => b.strategy.$method($($arg),*).await,
            None => DefaultStrategy.$method($($arg),*).await,
        }
    }};
}

/// The registry's handle on a slot; or, for a replay to compare with, what is in force in it
/// without any staged version.
pub(crate) struct SlotStrategy {
    slot: Arc<Slot>,
    /// Whether a staged version takes its share of calls (shadow runs, the canary's calls).
    with_staged: bool,
}

impl SlotStrategy {
    /// The registry's strategy for `slot`.
    pub(crate) fn new(slot: Arc<Slot>) -> Self {
        Self {
            slot,
            with_staged: true,
        }
    }

    /// The version in force in `slot` alone.
    pub(crate) fn in_force(slot: Arc<Slot>) -> Self {
        Self {
            slot,
            with_staged: false,
        }
    }

    fn live_staged(&self) -> Option<Arc<StagedVersion>> {
        self.with_staged.then(|| self.slot.live_staged()).flatten()
    }

    /// `read` of the version in force, `None` when none is.
    fn current<T>(&self, read: impl FnOnce(&WasmStrategy) -> T) -> Option<T> {
        self.slot.current.load().as_ref().map(|b| read(&b.strategy))
    }
}

/// A before-write phase through the slot: the canary's share goes to the staged version (its
/// failures and latency judged), everything else to the version in force, with a shadow run
/// after it when one is staged. `input`/`old` build the shadow's copies (before the live call
/// changes anything), `after` the object after the live call. Staged versions' After hooks never
/// run: a shadow must not act, and a canary's hooks wait for its promotion.
macro_rules! phase {
    ($self:ident, $role:expr, $ctx:ident, $verb:expr, $method:ident($($arg:expr),*),
     input: $input:expr, old: $old:expr, after: $after:expr) => {{
        match $self.live_staged() {
            Some(s) if s.serves_this_request() => {
                let started = Instant::now();
                let result = s.strategy().$method($($arg),*).await;
                s.record_canary_call(result.is_err(), started.elapsed());
                result
            }
            Some(s) if s.mode() == RolloutMode::Shadow => {
                let (input, old) = ($input, $old);
                let started = Instant::now();
                let result = in_force!($self.slot, $method($($arg),*));
                let outcome = Outcome {
                    result: result.clone(),
                    object: $after,
                    latency: started.elapsed(),
                };
                s.shadow($role, $ctx, $verb, input, old, outcome);
                result
            }
            _ => in_force!($self.slot, $method($($arg),*)),
        }
    }};
}

#[async_trait]
impl Strategy for SlotStrategy {
    fn name(&self) -> &str {
        &self.slot.name
    }

    async fn before_create(&self, ctx: &StrategyContext, obj: &mut Value) -> Answer {
        phase!(self, Role::Strategy, ctx, Verb::Create, before_create(ctx, obj),
            input: obj.clone(), old: None, after: Some(obj.clone()))
    }

    async fn before_update(&self, ctx: &StrategyContext, new: &mut Value, old: &Value) -> Answer {
        phase!(self, Role::Strategy, ctx, Verb::Update, before_update(ctx, new, old),
            input: new.clone(), old: Some(old.clone()), after: Some(new.clone()))
    }

    async fn before_delete(&self, ctx: &StrategyContext, obj: &Value) -> Answer {
        phase!(self, Role::Strategy, ctx, Verb::Delete, before_delete(ctx, obj),
            input: obj.clone(), old: None, after: None)
    }

    fn allow_create_on_update(&self) -> bool {
        self.current(WasmStrategy::allow_create_on_update)
            .unwrap_or_else(|| DefaultStrategy.allow_create_on_update())
    }

    fn allow_unconditional_update(&self) -> bool {
        self.current(WasmStrategy::allow_unconditional_update)
            .unwrap_or_else(|| DefaultStrategy.allow_unconditional_update())
    }

    fn runs_after(&self, operation: crate::admission_policy::Operation) -> bool {
        self.current(|s| s.runs_after(operation))
            .unwrap_or_else(|| DefaultStrategy.runs_after(operation))
    }

    async fn after_create(&self, ctx: &StrategyContext, obj: &Value) -> Result<(), StrategyError> {
        in_force!(self.slot, after_create(ctx, obj))
    }

    async fn after_update(
        &self,
        ctx: &StrategyContext,
        new: &Value,
        old: &Value,
    ) -> Result<(), StrategyError> {
        in_force!(self.slot, after_update(ctx, new, old))
    }

    async fn after_delete(&self, ctx: &StrategyContext, obj: &Value) -> Result<(), StrategyError> {
        in_force!(self.slot, after_delete(ctx, obj))
    }

    /// Only the version in force converts: every reader sees one conversion at a time, and a
    /// swap changes it between two calls, never inside one.
    fn converts(&self) -> bool {
        self.current(WasmStrategy::converts).unwrap_or(false)
    }

    fn converter_id(&self) -> String {
        self.current(WasmStrategy::converter_id).unwrap_or_default()
    }

    async fn convert(
        &self,
        resource: &ResourceInfo,
        objects: Vec<Vec<u8>>,
        desired_api_version: &str,
    ) -> Result<Vec<Vec<u8>>, StrategyError> {
        in_force!(self.slot, convert(resource, objects, desired_api_version))
    }
}

/// A policy's slot: asked as the policy in force is (a slot with nothing in force admits), with
/// the staged version's shadow or canary share as for a strategy. The shadow's input is the
/// object written, or for a delete the object deleted.
#[async_trait]
impl AdmissionPolicy for SlotStrategy {
    async fn admit(
        &self,
        ctx: &StrategyContext,
        attributes: &AdmissionAttributes,
        mut object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Answer {
        let verb = attributes.operation;
        // Reborrowed, not moved: the shadow's arm reads the object after the call.
        #[allow(clippy::needless_option_as_deref)]
        let answer = phase!(self, Role::Policy(attributes.clone()), ctx, verb,
            admit(ctx, attributes, object.as_deref_mut(), old),
            input: object.as_deref().or(old).cloned().unwrap_or_default(),
            old: old.filter(|_| verb == Verb::Update).cloned(),
            after: object.as_deref().cloned());
        answer
    }
}

/// An authorizer's slot: asked as the authorizer in force is (a slot with nothing in force has
/// no opinion), with the staged version's shadow or canary share as for a strategy; the shadow
/// is given the same review, and its decision is the review's status after the call.
#[async_trait]
impl AuthorizerModule for SlotStrategy {
    async fn authorize(&self, ctx: &StrategyContext, review: &mut Value) -> Answer {
        phase!(self, Role::Authorizer, ctx, Verb::Create, authorize(ctx, review),
            input: review.clone(), old: None, after: Some(review.clone()))
    }

    /// The version in force's failure policy (a canary's call that fails follows it too).
    fn deny_on_failure(&self) -> bool {
        self.current(AuthorizerModule::deny_on_failure)
            .unwrap_or(false)
    }
}
