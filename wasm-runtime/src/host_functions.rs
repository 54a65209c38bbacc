//! The host functions guests import from `strategy-host` (`log`, `get`, `list`, `apply`), the
//! `HostApi` callbacks the registry supplies behind them, and the per-call state they see.
//! `apply` is where After hooks are kept in bounds: refused outside a hook, beyond the depth
//! limit, and for resources the manifest does not declare; each refusal is logged and counted.

use std::sync::Arc;
use std::time::Instant;

use prost::Message;
use serde_json::Value;
use wasmtime::{AsContextMut, Caller, Engine, Extern, Linker};

use super::abi;
use super::limits::{CallLimits, Deadline};
use super::manifest::Grants;
use super::metrics::{ApplyRefusal, Metrics};
use super::wasi::{self, WasiState};
use strategy_host_contract::strategy::ResourceInfo;

/// Who is calling a host function.
#[derive(Debug, Clone)]
pub struct CallerInfo {
    /// The module's name.
    pub module: String,
    /// The request's id.
    pub request_id: String,
    /// The resource the call is about.
    pub resource: ResourceInfo,
    /// The request is a dry run (an `apply` should not persist either).
    pub dry_run: bool,
}

/// The objects a `get` or `list` reads: one resource's, in one namespace (Kubernetes' word for
/// them: a collection). `namespace` is `""` for a cluster-scoped resource, or for a `list` of
/// every namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collection<'a> {
    /// The resource's API group (`""`: the core group).
    pub group: &'a str,
    /// The resource's plural name.
    pub plural: &'a str,
    /// The namespace.
    pub namespace: &'a str,
}

impl<'a> Collection<'a> {
    /// The objects of `plural` in `group`, in `namespace`.
    pub fn new(group: &'a str, plural: &'a str, namespace: &'a str) -> Self {
        Self {
            group,
            plural,
            namespace,
        }
    }
}

/// Why a host function call failed; its text is what the guest receives.
#[derive(Debug, thiserror::Error)]
pub enum HostCallError {
    /// No [`HostApi`] is installed yet.
    #[error("the host has no object access configured")]
    NotConfigured,
    /// The server is stopping.
    #[error("the server is shutting down")]
    ShuttingDown,
    /// The collection read (`plural.group`) is not served.
    #[error("the resource {0} is not served")]
    NotServed(String),
    /// No served resource has the applied object's apiVersion and kind.
    #[error("no served resource for {api_version}, Kind={kind}")]
    NoServedKind {
        /// The object's apiVersion.
        api_version: String,
        /// Its kind.
        kind: String,
    },
    /// The applied object has no name.
    #[error("the applied object has no metadata.name")]
    NoName,
    /// The host refused or failed the request (a bad selector, a refused write ...).
    #[error("{0}")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl HostCallError {
    /// The host failed the request for `reason` (a registry error, a panicked read).
    pub fn failed(reason: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Failed(Box::new(reason))
    }
}

/// What the host functions reach: reads from the cacher and writes through the registry. The
/// registry supplies it with [`super::Runtime::set_host_api`]; what it does not implement is
/// refused as not configured.
///
/// Methods are called on a blocking thread (calls of modules granted `get`, `list` or `apply`
/// run on tokio's blocking pool from their start), never on an async worker, so they may block,
/// e.g. with `tokio::runtime::Handle::block_on`. Errors go back to the guest as strings.
pub trait HostApi: Send + Sync + 'static {
    /// Object `name` of `objects`, or `None` when it does not exist.
    fn get(
        &self,
        _caller: &CallerInfo,
        _objects: Collection<'_>,
        _name: &str,
    ) -> Result<Option<Value>, HostCallError> {
        Err(HostCallError::NotConfigured)
    }

    /// The objects of `objects` matching `label_selector` (`""`: all).
    fn list(
        &self,
        _caller: &CallerInfo,
        _objects: Collection<'_>,
        _label_selector: &str,
    ) -> Result<Vec<Value>, HostCallError> {
        Err(HostCallError::NotConfigured)
    }

    /// Creates or updates `object` (by its apiVersion, kind, namespace and name) through the
    /// registry with its resource's own strategy, and returns it as stored. `depth` is the hook
    /// depth of the nested write, to be carried into its strategy calls (and so into the After
    /// hooks it triggers). The runtime has already refused calls beyond the configured depth.
    fn apply(
        &self,
        _caller: &CallerInfo,
        _depth: u32,
        _object: Value,
    ) -> Result<Value, HostCallError> {
        Err(HostCallError::NotConfigured)
    }
}

/// The `HostApi` in force until the registry installs its own: every call is refused (the
/// trait's defaults).
#[derive(Debug, Default)]
pub struct NoHostApi;

impl HostApi for NoHostApi {}

