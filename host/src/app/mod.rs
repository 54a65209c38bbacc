//! The server the `strategy-host` binary runs, assembled from its command line: the store,
//! the wasm runtime with its module sources (`--strategy-dir` and `StrategyModule` objects),
//! the registry (built-in resources, CustomResourceDefinitions followed by a watch, the
//! `default` namespace), TLS, authentication and authorization (`security.rs`), and HTTPS until
//! SIGTERM or SIGINT.

mod security;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};

use crate::api::flowcontrol::FlowControl;
use crate::api::metrics::ServerMetrics;
use crate::api::server::{serve, ConnectionLimits, REQUEST_TIMEOUT};
use crate::api::state::AppState;
use crate::config::{Config, StoreChoice};
use crate::controllers::metrics::ControllerMetrics;
use crate::controllers::ControllerSet;
use crate::registry::client::Client;
use crate::registry::namespace_lifecycle::SYSTEM_NAMESPACES;
use crate::registry::Registry;
use crate::storage::embedded::EmbeddedStore;
use crate::storage::etcd3::Etcd3Store;
use crate::storage::instrumented::{Instrumented, StorageMetrics};
use crate::storage::Storage;
use crate::strategy::{Strategy, StrategyResolver};
use crate::wasm::sources::module_object;
use crate::wasm::sources::pull::{PullConfig, Puller};
use crate::wasm::sources::{builtin_modules, declared_resources, object_source, DirectoryWatcher};
use crate::wasm::{ModuleTable, RegistryHostApi, Runtime, RuntimeConfig};

/// How long startup waits for the first list of definitions before loading modules.
const DEFINITIONS_SYNC_WAIT: Duration = Duration::from_secs(10);

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

