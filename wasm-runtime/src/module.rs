//! A strategy module ready to serve: compiled (or taken from the cache), shape-checked,
//! pre-linked as an `InstancePre`, and proven by one instantiation that reads its manifest. A
//! module first compiled by the baseline tier has its optimized code swapped in once Cranelift is
//! done with it.

use std::fmt;
use std::sync::{Arc, Weak};

use arc_swap::ArcSwap;
use sha2::{Digest, Sha256};
use wasmtime::{InstancePre, Linker};

use super::abi::{self, request::Operation as Op, Operation};
use super::engine::Runtime;
use super::error::{Error, Result};
use super::host_functions::{CallState, CallerInfo};
use super::instance::{Session, SessionOptions};
use super::instance_pool::InstancePool;
use super::manifest::{self, ModuleManifest};
use super::metrics::ModuleCounters;
use super::module_cache;
use super::placement;
use super::wasi;
use strategy_host_contract::strategy::ResourceInfo;

/// Which compiler made the code a module runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompilerTier {
    /// Winch's single-pass code: compiled in a fraction of Cranelift's time, slower to run.
    Baseline,
    /// Cranelift's optimized code.
    Optimized,
}

impl CompilerTier {
    /// The tier's name in logs and status (`baseline`, `optimized`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::Optimized => "optimized",
        }
    }
}

/// The module's code from one tier, pre-linked, with a reactor's kept instances of it.
pub(crate) struct Compiled {
    pre: InstancePre<CallState>,
    /// A reactor's kept instances (`None`: a fresh instance per session).
    pool: Option<InstancePool>,
    tier: CompilerTier,
}

impl Compiled {
    /// Checks `module`'s shape and links it (compiled by `linker`'s engine) with the host
    /// functions and the WASI refusals it needs.
    fn link(
        runtime: &Runtime,
        linker: &Linker<CallState>,
        module: &wasmtime::Module,
        tier: CompilerTier,
    ) -> Result<Self> {
        let link_error =
            |e: wasmtime::Error| Error::Compile(super::error::one_line(format_args!("{e:#}")));
        // WASI calls the shim does not implement answer an errno (defined per module, with the
        // module's own signatures).
        manifest::check_shape(module)?;
        let mut linker = linker.clone();
        wasi::define_refusals(&mut linker, module).map_err(link_error)?;
        let pre = linker.instantiate_pre(module).map_err(link_error)?;
        let reactor = module.get_export("_initialize").is_some();
        Ok(Self {
            pre,
            pool: reactor.then(|| InstancePool::new(runtime)),
            tier,
        })
    }
}

/// A loaded, checked strategy module.
pub struct StrategyModule {
    digest: String,
    manifest: ModuleManifest,
    /// The code in force: the baseline tier's until the optimized code replaces it.
    compiled: Arc<ArcSwap<Compiled>>,
    /// The module's counters (`None` while loading, before its name is known).
    counters: Option<Arc<ModuleCounters>>,
    allow_create_on_update: bool,
    allow_unconditional_update: bool,
}

impl fmt::Debug for StrategyModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StrategyModule")
            .field("name", &self.manifest.name)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

