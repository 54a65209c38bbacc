//! One call session: an instance (from the module's `InstancePre`) in a store with the call's
//! limits, serving one registry phase. A module's instance serves one session and is dropped,
//! unless the module is a reactor (it exports `_initialize`, as Go's runtime does), whose
//! instances are initialised once and kept for further sessions (see `instance_pool`).
//!
//! Sessions are driven through wasmtime's async entry points (each guest call runs on a fiber)
//! so that a session started on an async worker can yield at its first epoch tick and be moved
//! to a blocking thread (see `placement`); elsewhere the same futures complete in one poll.

use std::time::Duration;

use prost::Message;
use wasmtime::{
    Instance, InstancePre, Memory, Store, StoreContextMut, Trap, TypedFunc, UpdateDeadline,
};

use super::abi;
use super::engine::Runtime;
use super::epoch::Ticking;
use super::error::{CallFailure, FailureKind};
use super::host_functions::{CallState, CallerInfo};
use super::limits::{CallLimits, Deadline};
use super::manifest::Grants;
use super::wasi::WasiState;

/// Options of one session.
pub struct SessionOptions {
    /// Who the call is made for (host functions act on their behalf).
    pub caller: CallerInfo,
    /// The call is an After hook (the only place `apply` is allowed).
    pub in_after_hook: bool,
    /// How many After-hook writes led to this call.
    pub depth: u32,
}

/// Epoch ticks a session started on an async worker may run there before it yields: between
/// one and two milliseconds, far beyond a normal call (~10 µs), so only a runaway guest (or a
/// stalled machine) leaves the worker.
const TICKS_ON_WORKER: u64 = 2;

/// The least time a reactor's `_initialize` is given.
const INIT_DEADLINE: Duration = Duration::from_secs(1);

/// A live instance with the exports every request uses (`manifest` is looked up when asked
/// for: only loading calls it, and each lookup costs a fraction of a microsecond).
pub(crate) struct Session {
    store: Store<CallState>,
    instance: Instance,
    memory: Memory,
    alloc: TypedFunc<i32, i32>,
    call: TypedFunc<(i32, i32), i64>,
    /// Sessions this instance has served.
    pub(crate) sessions: u32,
    /// Whether a call failed in this instance (a trap, an overrun): its state is not to be
    /// trusted again.
    pub(crate) failed: bool,
    /// Keeps the epoch ticking while the session serves (`None` while a kept instance idles).
    ticking: Option<Ticking>,
}

