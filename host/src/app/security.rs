//! Assembles how the server is secured from its command line: TLS from the generated or given
//! certificates, the authenticator chain (client certificates, the token file, ServiceAccount
//! tokens, anonymous), the authorizer, and the admin kubeconfig; or development mode.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use async_trait::async_trait;

use crate::api::filters::Security;
use crate::api::state::Reviews;
use crate::api::tls::TlsServing;
use crate::authentication::issuer_discovery::IssuerDiscovery;
use crate::authentication::jwt::JwtAuthenticators;
use crate::authentication::request_header::RequestHeader;
use crate::authentication::service_account::{ServiceAccountLookup, ServiceAccountTokens};
use crate::authentication::token_file::TokenFile;
use crate::authentication::token_review::TokenReviewAuthenticator;
use crate::authentication::x509::X509Authenticator;
use crate::authentication::{Authenticator, AuthenticatorChain};
use crate::authorization::authorizer::AuthorizerModules;
use crate::authorization::delegated::DelegatedAuthorizer;
use crate::authorization::rbac::{self, RbacAuthorizer};
use crate::authorization::structured::AuthorizerMetrics;
use crate::authorization::structured::StructuredAuthorizer;
use crate::authorization::{with_privileged_groups, AlwaysAllow, Authorizer, Deferred};
use crate::config::{AuthorizationMode, Config};
use crate::controllers::kubernetes_service::KubernetesService;
use crate::controllers::metrics::ControllerMetrics;
use crate::controllers::service_account_token::TokenSigner;
use crate::controllers::Parts;
use crate::registry::aggregation::Aggregation;
use crate::registry::client::{Client, ObjectRef};
use crate::registry::Registry;
use strategy_host_https::pki::{self, Pki};
use strategy_host_https::webhook::{kubeconfig, ClientCertificate};

/// How the server is secured, ready to serve.
pub(super) struct Secured {
    /// The filters' configuration.
    pub security: Security,
    /// TLS, unless in development mode.
    pub tls: Option<TlsServing>,
    /// ServiceAccount tokens (TokenRequest and the authenticator share them).
    pub tokens: Arc<ServiceAccountTokens>,
    /// The PEM public keys tokens verify with, published by issuer discovery.
    pub token_keys: Vec<String>,
    /// The JWT issuers of `--authentication-config`, for their metrics.
    pub jwt: Option<Arc<JwtAuthenticators>>,
    /// The authorizer chain of `--authorization-config`, for its metrics.
    pub structured_authorizer: Option<Arc<StructuredAuthorizer>>,
    /// The keys and certificates, unless in development mode.
    pub pki: Option<Pki>,
    /// The front proxy: what this server shows extension API servers, and whom it trusts to
    /// name users in request headers (unless in development mode).
    pub front_proxy: Option<strategy_host_https::pki::front_proxy::FrontProxy>,
    /// What the access and rules reviews ask.
    pub reviews: Reviews,
}

impl Secured {
    /// The client certificate extension API servers are shown (the front proxy's).
    pub(super) fn front_proxy_certificate(&self) -> Option<ClientCertificate> {
        self.front_proxy.as_ref().map(|f| ClientCertificate {
            certificate: f.client_cert_pem.clone().into_bytes(),
            key: f.client_key_pem.clone().into_bytes(),
        })
    }

    /// Registers the metrics of the JWT issuers and the authorizer chain.
    pub(super) fn register(&self, metrics: &mut prometheus_client::registry::Registry) {
        if let Some(jwt) = &self.jwt {
            jwt.register(metrics);
        }
        if let Some(authorization) = &self.structured_authorizer {
            authorization.register(metrics);
        }
    }
}