/// The state of one store: one instance serving one registry phase.
pub(crate) struct CallState {
    pub(crate) limits: CallLimits,
    pub(crate) deadline: Deadline,
    pub(crate) caller: CallerInfo,
    pub(crate) grants: Grants,
    /// Whether the phase is an After hook (the only place `apply` works).
    pub(crate) in_after_hook: bool,
    /// The session is still on the async worker it started on and yields at its next epoch
    /// deadline (cleared when it does); see `instance::Session::new`.
    pub(crate) on_worker: bool,
    pub(crate) depth: u32,
    pub(crate) max_depth: u32,
    pub(crate) output_limit: usize,
    pub(crate) logs_left: u32,
    pub(crate) host_api: Arc<dyn HostApi>,
    /// The runtime's counters, for what host functions refuse.
    pub(crate) metrics: Arc<Metrics>,
    /// What the WASI shim keeps for the instance (its clock, generator, partial output lines).
    pub(crate) wasi: WasiState,
}

/// The linker every module is pre-linked against. `get`, `list` and `apply` are async host
/// functions only because they hand their answer to the guest through its `alloc` export, and
/// a session runs on wasmtime's async entry points (see `placement`), where re-entering the
/// guest must be async too; they still run on a blocking thread and block there.
pub(crate) fn linker(engine: &Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasi::define(&mut linker)?;
    linker.func_wrap(abi::HOST_MODULE, "log", log)?;
    linker.func_wrap_async(
        abi::HOST_MODULE,
        "get",
        |c: Caller<'_, CallState>, (p, l): (i32, i32)| Box::new(host_call(c, p, l, get)),
    )?;
    linker.func_wrap_async(
        abi::HOST_MODULE,
        "list",
        |c: Caller<'_, CallState>, (p, l): (i32, i32)| Box::new(host_call(c, p, l, list)),
    )?;
    linker.func_wrap_async(
        abi::HOST_MODULE,
        "apply",
        |c: Caller<'_, CallState>, (p, l): (i32, i32)| Box::new(host_call(c, p, l, apply)),
    )?;
    Ok(linker)
}

/// The longest log line a module can write; the rest of a line is cut.
pub(crate) const MAX_LOG_LINE: usize = 4096;

fn log(mut caller: Caller<'_, CallState>, level: i32, ptr: i32, len: i32) -> wasmtime::Result<()> {
    if caller.data().logs_left == 0 {
        return Ok(());
    }
    let bytes = read_guest(&mut caller, ptr, (len as u32 as usize).min(MAX_LOG_LINE))?;
    emit_log(caller.data_mut(), level, &String::from_utf8_lossy(&bytes));
    Ok(())
}

/// Writes one of the module's lines into the host's log at `level` (1 error, 2 warn, 3 info,
/// else debug), within the call's cap on lines.
pub(crate) fn emit_log(s: &mut CallState, level: i32, line: &str) {
    if s.logs_left == 0 {
        return;
    }
    s.logs_left -= 1;
    let (module, request) = (&s.caller.module, &s.caller.request_id);
    match level {
        1 => tracing::error!(target: "strategy", module, request, "{line}"),
        2 => tracing::warn!(target: "strategy", module, request, "{line}"),
        3 => tracing::info!(target: "strategy", module, request, "{line}"),
        _ => tracing::debug!(target: "strategy", module, request, "{line}"),
    }
}

/// The calling module's linear memory.
pub(crate) fn memory(caller: &mut Caller<'_, CallState>) -> wasmtime::Result<wasmtime::Memory> {
    match caller.get_export("memory") {
        Some(Extern::Memory(m)) => Ok(m),
        _ => wasmtime::bail!("module has no memory export"),
    }
}

/// A copy of `len` bytes of the caller's memory at `ptr`.
pub(crate) fn read_guest(
    caller: &mut Caller<'_, CallState>,
    ptr: i32,
    len: usize,
) -> wasmtime::Result<Vec<u8>> {
    let mem = memory(caller)?;
    let start = ptr as u32 as usize;
    let data = mem.data(&caller);
    match data.get(start..start.saturating_add(len)) {
        Some(bytes) => Ok(bytes.to_vec()),
        None => wasmtime::bail!("host function argument points outside linear memory"),
    }
}

/// Copies `bytes` into a buffer from the guest's `alloc` and returns it packed.
async fn write_guest(caller: &mut Caller<'_, CallState>, bytes: &[u8]) -> wasmtime::Result<i64> {
    let alloc = match caller.get_export("alloc") {
        Some(Extern::Func(f)) => f.typed::<i32, i32>(&caller)?,
        _ => wasmtime::bail!("module has no alloc export"),
    };
    let ptr = alloc.call_async(&mut *caller, bytes.len() as i32).await?;
    memory(caller)?.write(&mut *caller, ptr as u32 as usize, bytes)?;
    Ok(abi::pack(ptr as u32, bytes.len() as u32))
}

type Handler<Req, Resp> = fn(&CallState, Req) -> Resp;

