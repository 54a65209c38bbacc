//! `WasmStrategy`: the registry's `Strategy` trait (and a policy module's `AdmissionPolicy`, an
//! authorizer module's `AuthorizerModule`)
//! implemented by calls into a loaded module, each on a reactor module's kept instance (or a
//! fresh one), failures turned into `StrategyError`s and counted.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt as _;
use serde_json::Value;

use super::object_answer::apply_object_answer;
use crate::admission_policy::Operation as Write;
use crate::admission_policy::{AdmissionAttributes, AdmissionPhase, AdmissionPolicy};
use crate::authorizer::AuthorizerModule;
use crate::strategy::{
    Admission, Answer, FieldError, FieldErrorKind, ResourceInfo, Strategy, StrategyContext,
    StrategyError,
};
use crate::user::UserInfo;
use strategy_host_wasm_runtime::abi::{self, request::Operation as Op, Operation};
use strategy_host_wasm_runtime::{
    CallFailure, CallerInfo, FailureKind, Runtime, SessionOptions, StrategyModule,
};

const CREATE_OPS: &[Operation] = &[
    Operation::PrepareForCreate,
    Operation::Validate,
    Operation::WarningsOnCreate,
    Operation::Canonicalize,
];
const UPDATE_OPS: &[Operation] = &[
    Operation::PrepareForUpdate,
    Operation::ValidateUpdate,
    Operation::WarningsOnUpdate,
    Operation::Canonicalize,
];

/// A loaded module as a registry [`Strategy`].
///
/// A call starts on the calling async worker and is moved to a blocking thread if it runs into
/// its first epoch tick (1–2 ms), so a looping guest spends its deadline (100 ms by default) on a
/// blocking-pool thread, not a worker; see `runtime::placement` for why.
#[derive(Debug, Clone)]
pub struct WasmStrategy {
    module: Arc<StrategyModule>,
    runtime: Runtime,
}

impl WasmStrategy {
    /// Serves `module` with `runtime`'s limits.
    pub fn new(runtime: Runtime, module: Arc<StrategyModule>) -> Self {
        Self { module, runtime }
    }

    /// The module behind the strategy.
    pub fn module(&self) -> &Arc<StrategyModule> {
        &self.module
    }

    /// Runs one operation on an instance of the module; `None` = the module does not implement
    /// it.
    async fn run(
        &self,
        ctx: &StrategyContext,
        op: Op,
        in_after_hook: bool,
    ) -> Result<abi::Response, StrategyError> {
        let counters = self.module.counters(&self.runtime);
        let started = std::time::Instant::now();
        let tells_user = self.module.manifest().abi_version.tells_user();
        let request = abi::Request {
            context: Some(context(ctx, tells_user)),
            operation: Some(op),
        };
        let opts = SessionOptions {
            caller: CallerInfo {
                module: self.module.name().to_owned(),
                request_id: ctx.request_id.clone(),
                resource: ctx.resource.clone(),
                dry_run: ctx.dry_run,
            },
            in_after_hook,
            depth: ctx.hook_depth,
        };
        let result = self
            .module
            .call_from_task(&self.runtime, opts, request)
            .await
            .and_then(|resp| match resp.error.is_empty() {
                true => Ok(resp),
                false => Err(CallFailure::new(FailureKind::Guest, resp.error)),
            });
        counters.record_call(started.elapsed().as_secs_f64());
        result.map_err(|failure| {
            counters.record_failure(failure.kind, in_after_hook);
            tracing::warn!(
                module = self.module.name(),
                request = %ctx.request_id,
                reason = failure.kind.label(),
                "strategy call failed: {failure}"
            );
            self.error(failure.message)
        })
    }

    fn error(&self, reason: String) -> StrategyError {
        StrategyError {
            module: self.module.name().to_owned(),
            reason,
        }
    }

    /// One conversion call: `batch` converted to `desired`, one answer per object.
    async fn convert_batch(
        &self,
        ctx: &StrategyContext,
        batch: Vec<Vec<u8>>,
        desired: String,
    ) -> Result<Vec<Vec<u8>>, StrategyError> {
        let sent = batch.len();
        let op = Op::Convert(abi::ConvertRequest {
            objects: batch,
            desired_api_version: desired,
        });
        let resp = self.run(ctx, op, false).await?;
        if resp.converted_objects.len() != sent {
            return Err(self.error(format!(
                "converted {} objects, expected {sent}",
                resp.converted_objects.len(),
            )));
        }
        Ok(resp.converted_objects)
    }

    fn admission(&self, resp: abi::Response, obj: Option<&mut Value>) -> Answer {
        if let Some(obj) = obj {
            apply_object_answer(obj, &resp.object, &resp.object_patch).map_err(|reason| {
                let counters = self.module.counters(&self.runtime);
                counters.record_failure(FailureKind::BadOutput, false);
                self.error(reason.to_string())
            })?;
        }
        Ok(Admission {
            field_errors: resp.field_errors.into_iter().map(field_error).collect(),
            warnings: resp.warnings,
            refusal: None,
        })
    }
}

