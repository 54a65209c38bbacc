//! The wasmtime engines (pooling allocator with kept-resident memories, epoch interruption,
//! fiber stacks for async entry points): Cranelift's, which every module ends up running, and
//! Winch's baseline one a new module first runs while Cranelift compiles it; their epoch ticker,
//! and the `Runtime` handle everything else shares.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, Linker, PoolingAllocationConfig, Strategy,
};

use super::epoch::EpochTicker;
use super::host_functions::{self, CallState, HostApi, NoHostApi};
use super::instance_pool::InstanceReuse;
use super::metrics::Metrics;
use super::module::Compiled;
use super::module_cache::ModuleCache;

/// Stack the guest's wasm frames may use.
const MAX_WASM_STACK: usize = 1 << 20;
/// Stack left on a call's fiber for host functions (tokio's default thread stack).
const HOST_STACK: usize = 2 << 20;

/// The runtime's limits and knobs.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Wall-clock budget of one call (one registry phase), time in host functions excluded.
    pub call_deadline: Duration,
    /// Linear-memory cap per instance, in bytes.
    pub memory_limit: usize,
    /// Largest response a module may return, in bytes.
    pub output_limit: usize,
    /// Largest module accepted, in bytes.
    pub module_size_limit: usize,
    /// Instances that can exist at once (the pooling allocator's slots); a call beyond fails.
    pub max_instances: u32,
    /// Where compiled modules are cached (by content digest and engine hash); `None`: no cache.
    pub cache_dir: Option<PathBuf>,
    /// How deep `apply` from After hooks may nest.
    pub max_apply_depth: u32,
    /// Bytes of each pooled linear memory kept resident between instances (reset in place
    /// rather than returned to the OS), so instantiation takes no page faults.
    pub keep_resident: usize,
    /// Log lines one call may write; the rest are dropped.
    pub max_log_lines_per_call: u32,
    /// How a reactor module's instances are kept across calls.
    pub instance_reuse: InstanceReuse,
    /// Grant time: the WASI clocks of modules that import them (Go's) read the host's wall and
    /// monotonic clocks instead of a virtual clock starting at the epoch. Sleeps still return at
    /// once, moving the module's clocks forward.
    pub real_clock: bool,
    /// Tiered compilation: a module with no optimized code in the cache serves first from
    /// Winch's baseline code (a second for Go's largest, where Cranelift takes several), while
    /// Cranelift compiles it in the background; its optimized code then takes over (the
    /// default). Off: every load waits for Cranelift.
    pub tiered_compilation: bool,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            call_deadline: Duration::from_millis(100),
            memory_limit: 64 << 20,
            output_limit: 4 << 20,
            module_size_limit: 16 << 20,
            max_instances: 256,
            cache_dir: None,
            max_apply_depth: 3,
            keep_resident: 4 << 20,
            max_log_lines_per_call: 100,
            instance_reuse: InstanceReuse::default(),
            real_clock: false,
            tiered_compilation: true,
        }
    }
}

/// The strategy runtime: engine, linker with the host functions, compilation cache, metrics.
/// Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

