//! The server's strategy modules: the module table on its wasm runtime, the resolver that
//! stands natives in for modules, and the sources loaded at start-up — the built-in kinds'
//! module, `--strategy-dir` (while the server listens) and `StrategyModule` objects.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use crate::config::Config;
use crate::registry::Registry;
use crate::strategy::{Strategy, StrategyResolver};
use crate::wasm::sources::pull::{PullConfig, Puller};
use crate::wasm::sources::{builtin_modules, declared_resources, object_source, DirectoryWatcher};
use crate::wasm::{ModuleTable, RegistryHostApi, Runtime, RuntimeConfig};

/// How long startup waits for the first list of definitions before loading modules.
const DEFINITIONS_SYNC_WAIT: Duration = Duration::from_secs(10);

/// How long the end of startup waits for the resources the strategy directory's modules declare
/// to be served.
const DECLARED_RESOURCES_WAIT: Duration = Duration::from_secs(10);

/// Native strategies by (group, kind), standing in for modules: the baseline wasm strategies
/// are measured against.
pub type NativeStrategies = HashMap<(String, String), Arc<dyn Strategy>>;

/// Resolves to a native strategy where one is given, else to the module table.
struct WithNatives {
    natives: NativeStrategies,
    modules: Arc<ModuleTable>,
}

impl StrategyResolver for WithNatives {
    fn strategy(&self, group: &str, kind: &str) -> Arc<dyn Strategy> {
        match self.natives.get(&(group.to_owned(), kind.to_owned())) {
            Some(s) => s.clone(),
            None => self.modules.strategy(group, kind),
        }
    }
}

/// The module table on a wasm runtime configured by `config` (the runtime always runs:
/// `StrategyModule` objects load modules with or without a directory).
pub(super) fn module_table(config: &Config) -> anyhow::Result<Arc<ModuleTable>> {
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: config.module_cache(),
        real_clock: config.wasm_real_clock,
        tiered_compilation: config.tiered_compilation,
        ..RuntimeConfig::default()
    })
    .context("starting the wasm runtime")?;
    Ok(Arc::new(ModuleTable::new(runtime)))
}

/// What the registry asks for strategies: the module table, with `natives` in place of modules
/// for their resources.
pub(super) fn resolver(
    modules: &Arc<ModuleTable>,
    natives: NativeStrategies,
) -> Arc<dyn StrategyResolver> {
    if natives.is_empty() {
        return modules.clone();
    }
    Arc::new(WithNatives {
        natives,
        modules: modules.clone(),
    })
}

/// Gives the modules their host functions and follows the definitions, then loads the
/// built-in kinds' module, the strategy directory (in the background: until it has loaded,
/// /readyz says what is compiling and resource requests answer 503) and `StrategyModule`
/// objects. Answers the directory's watcher (held until the server stops) and the puller.
///
/// # Errors
/// The built-in module does not load; the strategy directory cannot be read; a registry CA
/// cannot be read.
pub(super) async fn load(
    config: &Config,
    modules: &Arc<ModuleTable>,
    registry: &Arc<Registry>,
) -> anyhow::Result<(
    Option<tokio::task::JoinHandle<Option<DirectoryWatcher>>>,
    Arc<Puller>,
)> {
    // Strategies' get/list/apply host functions go through the registry.
    modules
        .runtime()
        .set_host_api(Arc::new(RegistryHostApi::new(registry)));
    registry.start();
    // Manifests are checked against the served definitions, so let the first list land first.
    if !registry.wait_synced(DEFINITIONS_SYNC_WAIT).await {
        tracing::warn!(
            "resource definitions not listed yet; modules load unchecked until they are"
        );
    }
    declared_resources::start(modules, registry);
    let table = modules.clone();
    tokio::task::spawn_blocking(move || builtin_modules::load(&table))
        .await?
        .context("loading the built-in kinds' module")?;
    let watcher = match &config.strategy_dir {
        Some(dir) => {
            std::fs::read_dir(dir)
                .with_context(|| format!("reading the strategy directory {}", dir.display()))?;
            modules.set_starting(true);
            let (table, dir, served) = (modules.clone(), dir.clone(), registry.clone());
            Some(tokio::task::spawn_blocking(move || {
                let watcher = DirectoryWatcher::start(table.clone(), dir.clone());
                wait_for_declared_resources(&table, &served, DECLARED_RESOURCES_WAIT);
                table.set_starting(false);
                tracing::info!(dir = %dir.display(), "strategy directory loaded: resource requests are served");
                watcher
                    .inspect_err(|e| {
                        tracing::error!(dir = %dir.display(), "cannot watch the strategy directory: {e}")
                    })
                    .ok()
            }))
        }
        None => None,
    };
    let puller = Arc::new(Puller::new(pull_config(config)?));
    object_source::start(modules.clone(), registry, puller.clone());
    Ok((watcher, puller))
}

/// Waits (at most `limit`) until every resource the active modules serve is served by the
/// registry: a module's declared definition is created a moment after the module loads, and a
/// request in between would find no such resource.
fn wait_for_declared_resources(table: &ModuleTable, registry: &Registry, limit: Duration) {
    let deadline = std::time::Instant::now() + limit;
    let declared: Vec<_> = table
        .statuses()
        .into_iter()
        .filter(|s| s.state == crate::wasm::ModuleState::Active)
        .flat_map(|s| s.resources)
        .collect();
    while std::time::Instant::now() < deadline
        && !declared
            .iter()
            .all(|r| registry.resolve(&r.group, &r.version, &r.plural).is_some())
    {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How `StrategyModule` URLs are pulled: `--insecure-registry`, `--registry-ca` (read now), the
/// runtime's module size limit, and where pulled modules are kept.
fn pull_config(config: &Config) -> anyhow::Result<PullConfig> {
    let mut registry_cas = std::collections::BTreeMap::new();
    for ca in &config.registry_cas {
        let pem = std::fs::read(&ca.file)
            .with_context(|| format!("--registry-ca {}={}", ca.host, ca.file.display()))?;
        registry_cas.insert(ca.host.clone(), pem);
    }
    Ok(PullConfig {
        store_dir: Some(config.pulled_modules_dir()),
        insecure_registries: config.insecure_registries.clone(),
        registry_cas,
        max_module_bytes: RuntimeConfig::default().module_size_limit,
        ..PullConfig::default()
    })
}