/// An admission policy module's answer to the admission chain; a module that declares no
/// admission policy admits every write.
#[async_trait]
impl AdmissionPolicy for WasmStrategy {
    async fn admit(
        &self,
        ctx: &StrategyContext,
        attributes: &AdmissionAttributes,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Answer {
        let Some(declared) = self.module.manifest().admission_policy.as_ref() else {
            return Ok(Admission::default());
        };
        let phase = match attributes.phase {
            AdmissionPhase::Mutate if !declared.mutates || object.is_none() => {
                return Ok(Admission::default())
            }
            AdmissionPhase::Mutate => abi::AdmissionPhase::Mutate,
            AdmissionPhase::Validate => abi::AdmissionPhase::Validate,
        };
        let op = Op::Admit(abi::AdmitRequest {
            phase: phase as i32,
            operation: attributes.operation.as_str().to_owned(),
            object: object.as_deref().map(json).unwrap_or_default(),
            old_object: old.map(json).unwrap_or_default(),
            namespace: attributes.namespace.clone().unwrap_or_default(),
            name: attributes.name.clone(),
            subresource: attributes.subresource.clone().unwrap_or_default(),
        });
        let resp = self.run(ctx, op, false).await?;
        self.admission(resp, object)
    }
}

/// An authorizer module's answer: the review's `status` from the decision it returned; a
/// module that declares no authorizer has no opinion.
#[async_trait]
impl AuthorizerModule for WasmStrategy {
    async fn authorize(&self, ctx: &StrategyContext, review: &mut Value) -> Answer {
        if self.module.manifest().authorizer.is_none() {
            return Ok(Admission::default());
        }
        let spec = review.get("spec").map(json).unwrap_or_default();
        let resp = self
            .run(ctx, Op::Authorize(abi::AuthorizeRequest { spec }), false)
            .await?;
        let mut status = serde_json::json!({ "allowed": resp.allowed });
        if resp.denied && !resp.allowed {
            status["denied"] = Value::Bool(true);
        }
        if !resp.reason.is_empty() {
            status["reason"] = Value::String(resp.reason);
        }
        review["status"] = status;
        Ok(Admission::default())
    }

    fn deny_on_failure(&self) -> bool {
        self.module
            .manifest()
            .authorizer
            .is_some_and(|a| a.deny_on_failure)
    }
}

fn json(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("a JSON value serializes")
}

/// The request's context as the ABI carries it; the user only to a module whose ABI version
/// defines it (1.1 and later): a module tells the host which version it speaks, and is told no
/// more than that version says.
fn context(ctx: &StrategyContext, tells_user: bool) -> abi::Context {
    let r = &ctx.resource;
    abi::Context {
        resource: Some(abi::Resource {
            group: r.group.clone(),
            version: r.version.clone(),
            kind: r.kind.clone(),
            plural: r.plural.clone(),
            scope: if r.namespaced {
                abi::Scope::Namespaced
            } else {
                abi::Scope::Cluster
            } as i32,
        }),
        dry_run: ctx.dry_run,
        request_id: ctx.request_id.clone(),
        user: tells_user.then(|| user(&ctx.user)),
    }
}

fn user(user: &UserInfo) -> abi::UserInfo {
    abi::UserInfo {
        username: user.username.clone(),
        uid: user.uid.clone(),
        groups: user.groups.clone(),
        extra: user
            .extra
            .iter()
            .map(|(key, values)| {
                let values = values.clone();
                (key.clone(), abi::ExtraValue { values })
            })
            .collect(),
    }
}

fn field_error(e: abi::FieldError) -> FieldError {
    let kind = match e.kind() {
        abi::FieldErrorKind::Required => FieldErrorKind::Required,
        abi::FieldErrorKind::Forbidden => FieldErrorKind::Forbidden,
        abi::FieldErrorKind::Duplicate => FieldErrorKind::Duplicate,
        abi::FieldErrorKind::NotSupported => FieldErrorKind::NotSupported,
        abi::FieldErrorKind::TooLong => FieldErrorKind::TooLong,
        abi::FieldErrorKind::TooMany => FieldErrorKind::TooMany,
        abi::FieldErrorKind::Invalid | abi::FieldErrorKind::Unspecified => FieldErrorKind::Invalid,
    };
    FieldError {
        kind,
        field: e.field,
        detail: e.detail,
    }
}

#[async_trait]
impl Strategy for WasmStrategy {
    fn name(&self) -> &str {
        self.module.name()
    }

    async fn before_create(&self, ctx: &StrategyContext, obj: &mut Value) -> Answer {
        if !self.module.manifest().implements_any(CREATE_OPS) {
            return Ok(Admission::default());
        }
        let op = Op::BeforeCreate(abi::BeforeCreateRequest { object: json(obj) });
        let resp = self.run(ctx, op, false).await?;
        self.admission(resp, Some(obj))
    }