/// Runs the server `config` describes until SIGTERM or SIGINT; `natives` replace the module
/// table for their resources (empty for the real binary).
///
/// # Errors
/// The store cannot be opened or reached, the runtime cannot start, the strategy directory
/// cannot be watched, or the address cannot be bound.
pub async fn run(config: Config, natives: NativeStrategies) -> anyhow::Result<()> {
    let encryption = config.encryption()?;
    if let Some(encryption) = &encryption {
        tracing::info!("encryption at rest on, as --encryption-provider-config says");
        encryption.spawn_reloader();
    }
    let storage: Arc<dyn Storage> = match config.store() {
        StoreChoice::Embedded(mut c) => {
            c.encryption = encryption.clone();
            let dir = c.data_dir.display().to_string();
            let store = EmbeddedStore::open(c)
                .await
                .with_context(|| format!("opening the embedded store in {dir}"))?;
            tracing::info!(data_dir = %dir, "serving from the embedded store");
            Arc::new(store)
        }
        StoreChoice::Etcd3(mut c) => {
            c.encryption = encryption.clone();
            let endpoints = c.endpoints.join(",");
            let store = Etcd3Store::connect(c)
                .await
                .with_context(|| format!("connecting to etcd at {endpoints}"))?;
            tracing::info!(%endpoints, "serving from etcd");
            Arc::new(store)
        }
    };
    // Every storage call is timed (etcd_request_duration_seconds), below the caches.
    let storage_metrics = StorageMetrics::default();
    let storage: Arc<dyn Storage> = Arc::new(Instrumented::new(storage, storage_metrics.clone()));
    // The runtime always runs: `StrategyModule` objects load modules with or without a directory.
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: config.module_cache(),
        real_clock: config.wasm_real_clock,
        tiered_compilation: config.tiered_compilation,
        ..RuntimeConfig::default()
    })
    .context("starting the wasm runtime")?;
    let modules = Arc::new(ModuleTable::new(runtime));
    let resolver: Arc<dyn StrategyResolver> = if natives.is_empty() {
        modules.clone()
    } else {
        Arc::new(WithNatives {
            natives,
            modules: modules.clone(),
        })
    };
    let registry = Registry::new(storage.clone(), resolver);
    registry.serve_builtin(
        module_object::definition(),
        Arc::new(module_object::STRATEGY),
    );
    registry.serve_services(
        config.service_cluster_ip_range,
        config.service_node_port_range,
    );
    // Strategies' get/list/apply host functions go through the registry.
    modules
        .runtime()
        .set_host_api(Arc::new(RegistryHostApi::new(&registry)));
    registry.start();
    // Manifests are checked against the served definitions, so let the first list land first.
    if !registry.wait_synced(DEFINITIONS_SYNC_WAIT).await {
        tracing::warn!(
            "resource definitions not listed yet; modules load unchecked until they are"
        );
    }
    declared_resources::start(&modules, &registry);
    let table = modules.clone();
    tokio::task::spawn_blocking(move || builtin_modules::load(&table))
        .await?
        .context("loading the built-in kinds' module")?;
    // The strategy directory loads while the server listens (a Go module takes seconds to
    // compile): until it has, /readyz says what is compiling and resource requests answer 503.
    // The handle holds the watcher until the server stops.
    let _strategy_watcher = match &config.strategy_dir {
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
    let puller = Arc::new(Puller::new(pull_config(&config)?));
    object_source::start(modules.clone(), &registry, puller.clone());
    ensure_system_namespaces(&registry).await;
    let controllers = ControllerSet::parse(&config.controllers)?;
    let chain = Arc::new(crate::authorization::Deferred::default());
    let rbac = security::start_rbac(&config, &registry, &chain).await;
    crate::controllers::flowcontrol_bootstrap::ensure_configuration(&registry).await;
    let secured = security::secure(&config, &registry, rbac, &chain, modules.clone())?;
    // Built-in admission (added by `secure`) runs before the webhooks, as in Kubernetes.
    let webhook_metrics = crate::admission::webhook::metrics::WebhookMetrics::default();
    let (mutating, validating) = crate::admission::webhook::start(&registry, &webhook_metrics);
    // Kubernetes' order within each phase: policies (CEL, then modules), then webhooks.
    let policy_modules =
        crate::admission::wasm_policy::WasmPolicies::new(modules.clone(), &registry);
    registry
        .admission()
        .add_mutating(crate::admission::mutating_policy::start(&registry));
    registry.admission().add_mutating(policy_modules.clone());
    registry.admission().add_mutating(mutating);
    registry
        .admission()
        .add(crate::admission::policy::start(&registry));
    registry.admission().add(policy_modules.clone());
    registry.admission().add(validating);
    // Quota last, as in Kubernetes: a write is charged only once everything else admitted it.
    if let Some(quota) = crate::admission::resource_quota::start(&registry) {
        registry.admission().add(quota);
    }
    let controller_metrics = ControllerMetrics::default();
    let front_proxy = secured.front_proxy.clone();
    let authentication_trust = match (&front_proxy, &secured.pki) {
        (Some(front_proxy), Some(pki)) => {
            Some(front_proxy.extension_apiserver_authentication(&pki.client_ca_pem))
        }
        _ => None,
    };
    // Extension API servers are shown the front proxy's client certificate.
    let aggregation = crate::registry::aggregation::Aggregation::start(
        &registry,
        front_proxy
            .as_ref()
            .map(|f| crate::registry::webhook::ClientCertificate {
                certificate: f.client_cert_pem.clone().into_bytes(),
                key: f.client_key_pem.clone().into_bytes(),
            }),
    );
    // Bound before the controllers start: the `kubernetes` Service names the bound address.
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    let bound = listener.local_addr()?;
    let parts = crate::controllers::Parts {
        authentication_trust,
        kubernetes_service: Some(crate::controllers::kubernetes_service::KubernetesService {
            cluster_ip: config.service_cluster_ip_range.first(),
            listen: bound,
        }),
        aggregation: Some(aggregation.clone()),
        metrics: controller_metrics.clone(),
        signer: Some(Arc::new(security::SecretTokens {
            tokens: secured.tokens.clone(),
            ca_bundle: secured.pki.as_ref().map(|p| p.serving_ca_pem.clone()),
        })),
        event_ttl: config.event_ttl,
        root_ca: secured.pki.as_ref().map(|p| p.serving_ca_pem.clone()),
    };
    let controllers = crate::controllers::run(&registry, controllers, config.election(), parts);
    let auditor = crate::api::audit::Auditor::from_flags(
        config.security.audit_log_path.as_deref(),
        config.security.audit_policy_file.as_deref(),
        &config.security.audit_level,
        crate::api::audit::LogRotation::from_flags(
            config.security.audit_log_maxsize,
            config.security.audit_log_maxbackup,
            config.security.audit_log_maxage,
            config.security.audit_log_compress,
        ),
    )
    .context("opening the audit log")?;
    security::announce(&config, secured.pki.as_ref(), bound)?;
    let issuer_discovery = security::issuer_discovery(&config, &secured, bound);
    let scheme = if secured.tls.is_some() {
        "https"
    } else {
        "http"
    };
    tracing::info!(address = %bound, %scheme, "strategy-host listening");
    let mut metrics = ServerMetrics::new(
        &registry,
        &storage_metrics,
        &modules,
        auditor.as_ref().map(|a| a.metrics()),
    );
    metrics.register_with(|m| {
        if let Some(jwt) = &secured.jwt {
            jwt.register(m);
        }
        if let Some(authorization) = &secured.structured_authorizer {
            authorization.register(m);
        }
        if let Some(encryption) = &encryption {
            encryption.register(m);
        }
        controller_metrics.register(m);
        webhook_metrics.register(m);
        policy_modules.register(m);
        puller.metrics().register(m);
        crate::allocator::register(m);
    });
    let state = AppState::new(
        storage,
        registry,
        secured.security,
        metrics,
        config.max_request_body_bytes,
        FlowControl::new(
            u32::try_from(config.max_requests_inflight + config.max_mutating_requests_inflight)
                .unwrap_or(u32::MAX),
            config.max_requests_inflight,
            // A request waits in its queue at most a quarter of its timeout, as kube-apiserver.
            REQUEST_TIMEOUT / 4,
        ),
    )
    .with_modules(modules)
    .with_tokens(secured.tokens)
    .with_issuer_discovery(issuer_discovery)
    .with_audit(auditor)
    .with_reviews(secured.reviews)
    .with_encryption(encryption)
    .with_aggregation(aggregation);
    // API priority and fairness is configured by its objects from here on.
    state.flow_control.follow(&state.registry);
    serve(
        listener,
        secured.tls,
        state,
        ConnectionLimits {
            read_header_timeout: config.read_header_timeout,
            http2_max_streams: config.http2_max_streams(),
            idle_timeout: config.idle_connection_timeout,
        },
        shutdown_signal()?,
    )
    .await?;
    controllers.abort();
    tracing::info!("stopped");
    Ok(())
}

/// Creates the system namespaces (`default`, `kube-system`, `kube-public`) where missing, as
/// kube-apiserver does, so kubectl's default namespace works. A failure (the store is down) is
/// logged; the server starts anyway.
async fn ensure_system_namespaces(registry: &Arc<Registry>) {
    let client = Client::new(registry, "strategy-host");
    for name in SYSTEM_NAMESPACES {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        match client.create("", "v1", "namespaces", None, obj).await {
            Ok(_) => tracing::info!(namespace = name, "created a system namespace"),
            Err(e) if e.is_already_exists() => {}
            Err(e) => {
                tracing::warn!(namespace = name, error = %e, "could not create a system namespace")
            }
        }
    }
}

/// Resolves on the first SIGTERM or SIGINT.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
    })
}

/// How long the end of startup waits for the resources the strategy directory's modules declare
/// to be served.
const DECLARED_RESOURCES_WAIT: Duration = Duration::from_secs(10);

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