impl Session {
    /// Instantiates the pre-linked module `pre` (whose manifest grants `grants`) with the
    /// runtime's limits. `on_worker`: the session starts on an async worker, and yields once at
    /// its first epoch tick so that its driver can move it to a blocking thread (see
    /// `placement`); only for modules that import no host function but `log`, which never
    /// re-enters the guest (a yield inside a synchronous re-entry would be an error).
    pub(crate) async fn new(
        runtime: &Runtime,
        pre: &InstancePre<CallState>,
        grants: Grants,
        opts: SessionOptions,
        on_worker: bool,
    ) -> Result<Self, CallFailure> {
        let rt = &runtime.inner;
        let ticking = Some(rt.ticker.hold());
        // A reactor's `_initialize` (Go's runtime start) gets a budget of its own: it runs once
        // per instance, not per call.
        let init_budget = rt.config.call_deadline.max(INIT_DEADLINE);
        let state = CallState {
            limits: CallLimits::new(rt.config.memory_limit),
            deadline: Deadline::after(init_budget),
            caller: opts.caller,
            grants,
            in_after_hook: opts.in_after_hook,
            on_worker,
            depth: opts.depth,
            max_depth: rt.config.max_apply_depth,
            output_limit: rt.config.output_limit,
            logs_left: rt.config.max_log_lines_per_call,
            host_api: rt.host_api.load_full().as_ref().clone(),
            metrics: rt.metrics.clone(),
            wasi: WasiState::new(rt.config.real_clock),
        };
        // The engine of the tier that compiled `pre`.
        let mut store = Store::new(pre.module().engine(), state);
        store.limiter(|s| &mut s.limits);
        store.epoch_deadline_callback(on_epoch_deadline);
        set_epoch_deadline(&mut store);
        let instance = pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| classify(&store, e, "instantiation"))?;
        let exports = |store: &mut Store<CallState>| -> wasmtime::Result<_> {
            let memory = instance
                .get_memory(&mut *store, "memory")
                .ok_or_else(|| wasmtime::format_err!("no memory export"))?;
            let alloc = instance.get_typed_func(&mut *store, "alloc")?;
            let call = instance.get_typed_func(&mut *store, "call")?;
            Ok((memory, alloc, call))
        };
        let (memory, alloc, call) = exports(&mut store).map_err(bad_export)?;
        if let Some(initialize) = instance.get_func(&mut store, "_initialize") {
            let initialize = initialize.typed::<(), ()>(&store).map_err(bad_export)?;
            initialize
                .call_async(&mut store, ())
                .await
                .map_err(|e| classify(&store, e, "_initialize"))?;
        }
        let mut session = Self {
            store,
            instance,
            memory,
            alloc,
            call,
            sessions: 1,
            failed: false,
            ticking,
        };
        session.restart_deadline(runtime);
        Ok(session)
    }

    /// Readies a kept instance for another session: its grants (the instance that read the
    /// manifest was started before they were known), caller, log budget, host API and deadline.
    pub(crate) fn begin(
        &mut self,
        runtime: &Runtime,
        grants: &Grants,
        opts: SessionOptions,
        on_worker: bool,
    ) {
        let rt = &runtime.inner;
        self.ticking = Some(rt.ticker.hold());
        self.sessions += 1;
        let state = self.store.data_mut();
        state.grants.clone_from(grants);
        state.caller = opts.caller;
        state.in_after_hook = opts.in_after_hook;
        state.depth = opts.depth;
        state.on_worker = on_worker;
        state.logs_left = rt.config.max_log_lines_per_call;
        state.host_api = rt.host_api.load_full().as_ref().clone();
        state.limits.hit_memory_limit = false;
        self.restart_deadline(runtime);
    }

    /// Lets the epoch ticker sleep while this kept instance idles in its pool.
    pub(crate) fn rest(&mut self) {
        self.ticking = None;
    }

    /// Gives the session the whole call deadline from now.
    fn restart_deadline(&mut self, runtime: &Runtime) {
        self.store.data_mut().deadline = Deadline::after(runtime.inner.config.call_deadline);
        set_epoch_deadline(&mut self.store);
    }

    /// The instance's linear memory size, in bytes.
    pub(crate) fn memory_size(&self) -> usize {
        self.memory.data_size(&self.store)
    }

    /// Calls the `manifest` export.
    pub(crate) async fn manifest(&mut self) -> Result<Vec<u8>, CallFailure> {
        let result = self.manifest_inner().await;
        self.failed |= result.is_err();
        result
    }

    async fn manifest_inner(&mut self) -> Result<Vec<u8>, CallFailure> {
        let manifest = self
            .instance
            .get_typed_func::<(), i64>(&mut self.store, "manifest")
            .map_err(bad_export)?;
        let packed = manifest
            .call_async(&mut self.store, ())
            .await
            .map_err(|e| classify(&self.store, e, "manifest"))?;
        self.output(packed).map(<[u8]>::to_vec)
    }

    /// Sends one request to the `call` entry point and decodes the response.
    pub(crate) async fn call(
        &mut self,
        request: &abi::Request,
    ) -> Result<abi::Response, CallFailure> {
        let result = self.call_inner(request).await;
        self.failed |= result.is_err();
        result
    }

    async fn call_inner(&mut self, request: &abi::Request) -> Result<abi::Response, CallFailure> {
        // Encoded straight into the guest's buffer, and decoded straight out of its answer: a
        // copy each way less than going through host vectors.
        let len = request.encoded_len();
        let ptr = self
            .alloc
            .call_async(&mut self.store, len as i32)
            .await
            .map_err(|e| classify(&self.store, e, "alloc"))?;
        let start = ptr as u32 as usize;
        let buffer = self
            .memory
            .data_mut(&mut self.store)
            .get_mut(start..start + len);
        let mut buffer = buffer.ok_or_else(|| {
            CallFailure::new(
                FailureKind::BadOutput,
                "alloc returned a buffer outside linear memory",
            )
        })?;
        request
            .encode(&mut buffer)
            .expect("the buffer has the encoded length");
        let packed = self
            .call
            .call_async(&mut self.store, (ptr, len as i32))
            .await
            .map_err(|e| classify(&self.store, e, "call"))?;
        abi::Response::decode(self.output(packed)?).map_err(|e| {
            CallFailure::new(
                FailureKind::BadOutput,
                format!("the response did not decode: {e}"),
            )
        })
    }

    /// A packed output buffer in linear memory (within the output cap). The buffer is not handed
    /// back with `dealloc`: a kept instance's module frees its answer at its next call (the Rust
    /// SDK, Go's), any other instance goes with its memory at the end of the session, and freeing
    /// here would cost a guest call per request.
    fn output(&self, packed: i64) -> Result<&[u8], CallFailure> {
        let (ptr, len) = abi::unpack(packed);
        let limit = self.store.data().output_limit;
        if len as usize > limit {
            return Err(CallFailure::new(
                FailureKind::OutputTooLarge,
                format!("the response of {len} bytes exceeds the output cap of {limit} bytes"),
            ));
        }
        let data = self.memory.data(&self.store);
        data.get(ptr as usize..ptr as usize + len as usize)
            .ok_or_else(|| {
                CallFailure::new(
                    FailureKind::BadOutput,
                    "the response points outside linear memory",
                )
            })
    }
}