/// What the controllers are given of the secured server: the published front-proxy trust,
/// the `kubernetes` Service's address (`bound`), the aggregator, the token signer, the root
/// CA, and where they record their metrics.
pub(super) fn controller_parts(
    config: &Config,
    secured: &Secured,
    aggregation: &Arc<Aggregation>,
    bound: SocketAddr,
    metrics: &ControllerMetrics,
) -> Parts {
    let authentication_trust = match (&secured.front_proxy, &secured.pki) {
        (Some(front_proxy), Some(pki)) => {
            Some(front_proxy.extension_apiserver_authentication(&pki.client_ca_pem))
        }
        _ => None,
    };
    Parts {
        authentication_trust,
        kubernetes_service: Some(KubernetesService {
            cluster_ip: config.service_cluster_ip_range.first(),
            listen: bound,
        }),
        aggregation: Some(aggregation.clone()),
        metrics: metrics.clone(),
        signer: Some(Arc::new(SecretTokens {
            tokens: secured.tokens.clone(),
            ca_bundle: secured.pki.as_ref().map(|p| p.serving_ca_pem.clone()),
        })),
        event_ttl: config.event_ttl,
        root_ca: secured.pki.as_ref().map(|p| p.serving_ca_pem.clone()),
    }
}

/// The token controller's signer: the server's ServiceAccount token issuer and its CA.
pub(super) struct SecretTokens {
    /// The issuer.
    pub tokens: Arc<ServiceAccountTokens>,
    /// The CA clients trust the server with (none in development mode).
    pub ca_bundle: Option<String>,
}

impl TokenSigner for SecretTokens {
    fn secret_token(
        &self,
        namespace: &str,
        account: (&str, &str),
        secret: (&str, &str),
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        Ok(self.tokens.issue_for_secret(namespace, account, secret)?)
    }

    fn ca_bundle(&self) -> Option<String> {
        self.ca_bundle.clone()
    }
}

/// How long startup waits for the first list of roles and bindings.
const RBAC_SYNC_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The RBAC kinds over `authorizer`. Under RBAC, `escalate` and `bind` are RBAC's to grant,
/// under `--authorization-config` the chain's (`chain`, set once [`secure`] builds it);
/// otherwise every user may grant anything.
pub(super) fn rbac_kinds(
    config: &Config,
    authorizer: &Arc<RbacAuthorizer>,
    chain: &Arc<Deferred>,
) -> rbac::Kinds {
    let s = &config.security;
    let escalation: Option<Arc<dyn Authorizer>> = if config.dev_mode {
        Some(Arc::new(AlwaysAllow))
    } else if s.authorization_config.is_some() {
        // The structured chain, once built: a webhook may grant escalate and bind too.
        Some(chain.clone())
    } else if s.authorization_mode == AuthorizationMode::Rbac {
        None
    } else {
        Some(Arc::new(AlwaysAllow))
    };
    rbac::Kinds::new(authorizer, escalation)
}

/// Follows the RBAC kinds (served by [`rbac_kinds`]) into `authorizer` and creates the
/// bootstrap policy.
pub(super) async fn start_rbac(registry: &Arc<Registry>, authorizer: &Arc<RbacAuthorizer>) {
    rbac::start(registry, authorizer);
    rbac::ensure_bootstrap_policy(registry).await;
    if !authorizer.wait_synced(RBAC_SYNC_WAIT).await {
        tracing::warn!("roles and bindings not listed yet; requests are denied until they are");
    }
}

/// ServiceAccounts as the watch cache has them.
struct RegistryAccounts(Arc<Registry>);

impl RegistryAccounts {
    /// The uid of the core `plural` object `namespace/name`, from the watch cache.
    async fn uid_of(&self, plural: &str, namespace: &str, name: &str) -> Option<String> {
        let object = ObjectRef::new("", "v1", plural, Some(namespace), name);
        let client = Client::new(&self.0, "serviceaccount-authenticator");
        let found = client.get_cached(&object).await.ok()??;
        found["metadata"]["uid"].as_str().map(String::from)
    }
}

#[async_trait]
impl ServiceAccountLookup for RegistryAccounts {
    async fn uid(&self, namespace: &str, name: &str) -> Option<String> {
        self.uid_of("serviceaccounts", namespace, name).await
    }

    async fn secret_uid(&self, namespace: &str, name: &str) -> Option<String> {
        self.uid_of("secrets", namespace, name).await
    }
}

