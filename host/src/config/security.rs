//! The TLS, authentication, authorization and audit flags, with kube-apiserver's names.

use std::path::PathBuf;

use super::parse_duration;

/// How requests are authorized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthorizationMode {
    /// Roles and bindings of `rbac.authorization.k8s.io/v1`.
    #[value(name = "RBAC")]
    Rbac,
    /// Every authenticated request is allowed.
    #[value(name = "AlwaysAllow")]
    AlwaysAllow,
}

/// TLS, authentication, authorization and audit flags (kube-apiserver's names).
#[derive(Debug, Clone, clap::Args)]
pub struct SecurityFlags {
    /// PEM serving certificate (chain); without it one is generated into {data-dir}/pki.
    #[arg(long, env = "STRATEGY_HOST_TLS_CERT_FILE")]
    pub tls_cert_file: Option<PathBuf>,

    /// PEM private key of --tls-cert-file.
    #[arg(long, env = "STRATEGY_HOST_TLS_PRIVATE_KEY_FILE")]
    pub tls_private_key_file: Option<PathBuf>,

    /// PEM CA bundle: client certificates it signed authenticate (CN = user, O = groups). The
    /// generated CA in {data-dir}/pki is always trusted too.
    #[arg(long, env = "STRATEGY_HOST_CLIENT_CA_FILE")]
    pub client_ca_file: Option<PathBuf>,

    /// The client certificate presented to extension API servers (the front proxy's; default:
    /// generated in {data-dir}/pki as kubeadm's front-proxy-client).
    #[arg(long, env = "STRATEGY_HOST_PROXY_CLIENT_CERT_FILE")]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// The key of --proxy-client-cert-file.
    #[arg(long, env = "STRATEGY_HOST_PROXY_CLIENT_KEY_FILE")]
    pub proxy_client_key_file: Option<PathBuf>,

