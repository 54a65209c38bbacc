//! One call session: a fresh instance (from the module's `InstancePre`) in a store with the call's
//! limits, serving every step of one registry phase, then dropped.

use prost::Message;
use wasmtime::{Instance, InstancePre, Memory, Store, Trap, TypedFunc};

use super::abi;
use super::engine::Runtime;
use super::error::{CallFailure, FailureKind};
use super::host_functions::{CallState, CallerInfo};
use super::limits::{CallLimits, Deadline};
use super::manifest::Grants;

/// Options of one session.
pub(crate) struct SessionOptions {
    pub(crate) caller: CallerInfo,
    pub(crate) in_after_hook: bool,
    pub(crate) depth: u32,
}

/// A live instance with its exports.
pub(crate) struct Session {
    store: Store<CallState>,
    memory: Memory,
    alloc: TypedFunc<i32, i32>,
    dealloc: TypedFunc<(i32, i32), ()>,
    manifest: TypedFunc<(), i64>,
    call: TypedFunc<(i32, i32), i64>,
}

impl Session {
    /// Instantiates the pre-linked module `pre` (whose manifest grants `grants`) with the
    /// runtime's limits.
    pub(crate) fn new(
        runtime: &Runtime,
        pre: &InstancePre<CallState>,
        grants: Grants,
        opts: SessionOptions,
    ) -> Result<Self, CallFailure> {
        let rt = &runtime.inner;
        let deadline = Deadline::after(rt.config.call_deadline);
        let state = CallState {
            limits: CallLimits::new(rt.config.memory_limit),
            deadline,
            caller: opts.caller,
            grants,
            in_after_hook: opts.in_after_hook,
            depth: opts.depth,
            max_depth: rt.config.max_apply_depth,
            output_limit: rt.config.output_limit,
            logs_left: rt.config.max_log_lines_per_call,
            host_api: rt.host_api.load_full().as_ref().clone(),
            metrics: rt.metrics.clone(),
        };
        let mut store = Store::new(&rt.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(deadline.ticks());
        store.epoch_deadline_trap();
        let instance = pre
            .instantiate(&mut store)
            .map_err(|e| classify(&store, e, "instantiation"))?;
        let exports = Exports::of(&mut store, &instance)
            .map_err(|e| CallFailure::new(FailureKind::BadOutput, format!("{e:#}")))?;
        Ok(Self {
            store,
            memory: exports.0,
            alloc: exports.1,
            dealloc: exports.2,
            manifest: exports.3,
            call: exports.4,
        })
    }

    /// Calls the `manifest` export.
    pub(crate) fn manifest(&mut self) -> Result<Vec<u8>, CallFailure> {
        let packed = self
            .manifest
            .call(&mut self.store, ())
            .map_err(|e| classify(&self.store, e, "manifest"))?;
        self.take_output(packed)
    }

    /// Sends one request to the `call` entry point and decodes the response.
    pub(crate) fn call(&mut self, request: &abi::Request) -> Result<abi::Response, CallFailure> {
        let bytes = request.encode_to_vec();
        let ptr = self
            .alloc
            .call(&mut self.store, bytes.len() as i32)
            .map_err(|e| classify(&self.store, e, "alloc"))?;
        self.memory
            .write(&mut self.store, ptr as u32 as usize, &bytes)
            .map_err(|_| {
                CallFailure::new(
                    FailureKind::BadOutput,
                    "alloc returned a buffer outside linear memory",
                )
            })?;
        let packed = self
            .call
            .call(&mut self.store, (ptr, bytes.len() as i32))
            .map_err(|e| classify(&self.store, e, "call"))?;
        let out = self.take_output(packed)?;
        abi::Response::decode(out.as_slice()).map_err(|e| {
            CallFailure::new(
                FailureKind::BadOutput,
                format!("the response did not decode: {e}"),
            )
        })
    }

    /// Copies a packed output buffer out of linear memory (within the output cap) and frees it.
    fn take_output(&mut self, packed: i64) -> Result<Vec<u8>, CallFailure> {
        let (ptr, len) = abi::unpack(packed);
        let limit = self.store.data().output_limit;
        if len as usize > limit {
            return Err(CallFailure::new(
                FailureKind::OutputTooLarge,
                format!("the response of {len} bytes exceeds the output cap of {limit} bytes"),
            ));
        }
        let data = self.memory.data(&self.store);
        let out = data
            .get(ptr as usize..ptr as usize + len as usize)
            .ok_or_else(|| {
                CallFailure::new(
                    FailureKind::BadOutput,
                    "the response points outside linear memory",
                )
            })?
            .to_vec();
        self.dealloc
            .call(&mut self.store, (ptr as i32, len as i32))
            .map_err(|e| classify(&self.store, e, "dealloc"))?;
        Ok(out)
    }
}

type ExportSet = (
    Memory,
    TypedFunc<i32, i32>,
    TypedFunc<(i32, i32), ()>,
    TypedFunc<(), i64>,
    TypedFunc<(i32, i32), i64>,
);

struct Exports;

impl Exports {
    fn of(store: &mut Store<CallState>, instance: &Instance) -> wasmtime::Result<ExportSet> {
        let memory = instance
            .get_memory(&mut *store, "memory")
            .ok_or_else(|| wasmtime::format_err!("no memory export"))?;
        Ok((
            memory,
            instance.get_typed_func(&mut *store, "alloc")?,
            instance.get_typed_func(&mut *store, "dealloc")?,
            instance.get_typed_func(&mut *store, "manifest")?,
            instance.get_typed_func(&mut *store, "call")?,
        ))
    }
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