/// Refuses development mode off loopback, and says loudly that it is on.
fn check_development_mode(listen: SocketAddr) -> anyhow::Result<()> {
    if !listen.ip().is_loopback() {
        anyhow::bail!(
            "--dev-mode serves plain HTTP and treats every request as an admin; it is refused on \
             {listen}: listen on a loopback address (127.0.0.1 or [::1]), or drop --dev-mode"
        );
    }
    tracing::warn!("*****************************************************************");
    tracing::warn!("DEVELOPMENT MODE (--dev-mode): plain HTTP, NO authentication and NO");
    tracing::warn!("authorization; every request acts as an admin (system:masters).");
    tracing::warn!("Never use it where anyone else can reach {listen}.");
    tracing::warn!("*****************************************************************");
    Ok(())
}

/// Builds the security the flags describe over `rbac` (followed by [`start_rbac`]), with
/// `modules`' authorizer modules for the authorization configuration's `Module` entries.
///
/// # Errors
/// Development mode off loopback; an unreadable or invalid key, certificate or token file.
pub(super) fn secure(
    config: &Config,
    registry: &Arc<Registry>,
    rbac: Arc<RbacAuthorizer>,
    chain: &Deferred,
    modules: Arc<dyn AuthorizerModules>,
) -> anyhow::Result<Secured> {
    let s = &config.security;
    let (pki, signing_key, public_keys) = if config.dev_mode {
        check_development_mode(config.listen)?;
        // Tokens still work for trying clients out; the key lives only as long as the process.
        let key = rcgen::KeyPair::generate().context("generating a ServiceAccount key")?;
        (None, key.serialize_pem(), vec![key.public_key_pem()])
    } else {
        let pki = pki::load_or_generate(&config.pki_flags(), &config.data_dir, config.listen)
            .context("preparing the server's certificates and keys")?;
        let (signing, public) = (
            pki.service_account_key_pem.clone(),
            pki.service_account_public_pems.clone(),
        );
        (Some(pki), signing, public)
    };
    let tokens = Arc::new(ServiceAccountTokens::new(
        s.service_account_issuer.clone(),
        s.api_audiences.clone(),
        s.service_account_max_token_expiration,
        &signing_key,
        &public_keys,
        Arc::new(RegistryAccounts(registry.clone())),
    )?);
    let token_keys = public_keys;
    let Some(pki) = pki else {
        return Ok(Secured {
            security: Security::Development,
            tls: None,
            tokens,
            token_keys,
            jwt: None,
            structured_authorizer: None,
            pki: None,
            front_proxy: None,
            reviews: Reviews::always_allow(),
        });
    };
    let front_proxy = strategy_host_https::pki::front_proxy::load_or_generate(
        &config.front_proxy_flags(),
        &config.data_dir,
    )
    .context("preparing the front proxy's certificate")?;
    let request_header =
        RequestHeader::new(&front_proxy).context("reading --requestheader-client-ca-file")?;
    let tls = TlsServing::new(&pki, request_header.clone())?;
    let mut authenticators: Vec<Box<dyn Authenticator>> = vec![Box::new(X509Authenticator)];
    if let Some(path) = &s.token_auth_file {
        let file = TokenFile::read(path)?;
        tracing::info!(path = %path.display(), users = file.len(), "static tokens loaded");
        authenticators.push(Box::new(file));
    }
    authenticators.push(Box::new(tokens.clone()));
    if let Some(path) = &s.authentication_kubeconfig {
        let parent = kubeconfig::read(path)
            .with_context(|| format!("reading --authentication-kubeconfig {}", path.display()))?;
        tracing::info!(server = %parent.server, "unknown bearer tokens are reviewed by the parent server");
        authenticators.push(Box::new(TokenReviewAuthenticator::new(parent)));
    }
    let jwt = match &s.authentication_config {
        Some(path) => {
            let issuers = JwtAuthenticators::load(path)?;
            tracing::info!(path = %path.display(), issuers = ?issuers.issuers(), "JWT issuers configured");
            issuers.spawn_reloader();
            authenticators.push(Box::new(issuers.clone()));
            Some(issuers)
        }
        None => None,
    };
    let mut structured_authorizer = None;
    let reviews = match (&s.authorization_config, s.authorization_mode) {
        (Some(path), _) => {
            let structured = StructuredAuthorizer::load(path, rbac, Some(modules))?;
            tracing::info!(path = %path.display(), authorizers = ?structured.names(), "authorizer chain configured");
            structured.spawn_reloader();
            let authorizer: Arc<dyn Authorizer> =
                Arc::new(with_privileged_groups(structured.clone()));
            chain.set(authorizer.clone());
            structured_authorizer = Some(structured.clone());
            Reviews {
                authorizer,
                rules: structured,
            }
        }
        (None, AuthorizationMode::Rbac) => Reviews {
            authorizer: Arc::new(with_privileged_groups(rbac.clone())),
            rules: rbac,
        },
        (None, AuthorizationMode::AlwaysAllow) => {
            tracing::warn!(
                "--authorization-mode=AlwaysAllow: every authenticated request is allowed"
            );
            Reviews::always_allow()
        }
    };
    let reviews = match &s.authorization_kubeconfig {
        Some(path) => {
            let parent = kubeconfig::read(path).with_context(|| {
                format!("reading --authorization-kubeconfig {}", path.display())
            })?;
            tracing::info!(server = %parent.server, "requests are authorized by the parent server first");
            let delegated: Arc<dyn Authorizer> =
                Arc::new(with_privileged_groups(Arc::new(DelegatedAuthorizer::new(
                    parent,
                    s.authorization_always_allow_paths.clone(),
                    reviews.authorizer.clone(),
                    AuthorizerMetrics::default(),
                ))));
            Reviews {
                authorizer: delegated,
                rules: reviews.rules,
            }
        }
        None => reviews,
    };
    let mut authentication = AuthenticatorChain::new(authenticators, s.anonymous_auth);
    if let Some(jwt) = &jwt {
        authentication = authentication.with_anonymous(jwt.anonymous_access(s.anonymous_auth));
    }
    Ok(Secured {
        security: Security::Enforced {
            authentication,
            authorizer: reviews.authorizer.clone(),
            request_header,
        },
        tls: Some(tls),
        tokens,
        token_keys,
        jwt,
        structured_authorizer,
        pki: Some(pki),
        front_proxy: Some(front_proxy),
        reviews,
    })
}

