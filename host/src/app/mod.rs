//! The server the `strategy-host` binary runs, assembled from its command line: the store,
//! the wasm runtime with its module sources (`--strategy-dir` and `StrategyModule` objects),
//! the registry (built-in resources, CustomResourceDefinitions followed by a watch, the
//! `default` namespace), TLS, authentication and authorization (`security.rs`), and HTTPS until
//! SIGTERM or SIGINT.

mod modules;
mod security;

use std::sync::Arc;

use anyhow::Context as _;
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};

use crate::admission::wasm_policy::WasmPolicies;
use crate::admission::webhook::metrics::WebhookMetrics;
use crate::api::audit::{Auditor, LogRotation};
use crate::api::flowcontrol::FlowControl;
use crate::api::metrics::ServerMetrics;
use crate::api::server::{serve, ConnectionLimits, REQUEST_TIMEOUT};
use crate::api::state::AppState;
use crate::authorization::owner_references::OwnerReferencesPermissionEnforcement;
use crate::authorization::rbac::RbacAuthorizer;
use crate::config::{Config, StoreChoice};
use crate::controllers::metrics::ControllerMetrics;
use crate::controllers::ControllerSet;
use crate::registry::admission::{MutatingAdmission, ValidatingAdmission};
use crate::registry::aggregation::Aggregation;
use crate::registry::client::Client;
use crate::registry::kinds::{Core, ModuleKinds, Services};
use crate::registry::namespace_lifecycle::SYSTEM_NAMESPACES;
use crate::registry::Registry;
use crate::storage::embedded::EmbeddedStore;
use crate::storage::encryption::EncryptionConfig;
use crate::storage::etcd3::Etcd3Store;
use crate::storage::instrumented::{Instrumented, StorageMetrics};
use crate::storage::Storage;
use crate::wasm::sources::module_object;
use crate::wasm::ModuleTable;
pub use modules::NativeStrategies;
use security::Secured;

/// Runs the server `config` describes until SIGTERM or SIGINT; `natives` replace the module
/// table for their resources (empty for the real binary).
///
/// # Errors
/// The store cannot be opened or reached, the runtime cannot start, the strategy directory
/// cannot be watched, or the address cannot be bound.
pub async fn run(config: Config, natives: NativeStrategies) -> anyhow::Result<()> {
    let encryption = config.encryption()?;
    let (storage, storage_metrics) = open_store(&config, encryption.as_ref()).await?;
    let modules = modules::module_table(&config)?;
    let registry = Registry::new(storage.clone(), modules::resolver(&modules, natives));
    let chain = Arc::new(crate::authorization::Deferred::default());
    let rbac = Arc::new(RbacAuthorizer::default());
    // Every built-in kind, from its provider; the order is the order they are served in.
    registry.serve_kinds(&[
        &Core,
        &ModuleKinds,
        &module_object::Kinds,
        &Services {
            cluster_ips: config.service_cluster_ip_range,
            node_ports: config.service_node_port_range,
        },
        &security::rbac_kinds(&config, &rbac, &chain),
    ]);
    let (_strategy_watcher, puller) = modules::load(&config, &modules, &registry).await?;
    ensure_system_namespaces(&registry).await;
    let controllers = ControllerSet::parse(&config.controllers)?;
    security::start_rbac(&registry, &rbac).await;
    crate::controllers::flowcontrol_bootstrap::ensure_configuration(&registry).await;
    let secured = security::secure(&config, &registry, rbac, &chain, modules.clone())?;
    let (webhook_metrics, policy_modules) = admission_chain(&registry, &modules, &secured);
    // Extension API servers are shown the front proxy's client certificate.
    let aggregation = Aggregation::start(&registry, secured.front_proxy_certificate());
    // Bound before the controllers start: the `kubernetes` Service names the bound address.
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listening on {}", config.listen))?;
    let bound = listener.local_addr()?;
    let controller_metrics = ControllerMetrics::default();
    let parts =
        security::controller_parts(&config, &secured, &aggregation, bound, &controller_metrics);
    let controllers = crate::controllers::run(&registry, controllers, config.election(), parts);
    let auditor = auditor(&config)?;
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
        secured.register(m);
        if let Some(encryption) = &encryption {
            encryption.register(m);
        }
        controller_metrics.register(m);
        webhook_metrics.register(m);
        policy_modules.register(m);
        puller.metrics().register(m);
        crate::allocator::register(m);
    });
    let flow_control = FlowControl::new(
        u32::try_from(config.max_requests_inflight + config.max_mutating_requests_inflight)
            .unwrap_or(u32::MAX),
        config.max_requests_inflight,
        // A request waits in its queue at most a quarter of its timeout, as kube-apiserver.
        REQUEST_TIMEOUT / 4,
    );
    let state = AppState::new(
        storage,
        registry,
        secured.security,
        metrics,
        config.max_request_body_bytes,
        flow_control,
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
    let limits = ConnectionLimits {
        read_header_timeout: config.read_header_timeout,
        http2_max_streams: config.http2_max_streams(),
        idle_timeout: config.idle_connection_timeout,
    };
    serve(listener, secured.tls, state, limits, shutdown_signal()?).await?;
    controllers.abort();
    tracing::info!("stopped");
    Ok(())
}

