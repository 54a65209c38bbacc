//! Admission policies as wasm modules: every policy module in force is asked about the writes
//! its declaration matches (its `MatchResources`, then its CEL match conditions), in the
//! mutating phase when it mutates and in the validating phase always. A refusal (field errors)
//! answers per the declared actions — Deny fails the write with 422 and the policy's causes, Warn
//! adds a warning, Audit logs and counts — and a failed call follows the failure policy. Calls go
//! through the module table's slot, so a shadow or canary version runs beside the one in force;
//! a staged version is also replayed over the stored objects its declaration matches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry as MetricsRegistry;
use serde_json::Value;

use crate::admission_policy::{AdmissionAttributes, AdmissionPhase};
use crate::generic::{record_audit_failures, request_variable};
use crate::rules::MatchResources;
use crate::strategy::{Admission, StrategyContext};
use crate::user::UserInfo;
use strategy_host_cel::expression::{self as cel, Activation, Expression};
use strategy_host_registry::admission::{
    AdmissionRequest, MutatingAdmission, Operation, Rejection, ValidatingAdmission, Verdict,
};
use strategy_host_registry::client::Client;
use strategy_host_registry::Registry;
use strategy_host_wasm::rollout::{Role, StagedVersion, Version};
use strategy_host_wasm::{ModuleTable, PolicyInForce, PolicyReplay, ReplayError};
use strategy_host_wasm_runtime::{PolicyDeclaration, ValidationAction};

/// A policy module's declaration, read once per version (by digest).
struct Compiled {
    matching: MatchResources,
    conditions: Vec<(String, cel::Result<Expression>)>,
    declaration: PolicyDeclaration,
}

/// A policy's match condition that does not compile or cannot be evaluated.
#[derive(Debug, thiserror::Error)]
#[error("match condition {name:?}: {source}")]
struct MatchConditionError {
    /// The condition's name.
    name: String,
    source: cel::Error,
}

impl Compiled {
    fn new(declaration: &PolicyDeclaration) -> Self {
        Self {
            // The declaration names resources: a module's that names none is refused at load.
            matching: MatchResources::parse(&declaration.match_resources),
            conditions: declaration
                .match_conditions
                .iter()
                .map(|(name, e)| (name.clone(), Expression::compile(e)))
                .collect(),
            declaration: declaration.clone(),
        }
    }
}

/// The labels of `apiserver_validating_admission_policy_check_total` for policy modules.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    policy: String,
    /// `deny`, `warn`, `audit` (a refusal, by what it did) or `allow`.
    enforcement_action: &'static str,
    /// `no_error`, or `call_error` for a call that failed.
    error_type: &'static str,
}

/// The admission plugin (mutating and validating) of the policy modules.
pub struct WasmPolicies {
    modules: Arc<ModuleTable>,
    registry: Weak<Registry>,
    compiled: Mutex<HashMap<String, Arc<Compiled>>>,
    checks: Family<CheckLabels, Counter>,
}

impl WasmPolicies {
    /// The plugin over `modules`' policy modules, reading namespaces through `registry`; it
    /// also replays their staged versions.
    pub fn new(modules: Arc<ModuleTable>, registry: &Arc<Registry>) -> Arc<Self> {
        let plugin = Arc::new(Self {
            modules: modules.clone(),
            registry: Arc::downgrade(registry),
            compiled: Mutex::default(),
            checks: Family::default(),
        });
        let replay: Arc<dyn PolicyReplay> = plugin.clone();
        modules.set_policy_replay(Arc::downgrade(&replay));
        plugin
    }

    /// Registers the plugin's metrics.
    pub fn register(&self, registry: &mut MetricsRegistry) {
        registry.register(
            "strategy_host_admission_policy_module_check",
            "Admission policy module verdicts, by policy, what the verdict did and whether the call failed",
            self.checks.clone(),
        );
    }

    fn compiled(&self, policy: &PolicyInForce) -> Option<Arc<Compiled>> {
        let declaration = policy.module.manifest().admission_policy.as_ref()?;
        let mut cache = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        let digest = policy.module.digest().to_owned();
        // Versions come and go with hot reload; a cache of only the current ones stays small.
        if cache.len() > 256 {
            cache.clear();
        }
        Some(
            cache
                .entry(digest)
                .or_insert_with(|| Arc::new(Compiled::new(declaration)))
                .clone(),
        )
    }