/// Sets the store's epoch deadline from its call deadline (at most [`TICKS_ON_WORKER`] while the
/// session is on an async worker).
fn set_epoch_deadline(store: &mut Store<CallState>) {
    let state = store.data();
    let ticks = state.deadline.ticks();
    store.set_epoch_deadline(match state.on_worker {
        true => ticks.min(TICKS_ON_WORKER),
        false => ticks,
    });
}

/// An export the shape check at load vouched for is missing or mistyped.
fn bad_export(e: wasmtime::Error) -> CallFailure {
    CallFailure::new(FailureKind::BadOutput, format!("{e:#}"))
}

/// What a store does when the engine's epoch reaches its deadline: past the call's wall-clock
/// deadline the guest traps (`Trap::Interrupt`); on an async worker it yields, once, for its
/// driver to move it off the worker; otherwise it runs on until the deadline (which host
/// functions push back by the time spent in them).
fn on_epoch_deadline(
    mut store: StoreContextMut<'_, CallState>,
) -> wasmtime::Result<UpdateDeadline> {
    let state = store.data_mut();
    if state.deadline.passed() {
        return Ok(UpdateDeadline::Interrupt);
    }
    let ticks = state.deadline.ticks();
    Ok(match std::mem::take(&mut state.on_worker) {
        true => UpdateDeadline::Yield(ticks),
        false => UpdateDeadline::Continue(ticks),
    })
}

/// Names why a wasm call failed.
fn classify(store: &Store<CallState>, e: wasmtime::Error, what: &str) -> CallFailure {
    let state = store.data();
    if state.limits.hit_memory_limit {
        return CallFailure::new(
            FailureKind::Memory,
            format!(
                "{what} exceeded the memory cap of {} bytes",
                state.limits.memory_limit
            ),
        );
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => CallFailure::new(
            FailureKind::Deadline,
            format!(
                "{what} ran past its deadline of {:?}",
                state.deadline.budget
            ),
        ),
        Some(trap) => CallFailure::new(FailureKind::Trap, format!("{what} trapped: {trap}")),
        None if what == "instantiation" => {
            CallFailure::new(FailureKind::Host, format!("instantiation failed: {e:#}"))
        }
        None => CallFailure::new(FailureKind::Trap, format!("{what} failed: {e:#}")),
    }
}