    async fn before_update(&self, ctx: &StrategyContext, new: &mut Value, old: &Value) -> Answer {
        if !self.module.manifest().implements_any(UPDATE_OPS) {
            return Ok(Admission::default());
        }
        let op = Op::BeforeUpdate(abi::BeforeUpdateRequest {
            object: json(new),
            old_object: json(old),
        });
        let resp = self.run(ctx, op, false).await?;
        self.admission(resp, Some(new))
    }

    async fn before_delete(&self, ctx: &StrategyContext, obj: &Value) -> Answer {
        if !self.module.manifest().implements(Operation::BeforeDelete) {
            return Ok(Admission::default());
        }
        let op = Op::BeforeDelete(abi::BeforeDeleteRequest { object: json(obj) });
        let resp = self.run(ctx, op, false).await?;
        self.admission(resp, None)
    }

    fn allow_create_on_update(&self) -> bool {
        self.module.allow_create_on_update()
    }

    fn allow_unconditional_update(&self) -> bool {
        self.module.allow_unconditional_update()
    }

    fn runs_after(&self, operation: Write) -> bool {
        let hook = match operation {
            Write::Create => Operation::AfterCreate,
            Write::Update => Operation::AfterUpdate,
            Write::Delete => Operation::AfterDelete,
        };
        self.module.manifest().implements(hook)
    }

    async fn after_create(&self, ctx: &StrategyContext, obj: &Value) -> Result<(), StrategyError> {
        if !self.runs_after(Write::Create) {
            return Ok(());
        }
        let op = Op::AfterCreate(abi::AfterCreateRequest { object: json(obj) });
        self.run(ctx, op, true).await.map(drop)
    }

    async fn after_update(
        &self,
        ctx: &StrategyContext,
        new: &Value,
        old: &Value,
    ) -> Result<(), StrategyError> {
        if !self.runs_after(Write::Update) {
            return Ok(());
        }
        let op = Op::AfterUpdate(abi::AfterUpdateRequest {
            object: json(new),
            old_object: json(old),
        });
        self.run(ctx, op, true).await.map(drop)
    }

    async fn after_delete(&self, ctx: &StrategyContext, obj: &Value) -> Result<(), StrategyError> {
        if !self.runs_after(Write::Delete) {
            return Ok(());
        }
        let op = Op::AfterDelete(abi::AfterDeleteRequest { object: json(obj) });
        self.run(ctx, op, true).await.map(drop)
    }

    fn converts(&self) -> bool {
        self.module.manifest().implements(Operation::Convert)
    }

    fn converter_id(&self) -> String {
        self.module.digest().to_owned()
    }

    /// Converts in calls of at most 64 objects (`CONVERSION_BATCH`), each in its own session within
    /// the usual limits (a long list is many calls, not one that outgrows the memory cap), as
    /// many at once as the machine has cores: a long list's conversion is the CPU work of one
    /// request, which would otherwise keep one core busy while the others idle. The objects'
    /// bytes go to the module as they are and its answers come back as it gave them, in order:
    /// the registry checks them (JSON objects, version, kind, metadata) as it reads them.
    async fn convert(
        &self,
        resource: &ResourceInfo,
        objects: Vec<Vec<u8>>,
        desired_api_version: &str,
    ) -> Result<Vec<Vec<u8>>, StrategyError> {
        let ctx = Arc::new(StrategyContext {
            resource: resource.clone(),
            dry_run: false,
            request_id: "conversion".into(),
            hook_depth: 0,
            user: Arc::new(UserInfo::server()),
        });
        let total = objects.len();
        let mut objects = objects.into_iter().peekable();
        let batches = std::iter::from_fn(|| {
            objects.peek()?;
            Some(objects.by_ref().take(CONVERSION_BATCH).collect::<Vec<_>>())
        });
        // Each batch is a task of its own, so the runtime's workers share them; `buffered`
        // starts the next one as one ends and keeps the answers in the batches' order.
        let calls = batches.map(|batch| {
            let (strategy, ctx) = (self.clone(), ctx.clone());
            let desired = desired_api_version.to_owned();
            tokio::spawn(async move { strategy.convert_batch(&ctx, batch, desired).await })
        });
        let mut answers = futures::stream::iter(calls).buffered(conversion_workers());
        let mut converted = Vec::with_capacity(total);
        while let Some(answer) = answers.next().await {
            let batch = answer
                .map_err(|e| self.error(format!("the conversion's worker failed: {e}")))??;
            converted.extend(batch);
        }
        Ok(converted)
    }
}

/// How many conversion calls of one request run at once: the machine's cores, asked once (the
/// standard library reads the cgroup's CPU quota from files on every call).
fn conversion_workers() -> usize {
    static WORKERS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WORKERS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The most objects one conversion call carries.
const CONVERSION_BATCH: usize = 64;