    /// The CA extension API servers check the front proxy's certificate against (published in
    /// kube-system/extension-apiserver-authentication; default: the generated front-proxy-ca).
    #[arg(long, env = "STRATEGY_HOST_REQUESTHEADER_CLIENT_CA_FILE")]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// Common names the front proxy's certificate may have (default with a generated one:
    /// front-proxy-client).
    #[arg(
        long,
        env = "STRATEGY_HOST_REQUESTHEADER_ALLOWED_NAMES",
        value_delimiter = ','
    )]
    pub requestheader_allowed_names: Vec<String>,

    /// Headers carrying the user's name (default X-Remote-User).
    #[arg(
        long,
        env = "STRATEGY_HOST_REQUESTHEADER_USERNAME_HEADERS",
        value_delimiter = ','
    )]
    pub requestheader_username_headers: Vec<String>,

    /// Headers carrying the user's groups (default X-Remote-Group).
    #[arg(
        long,
        env = "STRATEGY_HOST_REQUESTHEADER_GROUP_HEADERS",
        value_delimiter = ','
    )]
    pub requestheader_group_headers: Vec<String>,

    /// Prefixes of headers carrying the user's extra attributes (default X-Remote-Extra-).
    #[arg(
        long,
        env = "STRATEGY_HOST_REQUESTHEADER_EXTRA_HEADERS_PREFIX",
        value_delimiter = ','
    )]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// Headers carrying the user's uid (default: none).
    #[arg(
        long,
        env = "STRATEGY_HOST_REQUESTHEADER_UID_HEADERS",
        value_delimiter = ','
    )]
    pub requestheader_uid_headers: Vec<String>,

    /// As an extension API server: a kubeconfig naming the parent server (kube-apiserver) that
    /// bearer tokens this server does not know are sent to as `TokenReview`s
    /// (k8s.io/apiserver's delegated authentication).
    #[arg(long, env = "STRATEGY_HOST_AUTHENTICATION_KUBECONFIG")]
    pub authentication_kubeconfig: Option<PathBuf>,

    /// As an extension API server: a kubeconfig naming the parent server asked with a
    /// `SubjectAccessReview` before this server's own authorizer (k8s.io/apiserver's delegated
    /// authorization).
    #[arg(long, env = "STRATEGY_HOST_AUTHORIZATION_KUBECONFIG")]
    pub authorization_kubeconfig: Option<PathBuf>,

    /// With `--authorization-kubeconfig`: paths allowed without asking anyone (a trailing `*`
    /// matches any rest).
    #[arg(
        long,
        env = "STRATEGY_HOST_AUTHORIZATION_ALWAYS_ALLOW_PATHS",
        value_delimiter = ',',
        default_value = "/healthz,/readyz,/livez"
    )]
    pub authorization_always_allow_paths: Vec<String>,

    /// Static bearer tokens, one `token,user,uid,"group1,group2"` line each.
    #[arg(long, env = "STRATEGY_HOST_TOKEN_AUTH_FILE")]
    pub token_auth_file: Option<PathBuf>,

    /// Encryption at rest (`apiserver.config.k8s.io/v1` `EncryptionConfiguration`): which
    /// resources are stored encrypted, with which providers and keys.
    #[arg(long, env = "STRATEGY_HOST_ENCRYPTION_PROVIDER_CONFIG")]
    pub encryption_provider_config: Option<PathBuf>,

    /// Read `--encryption-provider-config` again when it changes (a new key takes effect
    /// without a restart; a file that no longer reads keeps the last good keys).
    #[arg(
        long,
        env = "STRATEGY_HOST_ENCRYPTION_PROVIDER_CONFIG_AUTOMATIC_RELOAD",
        requires = "encryption_provider_config"
    )]
    pub encryption_provider_config_automatic_reload: bool,

    /// Structured authentication (`apiserver.config.k8s.io/v1` `AuthenticationConfiguration`):
    /// JWT issuers (OIDC) whose tokens authenticate users; read again when it changes.
    #[arg(long, env = "STRATEGY_HOST_AUTHENTICATION_CONFIG")]
    pub authentication_config: Option<PathBuf>,

    /// PEM (PKCS#8) private key ServiceAccount tokens are signed with; without it one is
    /// generated into {data-dir}/pki. Replicas sharing an etcd must share it.
    #[arg(long, env = "STRATEGY_HOST_SERVICE_ACCOUNT_SIGNING_KEY_FILE")]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// Further PEM public keys ServiceAccount tokens are accepted from (comma-separated).
    #[arg(
        long,
        env = "STRATEGY_HOST_SERVICE_ACCOUNT_KEY_FILE",
        value_delimiter = ','
    )]
    pub service_account_key_file: Vec<PathBuf>,

    /// The `iss` of ServiceAccount tokens.
    #[arg(
        long,
        env = "STRATEGY_HOST_SERVICE_ACCOUNT_ISSUER",
        default_value = crate::authentication::service_account::DEFAULT_ISSUER
    )]
    pub service_account_issuer: String,

    /// The key set URI the ServiceAccount issuer's OpenID configuration names (https;
    /// default: this server's `/openid/v1/jwks`).
    #[arg(long, env = "STRATEGY_HOST_SERVICE_ACCOUNT_JWKS_URI")]
    pub service_account_jwks_uri: Option<String>,

    /// Audiences a token must name one of (comma-separated; default: the issuer).
    #[arg(long, env = "STRATEGY_HOST_API_AUDIENCES", value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// The longest lifetime of a requested ServiceAccount token (Go duration).
    #[arg(
        long,
        env = "STRATEGY_HOST_SERVICE_ACCOUNT_MAX_TOKEN_EXPIRATION",
        value_parser = parse_duration
    )]
    pub service_account_max_token_expiration: Option<std::time::Duration>,

    /// Requests without credentials act as system:anonymous (group system:unauthenticated),
    /// for authorization to decide; `false` answers them 401.
    #[arg(
        long,
        env = "STRATEGY_HOST_ANONYMOUS_AUTH",
        action = clap::ArgAction::Set,
        default_value_t = true
    )]
    pub anonymous_auth: bool,

    /// How requests are authorized.
    #[arg(
        long,
        env = "STRATEGY_HOST_AUTHORIZATION_MODE",
        value_enum,
        default_value = "RBAC",
        conflicts_with = "authorization_config"
    )]
    pub authorization_mode: AuthorizationMode,

    /// Structured authorization (`apiserver.config.k8s.io/v1` `AuthorizationConfiguration`): an
    /// ordered chain of RBAC and webhook authorizers; read again when it changes. Not with
    /// `--authorization-mode`.
    #[arg(long, env = "STRATEGY_HOST_AUTHORIZATION_CONFIG")]
    pub authorization_config: Option<PathBuf>,

    /// Append an audit.k8s.io/v1 Event per request stage as JSON lines to this file (`-`:
    /// stdout).
    #[arg(long, env = "STRATEGY_HOST_AUDIT_LOG_PATH")]
    pub audit_log_path: Option<PathBuf>,

    /// Megabytes the audit log may reach before it is rotated to a timestamped backup (0:
    /// 100, as kube-apiserver).
    #[arg(
        long = "audit-log-maxsize",
        env = "STRATEGY_HOST_AUDIT_LOG_MAXSIZE",
        default_value_t = 0
    )]
    pub audit_log_maxsize: u64,

    /// Rotated audit log files kept, newest first (0: all).
    #[arg(
        long = "audit-log-maxbackup",
        env = "STRATEGY_HOST_AUDIT_LOG_MAXBACKUP",
        default_value_t = 0
    )]
    pub audit_log_maxbackup: usize,

    /// Days a rotated audit log file is kept (0: forever).
    #[arg(
        long = "audit-log-maxage",
        env = "STRATEGY_HOST_AUDIT_LOG_MAXAGE",
        default_value_t = 0
    )]
    pub audit_log_maxage: u64,

    /// Gzip rotated audit log files.
    #[arg(long = "audit-log-compress", env = "STRATEGY_HOST_AUDIT_LOG_COMPRESS")]
    pub audit_log_compress: bool,

    /// An audit.k8s.io/v1 Policy (YAML or JSON) choosing each request's audit level.
    #[arg(long, env = "STRATEGY_HOST_AUDIT_POLICY_FILE")]
    pub audit_policy_file: Option<PathBuf>,

    /// The audit level of every request when no policy file is given: None, Metadata,
    /// Request or RequestResponse.
    #[arg(
        long,
        env = "STRATEGY_HOST_AUDIT_LEVEL",
        default_value = "Metadata",
        value_parser = ["None", "Metadata", "Request", "RequestResponse"]
    )]
    pub audit_level: String,
}