pub(crate) struct RuntimeInner {
    /// Cranelift's engine: the optimized code every module ends up running.
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<CallState>,
    /// Winch's engine and linker, for a module's first, quickly compiled code (`None`: tiered
    /// compilation is off).
    pub(crate) baseline: Option<(Engine, Linker<CallState>)>,
    /// Modules whose optimized code is being compiled, by digest: the code cells of every
    /// loaded copy waiting for it (one compilation serves them all).
    pub(crate) optimizing: Mutex<HashMap<String, Vec<Weak<ArcSwap<Compiled>>>>>,
    pub(crate) config: RuntimeConfig,
    pub(crate) cache: ModuleCache,
    /// Shared with every call's state, so host functions can count what they refuse.
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) host_api: ArcSwap<Arc<dyn HostApi>>,
    /// Whether the embedder installed its host API (false until `set_host_api`).
    host_api_installed: tokio::sync::watch::Sender<bool>,
    /// Advances the epoch while sessions run.
    pub(crate) ticker: Arc<EpochTicker>,
    /// Idle kept instances of all reactor modules (bounded by `InstanceReuse::max_idle_total`).
    pub(crate) idle_instances: Arc<AtomicUsize>,
}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        self.ticker.stop();
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl Runtime {
    /// Builds the engine and starts its epoch ticker.
    ///
    /// # Errors
    ///
    /// The engine configuration is refused (e.g. the pool cannot be reserved), or the cache
    /// directory cannot be created.
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        let engine = engine_of(&config, Strategy::Cranelift)?;
        let linker = host_functions::linker(&engine).map_err(|e| anyhow::anyhow!("{e:#}"))?;
        let baseline = match config.tiered_compilation {
            true => {
                let engine = engine_of(&config, Strategy::Winch)?;
                let linker =
                    host_functions::linker(&engine).map_err(|e| anyhow::anyhow!("{e:#}"))?;
                Some((engine, linker))
            }
            false => None,
        };
        let cache = ModuleCache::new(config.cache_dir.clone(), &engine)?;
        let mut engines = vec![engine.clone()];
        engines.extend(baseline.iter().map(|(engine, _)| engine.clone()));
        let ticker = EpochTicker::start(engines)?;

        let no_host: Arc<dyn HostApi> = Arc::new(NoHostApi);
        Ok(Self {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                baseline,
                optimizing: Mutex::default(),
                config,
                cache,
                metrics: Arc::default(),
                host_api: ArcSwap::from_pointee(no_host),
                host_api_installed: tokio::sync::watch::Sender::new(false),
                ticker,
                idle_instances: Arc::default(),
            }),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Per-module call and failure counters.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Installs what `get`, `list` and `apply` reach (the registry supplies it once it exists;
    /// until then those host functions answer with an error).
    pub fn set_host_api(&self, api: Arc<dyn HostApi>) {
        self.inner.host_api.store(Arc::new(api));
        self.inner.host_api_installed.send_replace(true);
    }

    /// The host API once the embedder installed it (at once if it did already).
    pub async fn installed_host_api(&self) -> Arc<dyn HostApi> {
        let mut installed = self.inner.host_api_installed.subscribe();
        // The sender lives as long as the runtime, which `self` holds.
        let _ = installed.wait_for(|installed| *installed).await;
        self.host_api()
    }

    /// What `get`, `list` and `apply` reach now (e.g. for the host's own reads on a module's
    /// behalf, such as a staged version's replay over stored objects).
    pub fn host_api(&self) -> Arc<dyn HostApi> {
        self.inner.host_api.load_full().as_ref().clone()
    }
}

/// An engine compiling with `compiler`, with the runtime's pool, limits and interruption.
fn engine_of(config: &RuntimeConfig, compiler: Strategy) -> anyhow::Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_core_instances(config.max_instances)
        .total_memories(config.max_instances)
        .total_tables(config.max_instances)
        // Every session runs on a fiber stack (async entry points, see `placement`), one per
        // live instance.
        .total_stacks(config.max_instances)
        .max_memories_per_module(1)
        .max_tables_per_module(4)
        // Go modules have thousands of functions (a VMContext past the default 1 MiB) and
        // function tables of tens of thousands of entries (the default allows 20,000); both
        // are upper bounds, reserved but only touched as used. 100,000 matches the limiter's
        // cap on table growth.
        .max_core_instance_size(8 << 20)
        .table_elements(100_000)
        .max_memory_size(config.memory_limit)
        // Reset only the pages a call dirtied (PAGEMAP_SCAN, Linux 6.7+) with memset, and keep
        // them resident: the next instance in the slot takes no page faults.
        .linear_memory_keep_resident(config.keep_resident)
        .table_keep_resident(1 << 16)
        .pagemap_scan(Enabled::Auto);
    let mut wasm = Config::new();
    wasm.strategy(compiler)
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
        // Strategy modules have small data segments: copying them into a fresh instance is
        // cheaper than mapping a copy-on-write image and taking a write fault per page
        // (strategy_call bench: create-phase p50 68 µs → 39 µs, with the 4 MiB initial
        // memory; the SDK's arena allocator then took it to ~22 µs). Tables stay lazily
        // initialised (a call touches few of their entries) and resident (no refault).
        .memory_init_cow(false)
        .table_lazy_init(true)
        .max_wasm_stack(MAX_WASM_STACK)
        // Host functions run on the fiber's stack beyond the guest's share: give them what a
        // tokio blocking thread has (an `apply` nests a whole registry write in there).
        .async_stack_size(MAX_WASM_STACK + HOST_STACK)
        .parallel_compilation(true);
    // For profiling guests with `perf`: compiled functions named in /tmp/perf-<pid>.map.
    if std::env::var_os("STRATEGY_HOST_WASM_PERFMAP").is_some() {
        wasm.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    Engine::new(&wasm).map_err(|e| anyhow::anyhow!("{e:#}"))
}