/// The ServiceAccount issuer's discovery documents, naming this server (at `bound`) as where
/// its keys are unless `--service-account-jwks-uri` says otherwise. As kube-apiserver, an
/// issuer or URI OpenID Connect does not accept is logged and neither document is served.
pub(super) fn issuer_discovery(
    config: &Config,
    secured: &Secured,
    bound: SocketAddr,
) -> Option<IssuerDiscovery> {
    let s = &config.security;
    let discovery = IssuerDiscovery::new(
        secured.tokens.issuer(),
        s.service_account_jwks_uri.as_deref(),
        &pki::server_url(bound, true),
        &secured.token_keys,
    );
    match discovery {
        Ok(discovery) => Some(discovery),
        Err(e) => {
            tracing::error!(error = %e, "ServiceAccount issuer discovery is not served");
            None
        }
    }
}

/// Writes the admin kubeconfig for the bound address and says how to use it.
///
/// # Errors
/// The file cannot be written.
pub(super) fn announce(
    config: &Config,
    pki: Option<&Pki>,
    bound: SocketAddr,
) -> anyhow::Result<()> {
    let Some(pki) = pki else {
        tracing::info!(
            "reach it with: kubectl --server {} ...",
            pki::server_url(bound, false)
        );
        return Ok(());
    };
    let path = pki::write_admin_kubeconfig(pki, &config.data_dir, &pki::server_url(bound, true))
        .context("writing the admin kubeconfig")?;
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    tracing::info!(
        kubeconfig = %path.display(),
        "admin credentials written; use them with: export KUBECONFIG={}",
        path.display()
    );
    Ok(())
}