/// Opens the store `config` chooses (encrypting with `encryption`, whose key file is then
/// reloaded as it changes), every call of it timed (etcd_request_duration_seconds).
async fn open_store(
    config: &Config,
    encryption: Option<&EncryptionConfig>,
) -> anyhow::Result<(Arc<dyn Storage>, StorageMetrics)> {
    if let Some(encryption) = encryption {
        tracing::info!("encryption at rest on, as --encryption-provider-config says");
        encryption.spawn_reloader();
    }
    let storage: Arc<dyn Storage> = match config.store() {
        StoreChoice::Embedded(mut c) => {
            c.encryption = encryption.cloned();
            let dir = c.data_dir.display().to_string();
            let store = EmbeddedStore::open(c)
                .await
                .with_context(|| format!("opening the embedded store in {dir}"))?;
            tracing::info!(data_dir = %dir, "serving from the embedded store");
            Arc::new(store)
        }
        StoreChoice::Etcd3(mut c) => {
            c.encryption = encryption.cloned();
            let endpoints = c.endpoints.join(",");
            let store = Etcd3Store::connect(c)
                .await
                .with_context(|| format!("connecting to etcd at {endpoints}"))?;
            tracing::info!(%endpoints, "serving from etcd");
            Arc::new(store)
        }
    };
    let metrics = StorageMetrics::default();
    Ok((
        Arc::new(Instrumented::new(storage, metrics.clone())),
        metrics,
    ))
}

/// The admission chain, in Kubernetes' order, built here and only here. Mutating: the
/// MutatingAdmissionPolicies, the modules' policies, the mutating webhooks. Validating: the
/// built-in plugins (OwnerReferencesPermissionEnforcement, unless in development mode), the
/// ValidatingAdmissionPolicies, the modules' policies, the validating webhooks, and quota last:
/// a write is charged only once everything else admitted it. Answers what has metrics.
fn admission_chain(
    registry: &Arc<Registry>,
    modules: &Arc<ModuleTable>,
    secured: &Secured,
) -> (WebhookMetrics, Arc<WasmPolicies>) {
    let webhook_metrics = WebhookMetrics::default();
    let (mutating_webhooks, validating_webhooks) =
        crate::admission::webhook::start(registry, &webhook_metrics);
    let policy_modules = WasmPolicies::new(modules.clone(), registry);
    let mutating: [Arc<dyn MutatingAdmission>; 3] = [
        crate::admission::mutating_policy::start(registry),
        policy_modules.clone(),
        mutating_webhooks,
    ];
    let owner_references = secured.pki.is_some().then(|| {
        let authorizer = secured.reviews.authorizer.clone();
        Arc::new(OwnerReferencesPermissionEnforcement::new(
            authorizer, registry,
        )) as Arc<dyn ValidatingAdmission>
    });
    let quota = crate::admission::resource_quota::start(registry);
    let validating: [Option<Arc<dyn ValidatingAdmission>>; 5] = [
        owner_references,
        Some(crate::admission::policy::start(registry)),
        Some(policy_modules.clone()),
        Some(validating_webhooks),
        quota.map(|q| q as Arc<dyn ValidatingAdmission>),
    ];
    let chain = registry.admission();
    mutating
        .into_iter()
        .for_each(|plugin| chain.add_mutating(plugin));
    validating
        .into_iter()
        .flatten()
        .for_each(|plugin| chain.add(plugin));
    (webhook_metrics, policy_modules)
}

/// The audit log the flags ask for (none without `--audit-log-path`).
fn auditor(config: &Config) -> anyhow::Result<Option<Auditor>> {
    let s = &config.security;
    let rotation = LogRotation::from_flags(
        s.audit_log_maxsize,
        s.audit_log_maxbackup,
        s.audit_log_maxage,
        s.audit_log_compress,
    );
    Auditor::from_flags(
        s.audit_log_path.as_deref(),
        s.audit_policy_file.as_deref(),
        &s.audit_level,
        rotation,
    )
    .context("opening the audit log")
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