async fn host_call<Req: Message + Default, Resp: Message + HasError>(
    mut caller: Caller<'_, CallState>,
    ptr: i32,
    len: i32,
    handler: Handler<Req, Resp>,
) -> wasmtime::Result<i64> {
    let limit = caller.data().output_limit;
    let len = len as u32 as usize;
    if len > limit {
        wasmtime::bail!("host function request of {len} bytes exceeds the cap of {limit} bytes");
    }
    let bytes = read_guest(&mut caller, ptr, len)?;
    let started = Instant::now();
    let resp = match Req::decode(bytes.as_slice()) {
        Ok(req) => handler(caller.data(), req),
        Err(e) => Resp::error(format!("request did not decode: {e}")),
    };
    // Time spent in the host is not the guest's: push its deadline back.
    let state = caller.data_mut();
    state.deadline.extend(started.elapsed());
    let ticks = state.deadline.ticks();
    caller.as_context_mut().set_epoch_deadline(ticks);
    let mut out = resp.encode_to_vec();
    if out.len() > limit {
        out = Resp::error(format!(
            "the answer of {} bytes exceeds the cap of {limit} bytes",
            out.len()
        ))
        .encode_to_vec();
    }
    write_guest(&mut caller, &out).await
}

/// A host function's answer, which can carry an error for the guest instead.
trait HasError: Default {
    fn error(msg: String) -> Self;
}

/// Implements [`HasError`] for answers whose `error` field says what failed.
macro_rules! has_error {
    ($($response:ty),*) => {$(
        impl HasError for $response {
            fn error(error: String) -> Self {
                Self {
                    error,
                    ..Default::default()
                }
            }
        }
    )*};
}

has_error!(abi::GetResponse, abi::ListResponse, abi::ApplyResponse);

fn get(s: &CallState, req: abi::GetRequest) -> abi::GetResponse {
    if !s.grants.get {
        return HasError::error("host function get is not granted".into());
    }
    let objects = Collection::new(&req.group, &req.plural, &req.namespace);
    match s.host_api.get(&s.caller, objects, &req.name) {
        Ok(Some(obj)) => abi::GetResponse {
            found: true,
            object: obj.to_string().into_bytes(),
            error: String::new(),
        },
        Ok(None) => abi::GetResponse::default(),
        Err(e) => HasError::error(e.to_string()),
    }
}

fn list(s: &CallState, req: abi::ListRequest) -> abi::ListResponse {
    if !s.grants.list {
        return HasError::error("host function list is not granted".into());
    }
    let objects = Collection::new(&req.group, &req.plural, &req.namespace);
    match s.host_api.list(&s.caller, objects, &req.label_selector) {
        Ok(items) => abi::ListResponse {
            items: items.iter().map(|v| v.to_string().into_bytes()).collect(),
            error: String::new(),
        },
        Err(e) => HasError::error(e.to_string()),
    }
}

fn apply(s: &CallState, req: abi::ApplyRequest) -> abi::ApplyResponse {
    if !s.grants.apply {
        return HasError::error("host function apply is not granted".into());
    }
    if !s.in_after_hook {
        return refuse(
            s,
            ApplyRefusal::OutsideHook,
            "apply may only be called from an After hook".into(),
        );
    }
    if s.depth >= s.max_depth {
        return refuse(
            s,
            ApplyRefusal::Depth,
            format!(
                "apply refused: hooks nested {} deep (the limit is {})",
                s.depth, s.max_depth
            ),
        );
    }
    let obj: Value = match serde_json::from_slice(&req.object) {
        Ok(v) => v,
        Err(e) => return HasError::error(format!("the object did not decode: {e}")),
    };
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    // `apiVersion` is `group/version`, or `version` alone for the core group.
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let declared = s
        .grants
        .applies
        .iter()
        .any(|gk| gk.group == group && gk.kind == kind);
    if !declared {
        return refuse(
            s,
            ApplyRefusal::Undeclared,
            format!(
                "apply refused: module {:?} does not declare {api_version}/{kind} among the resources its hooks apply",
                s.caller.module
            ),
        );
    }
    match s.host_api.apply(&s.caller, s.depth + 1, obj) {
        Ok(stored) => abi::ApplyResponse {
            object: stored.to_string().into_bytes(),
            error: String::new(),
        },
        Err(e) => HasError::error(e.to_string()),
    }
}

/// Logs and counts a refused `apply`, and answers the guest with the reason (its hook decides
/// what to do with it; a hook that passes it on fails, which the registry reports as a warning).
fn refuse(s: &CallState, reason: ApplyRefusal, message: String) -> abi::ApplyResponse {
    let c = &s.caller;
    tracing::warn!(
        target: "strategy",
        module = %c.module,
        request = %c.request_id,
        resource = %format_args!("{}.{}", c.resource.plural, c.resource.group),
        depth = s.depth,
        max_depth = s.max_depth,
        reason = reason.label(),
        "{message}"
    );
    s.metrics.module(&c.module).record_apply_refused(reason);
    HasError::error(message)
}