/// The SHA-256 of a module's bytes, in hex.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl StrategyModule {
    /// Compiles (or loads from the cache) and checks a module: its size, imports and exports, its
    /// manifest (ABI version, resources, operations, granted host functions), and one
    /// instantiation. Blocking (Cranelift may run): call it off the async workers.
    ///
    /// # Errors
    ///
    /// [`Error`] names the check the module failed.
    pub fn load(runtime: &Runtime, bytes: &[u8]) -> Result<Self> {
        Self::load_tiered(runtime, bytes, false)
    }

    /// As [`StrategyModule::load`], but the module runs its baseline code for good (never
    /// optimized, whatever the cache holds): for benchmarks comparing the tiers' call costs.
    /// Falls back to optimized code when tiered compilation is off.
    #[doc(hidden)]
    pub fn load_baseline(runtime: &Runtime, bytes: &[u8]) -> Result<Self> {
        Self::load_tiered(runtime, bytes, true)
    }

    fn load_tiered(runtime: &Runtime, bytes: &[u8], baseline_only: bool) -> Result<Self> {
        let rt = &runtime.inner;
        let limit = rt.config.module_size_limit;
        if bytes.len() > limit {
            return Err(Error::TooLarge {
                size: bytes.len(),
                limit,
            });
        }
        let digest = digest(bytes);
        let cached = match baseline_only {
            true => None,
            false => rt.cache.cached(&rt.engine, &digest),
        };
        let (module, compiled) = match cached {
            Some(module) => {
                let compiled =
                    Compiled::link(runtime, &rt.linker, &module, CompilerTier::Optimized)?;
                (module, compiled)
            }
            None => first_code(runtime, &digest, bytes)?,
        };
        let optimize = compiled.tier == CompilerTier::Baseline && !baseline_only;

        // Instantiate once: read the manifest and the constant answers, before anyone relies on it.
        let mut loaded = Self {
            digest,
            manifest: ModuleManifest::placeholder(),
            compiled: Arc::new(ArcSwap::from_pointee(compiled)),
            counters: None,
            allow_create_on_update: false,
            allow_unconditional_update: true,
        };
        let caller = CallerInfo {
            module: "(loading)".into(),
            request_id: String::new(),
            resource: ResourceInfo {
                group: String::new(),
                version: String::new(),
                kind: String::new(),
                plural: String::new(),
                namespaced: true,
            },
            dry_run: true,
        };
        let opts = SessionOptions {
            caller,
            in_after_hook: false,
            depth: 0,
        };
        let session = placement::block_here(loaded.session(runtime, opts, false));
        let (code, mut session) = session.map_err(Error::LoadCall)?;
        let raw = placement::block_here(session.manifest()).map_err(Error::LoadCall)?;
        let decoded = <abi::Manifest as prost::Message>::decode(raw.as_slice())
            .map_err(|e| Error::Manifest(format!("did not decode: {e}")))?;
        let manifest = ModuleManifest::from_abi(decoded)?;
        manifest.check_grants(&module)?;
        let mut ask = |op: Op| -> Result<bool> {
            let request = abi::Request {
                context: None,
                operation: Some(op),
            };
            let resp = placement::block_here(session.call(&request)).map_err(Error::LoadCall)?;
            if !resp.error.is_empty() {
                return Err(Error::Manifest(format!(
                    "module answered with an error: {}",
                    resp.error
                )));
            }
            Ok(resp.allowed)
        };
        if manifest.implements(Operation::AllowCreateOnUpdate) {
            loaded.allow_create_on_update = ask(Op::AllowCreateOnUpdate(Default::default()))?;
        }
        if manifest.implements(Operation::AllowUnconditionalUpdate) {
            loaded.allow_unconditional_update =
                ask(Op::AllowUnconditionalUpdate(Default::default()))?;
        }
        let counters = rt.metrics.module(&manifest.name);
        counters.record_instance_started();
        loaded.counters = Some(counters);
        loaded.manifest = manifest;
        // A reactor's first instance, initialised already, serves the first calls.
        loaded.end(runtime, &code, session);
        if optimize {
            optimize_later(runtime, &loaded.compiled, &loaded.digest, bytes);
        }
        Ok(loaded)
    }

    /// Which compiler made the code the module runs now.
    pub fn tier(&self) -> CompilerTier {
        self.compiled.load().tier
    }

    /// The module's name (from its manifest).
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The SHA-256 of the module's bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The module's series in `runtime`'s metrics (those of its name), resolved at load.
    pub fn counters(&self, runtime: &Runtime) -> Arc<ModuleCounters> {
        match &self.counters {
            Some(counters) => counters.clone(),
            None => runtime.inner.metrics.module(self.name()),
        }
    }

    /// The checked manifest.
    pub fn manifest(&self) -> &ModuleManifest {
        &self.manifest
    }

    /// The module's answer to allow_create_on_update (asked at load).
    pub fn allow_create_on_update(&self) -> bool {
        self.allow_create_on_update
    }

    /// The module's answer to allow_unconditional_update (asked at load).
    pub fn allow_unconditional_update(&self) -> bool {
        self.allow_unconditional_update
    }

    /// Sends one request to an instance of the module (fresh, or a reactor's kept one), on the
    /// calling thread (blocking for up to the call deadline). The registry path is
    /// `strategy_host::wasm::WasmStrategy`; this is for benchmarks and tools.
    ///
    /// # Errors
    ///
    /// The call trapped, overran, exceeded a cap or answered garbage.
    pub fn call(
        &self,
        runtime: &Runtime,
        caller: CallerInfo,
        request: &abi::Request,
    ) -> std::result::Result<abi::Response, super::CallFailure> {
        let opts = SessionOptions {
            caller,
            in_after_hook: false,
            depth: 0,
        };
        placement::block_here(async {
            let (code, mut session) = self.session(runtime, opts, false).await?;
            let response = session.call(request).await;
            self.end(runtime, &code, session);
            response
        })
    }

    /// Sends one request to an instance of the module (fresh, or a reactor's kept one) from an
    /// async task: started right here on the worker and moved to a blocking thread if it runs
    /// into its first epoch tick, or run on a blocking thread from the start when the module may
    /// block in a host function (see [`placement`]).
    pub async fn call_from_task(
        self: &Arc<Self>,
        runtime: &Runtime,
        opts: SessionOptions,
        request: abi::Request,
    ) -> std::result::Result<abi::Response, super::CallFailure> {
        let grants = &self.manifest.grants;
        let may_block = grants.get || grants.list || grants.apply;
        let (module, runtime) = (self.clone(), runtime.clone());
        let session = Box::pin(async move {
            let (code, mut session) = module.session(&runtime, opts, !may_block).await?;
            let response = session.call(&request).await;
            module.end(&runtime, &code, session);
            response
        });
        match may_block {
            true => placement::on_blocking_thread(session).await,
            false => placement::inline_first(session).await,
        }
    }

    /// An instance of the module's code in force with `runtime`'s limits, serving every step of
    /// one registry phase: a kept one of a reactor's, or a fresh one; `on_worker` as for
    /// `Session::new`. The code comes along, so the instance goes back to its own pool.
    async fn session(
        &self,
        runtime: &Runtime,
        opts: SessionOptions,
        on_worker: bool,
    ) -> std::result::Result<(Arc<Compiled>, Session), super::CallFailure> {
        let code = self.compiled.load_full();
        if let Some(mut kept) = code.pool.as_ref().and_then(InstancePool::take) {
            kept.begin(runtime, &self.manifest.grants, opts, on_worker);
            return Ok((code, kept));
        }
        let grants = self.manifest.grants.clone();
        let session = Session::new(runtime, &code.pre, grants, opts, on_worker).await;
        if let Some(counters) = &self.counters {
            counters.record_instance_started();
        }
        session.map(|session| (code, session))
    }

    /// Ends a session: a reactor's instance goes back to its pool (which may recycle it); any
    /// other, or one of code since replaced, is dropped.
    fn end(&self, runtime: &Runtime, code: &Arc<Compiled>, session: Session) {
        if !Arc::ptr_eq(code, &self.compiled.load()) {
            return;
        }
        if let (Some(pool), Some(counters)) = (&code.pool, &self.counters) {
            pool.give_back(runtime, counters, session);
        }
    }

    /// The linear memory of each of a reactor's idle instances, in bytes (empty for other
    /// modules, whose instances live for one call).
    pub fn idle_instance_memory(&self) -> Vec<usize> {
        self.compiled
            .load()
            .pool
            .as_ref()
            .map(InstancePool::idle_memory)
            .unwrap_or_default()
    }

    /// Whether the module is a reactor (exports `_initialize`), whose instances are kept across
    /// calls.
    pub fn is_reactor(&self) -> bool {
        self.compiled.load().pool.is_some()
    }
}