    /// The policies asked about `request` in `phase`, with their declarations.
    async fn matching(
        &self,
        request: &AdmissionRequest<'_>,
        phase: AdmissionPhase,
    ) -> Vec<(PolicyInForce, Arc<Compiled>)> {
        let policies: Vec<_> = self
            .modules
            .policies()
            .into_iter()
            .filter_map(|p| self.compiled(&p).map(|c| (p, c)))
            .filter(|(_, c)| phase == AdmissionPhase::Validate || c.declaration.mutates)
            .collect();
        if policies.is_empty() {
            return policies;
        }
        let namespace = crate::followed::namespace_object(&self.registry, request.namespace).await;
        policies
            .into_iter()
            .filter(|(_, c)| c.matching.matches(request, namespace.as_ref()))
            .collect()
    }

    /// Whether every match condition holds; `Err` when one cannot be evaluated.
    fn conditions_hold(
        compiled: &Compiled,
        request: &AdmissionRequest<'_>,
    ) -> Result<bool, MatchConditionError> {
        if compiled.conditions.is_empty() {
            return Ok(true);
        }
        let request_var = request_variable(request);
        let old = request.old_object.cloned().unwrap_or(Value::Null);
        let variables: Vec<(&str, &Value)> = vec![
            ("object", request.object),
            ("oldObject", &old),
            ("request", &request_var),
        ];
        let activation = Activation::new(&variables);
        for (name, expression) in &compiled.conditions {
            let failed = |source: &cel::Error| MatchConditionError {
                name: name.clone(),
                source: source.clone(),
            };
            let expression = expression.as_ref().map_err(failed)?;
            if !activation.truth(expression).map_err(|e| failed(&e))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Asks one policy about `request` in `phase` (`object` is changed in the mutating phase).
    async fn ask(
        &self,
        policy: &PolicyInForce,
        compiled: &Compiled,
        request: &AdmissionRequest<'_>,
        phase: AdmissionPhase,
        object: &mut Value,
    ) -> Verdict {
        let failed = |why: String| -> Verdict {
            self.count(&policy.name, "allow", "call_error");
            tracing::warn!(policy = %policy.name, "admission policy module failed: {why}");
            match compiled.declaration.fail_closed {
                true => Err(Rejection::Denied {
                    code: 500,
                    reason: "InternalError".into(),
                    message: format!(
                        "admission policy module '{}' failed and its failurePolicy is Fail: {why}",
                        policy.name
                    ),
                }),
                false => Ok(Vec::new()),
            }
        };
        match Self::conditions_hold(compiled, request) {
            Ok(true) => {}
            Ok(false) => return Ok(Vec::new()),
            Err(why) => return failed(why.to_string()),
        }
        let (ctx, attributes) = (context(request, ""), attributes(request, phase));
        let object = (request.operation != Operation::Delete).then_some(object);
        let answer = match (request.operation, request.old_object) {
            (Operation::Update | Operation::Delete, None) => Ok(Admission::default()),
            (_, old) => policy.policy.admit(&ctx, &attributes, object, old).await,
        };
        match answer {
            Ok(admission) => self.verdict(policy, compiled, request, admission),
            Err(e) => failed(e.reason),
        }
    }

    /// What a policy's answer does under its declared actions.
    fn verdict(
        &self,
        policy: &PolicyInForce,
        compiled: &Compiled,
        request: &AdmissionRequest<'_>,
        admission: Admission,
    ) -> Verdict {
        let mut warnings = admission.warnings;
        if admission.field_errors.is_empty() {
            self.count(&policy.name, "allow", "no_error");
            return Ok(warnings);
        }
        let message = admission
            .field_errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let actions = &compiled.declaration.actions;
        if actions.contains(&ValidationAction::Audit) {
            self.count(&policy.name, "audit", "no_error");
            let failure = serde_json::json!({
                "message": message,
                "policy": policy.name,
                "validationActions": ["Audit"],
            });
            record_audit_failures(request, &[failure]);
        }
        if actions.contains(&ValidationAction::Warn) {
            self.count(&policy.name, "warn", "no_error");
            warnings.push(format!(
                "Validation failed for admission policy module '{}': {message}",
                policy.name
            ));
        }
        if actions.contains(&ValidationAction::Deny) {
            self.count(&policy.name, "deny", "no_error");
            return Err(Rejection::Denied {
                code: 422,
                reason: "Invalid".into(),
                message: format!(
                    "admission policy module '{}' denied request: {message}",
                    policy.name
                ),
            });
        }
        Ok(warnings)
    }

    fn count(&self, policy: &str, enforcement_action: &'static str, error_type: &'static str) {
        self.checks
            .get_or_create(&CheckLabels {
                policy: policy.to_owned(),
                enforcement_action,
                error_type,
            })
            .inc();
    }
}

/// The request id of a staged version's replay (as a strategy module's replay names it).
const REPLAY_REQUEST_ID: &str = "strategy-rollout-replay";

/// The context of a policy module's call about `request`.
fn context(request: &AdmissionRequest<'_>, request_id: &str) -> StrategyContext {
    StrategyContext {
        resource: request.resource.info(request.version),
        dry_run: request.dry_run,
        request_id: request_id.to_owned(),
        hook_depth: 0,
        user: Arc::new(request.user.clone()),
    }
}

/// What a policy module is told about `request` in `phase`.
fn attributes(request: &AdmissionRequest<'_>, phase: AdmissionPhase) -> AdmissionAttributes {
    AdmissionAttributes {
        operation: request.operation,
        phase,
        namespace: request.namespace.map(String::from),
        name: request.name.to_owned(),
        subresource: request.subresource.map(String::from),
    }
}

#[async_trait]
impl PolicyReplay for WasmPolicies {
    async fn replay(
        &self,
        in_force: &dyn Version,
        staged: &StagedVersion,
    ) -> Result<u64, ReplayError> {
        let registry = self.registry.upgrade().ok_or(ReplayError::Stopping)?;
        let declaration = staged
            .module()
            .manifest()
            .admission_policy
            .as_ref()
            .ok_or(ReplayError::NotAPolicy)?;
        let compiled = Compiled::new(declaration);
        let user = UserInfo {
            username: "system:strategy-host:replay".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        };
        let replayer = Client::new(&registry, REPLAY_REQUEST_ID);
        let mut replayed = 0;
        // Each namespace is read once, not once per object in it ("" for cluster-scoped).
        let mut namespaces: HashMap<String, Option<Value>> = HashMap::new();
        for served in registry.resources() {
            let def = &served.def;
            let Some(version) = def.versions.iter().find(|v| v.storage) else {
                continue;
            };
            if def.create_only {
                continue;
            }
            let listed = replayer
                .list(&def.group, &version.name, &def.plural, None)
                .await
                .map_err(|source| ReplayError::List {
                    plural: def.plural.clone(),
                    source,
                })?;
            for object in listed {
                let text = |p: &str| object.pointer(p).and_then(Value::as_str);
                let namespace = text("/metadata/namespace").filter(|n| !n.is_empty());
                let namespace_key = namespace.unwrap_or_default().to_owned();
                if !namespaces.contains_key(&namespace_key) {
                    let found = crate::followed::namespace_object(&self.registry, namespace).await;
                    namespaces.insert(namespace_key.clone(), found);
                }
                let namespace_object = &namespaces[&namespace_key];
                let create = AdmissionRequest {
                    operation: Operation::Create,
                    resource: def,
                    version: &version.name,
                    subresource: None,
                    namespace,
                    name: text("/metadata/name").unwrap_or_default(),
                    object: &object,
                    old_object: None,
                    user: &user,
                    dry_run: true,
                    audit: None,
                };
                // Asked about the object as a create or as an update that changes nothing.
                let update = AdmissionRequest {
                    operation: Operation::Update,
                    old_object: Some(&object),
                    ..create
                };
                let matched = [&create, &update].into_iter().any(|request| {
                    compiled
                        .matching
                        .matches(request, namespace_object.as_ref())
                        && Self::conditions_hold(&compiled, request).unwrap_or(true)
                });
                if !matched {
                    continue;
                }
                let ctx = context(&create, REPLAY_REQUEST_ID);
                let role = Role::Policy(attributes(&create, AdmissionPhase::Validate));
                staged
                    .replay(in_force, &role, &ctx, std::slice::from_ref(&object))
                    .await;
                replayed += 1;
            }
        }
        Ok(replayed)
    }
}

#[async_trait]
impl MutatingAdmission for WasmPolicies {
    fn name(&self) -> &str {
        "WasmMutatingAdmissionPolicy"
    }

    async fn admit(&self, request: &AdmissionRequest<'_>, object: &mut Value) -> Verdict {
        let mut warnings = Vec::new();
        for (policy, compiled) in self.matching(request, AdmissionPhase::Mutate).await {
            let before = object.clone();
            let asked = AdmissionRequest {
                object: &before,
                ..*request
            };
            let phase = AdmissionPhase::Mutate;
            warnings.extend(self.ask(&policy, &compiled, &asked, phase, object).await?);
        }
        Ok(warnings)
    }
}

#[async_trait]
impl ValidatingAdmission for WasmPolicies {
    fn name(&self) -> &str {
        "WasmValidatingAdmissionPolicy"
    }

    async fn validate(&self, request: &AdmissionRequest<'_>) -> Verdict {
        let mut warnings = Vec::new();
        for (policy, compiled) in self.matching(request, AdmissionPhase::Validate).await {
            // The validating phase changes nothing: each policy gets its own copy.
            let mut object = request.object.clone();
            let phase = AdmissionPhase::Validate;
            warnings.extend(
                self.ask(&policy, &compiled, request, phase, &mut object)
                    .await?,
            );
        }
        Ok(warnings)
    }
}