/// A module's first code, when the cache has none: the baseline tier's, which compiles in a
/// fraction of Cranelift's time, or (tiering off, or a module the baseline compiler cannot
/// take) Cranelift's, stored in the cache.
fn first_code(
    runtime: &Runtime,
    digest: &str,
    bytes: &[u8],
) -> Result<(wasmtime::Module, Compiled)> {
    let rt = &runtime.inner;
    if let Some((engine, linker)) = &rt.baseline {
        let tier = CompilerTier::Baseline;
        match module_cache::compile(engine, digest, bytes, tier.as_str()) {
            Ok(module) => {
                let compiled = Compiled::link(runtime, linker, &module, tier)?;
                return Ok((module, compiled));
            }
            Err(e) => {
                tracing::warn!(digest, error = %e, "the baseline compiler refused a module; compiling it optimized")
            }
        }
    }
    let module = rt.cache.compile(&rt.engine, digest, bytes)?;
    let compiled = Compiled::link(runtime, &rt.linker, &module, CompilerTier::Optimized)?;
    Ok((module, compiled))
}

/// Compiles the module optimized on a thread of its own (storing the code in the cache) and
/// swaps it in for the baseline code: calls in flight finish on the baseline code, later ones
/// start on the optimized code, and a reactor's kept baseline instances are dropped as they
/// come back. A failure leaves the baseline code serving.
fn optimize_later(
    runtime: &Runtime,
    compiled: &Arc<ArcSwap<Compiled>>,
    digest: &str,
    bytes: &[u8],
) {
    // One compilation per digest serves every loaded copy of the module.
    {
        let mut optimizing = runtime.inner.optimizing.lock().expect("optimizing lock");
        if let Some(waiting) = optimizing.get_mut(digest) {
            waiting.push(Arc::downgrade(compiled));
            return;
        }
        optimizing.insert(digest.to_string(), vec![Arc::downgrade(compiled)]);
    }
    let runtime = runtime.clone();
    let (digest, bytes) = (digest.to_string(), bytes.to_vec());
    let spawned = std::thread::Builder::new()
        .name("wasm-optimize".into())
        .spawn(move || {
            let rt = &runtime.inner;
            let module = rt.cache.compile(&rt.engine, &digest, &bytes);
            let waiting = rt
                .optimizing
                .lock()
                .expect("optimizing lock")
                .remove(&digest)
                .unwrap_or_default();
            let linked = |module: &wasmtime::Module| {
                Compiled::link(&runtime, &rt.linker, module, CompilerTier::Optimized)
            };
            let failed = |e: &super::Error| tracing::warn!(digest, error = %e, "optimizing a strategy module failed; its baseline code keeps serving");
            let module = match module {
                Ok(module) => module,
                Err(e) => return failed(&e),
            };
            for cell in waiting.iter().filter_map(Weak::upgrade) {
                match linked(&module) {
                    Ok(code) => cell.store(Arc::new(code)),
                    Err(e) => return failed(&e),
                }
            }
            tracing::info!(digest, "a strategy module now runs its optimized code");
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "could not start optimizing a strategy module; its baseline code keeps serving");
    }
}
