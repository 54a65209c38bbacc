//! The command line: every flag of `strategy-host`, each also read from a `STRATEGY_HOST_*`
//! environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

mod duration;
mod security;

pub use self::duration::parse_duration;
pub use self::security::{AuthorizationMode, SecurityFlags};
use crate::storage::embedded::EmbeddedConfig;
use crate::storage::etcd3::{Etcd3Config, TlsFiles};

/// Strategy Host: a Kubernetes-style API server whose resource strategies are WebAssembly
/// modules. With no flags it serves HTTPS on 127.0.0.1:8080 from the embedded store in ./data,
/// with a certificate generated into ./data/pki and an admin kubeconfig in
/// ./data/admin.kubeconfig.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "strategy-host",
    version,
    about,
    long_about = None,
    after_help = "To test a strategy module on objects from files, without a server: strategy-host module --help"
)]
pub struct Config {
    /// Address and port to serve HTTPS on (plain HTTP with --dev-mode).
    #[arg(long, env = "STRATEGY_HOST_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Directory of the embedded store (used when no etcd servers are given).
    #[arg(long, env = "STRATEGY_HOST_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,

    /// How often the embedded store compacts history older than the previous compaction
    /// (seconds; 0 disables automatic compaction).
    #[arg(
        long,
        env = "STRATEGY_HOST_COMPACTION_INTERVAL_SECONDS",
        default_value_t = 300
    )]
    pub compaction_interval_seconds: u64,

    /// The most memory the embedded store's page cache may hold, in MiB. The watch cache
    /// already holds every current object, so this cache serves only the pages writes touch.
    #[arg(long, env = "STRATEGY_HOST_EMBEDDED_CACHE_MIB", default_value_t = 8)]
    pub embedded_cache_mib: usize,

    /// Comma-separated etcd v3 endpoints; when set, etcd is the store instead of the embedded one.
    #[arg(long, env = "STRATEGY_HOST_ETCD_SERVERS", value_delimiter = ',')]
    pub etcd_servers: Vec<String>,

    /// Key prefix of every object in etcd.
    #[arg(long, env = "STRATEGY_HOST_ETCD_PREFIX", default_value = "/registry")]
    pub etcd_prefix: String,

    /// CA bundle to verify etcd's server certificate.
    #[arg(long, env = "STRATEGY_HOST_ETCD_CAFILE")]
    pub etcd_cafile: Option<PathBuf>,

    /// Client certificate for etcd (with --etcd-keyfile).
    #[arg(long, env = "STRATEGY_HOST_ETCD_CERTFILE")]
    pub etcd_certfile: Option<PathBuf>,

    /// Client private key for etcd (with --etcd-certfile).
    #[arg(long, env = "STRATEGY_HOST_ETCD_KEYFILE")]
    pub etcd_keyfile: Option<PathBuf>,

    /// How often etcd's history is compacted, one host of those sharing the etcd compacting per
    /// interval (Go duration; `0` never compacts). As kube-apiserver's.
    #[arg(
        long,
        env = "STRATEGY_HOST_ETCD_COMPACTION_INTERVAL",
        default_value = "5m",
        value_parser = parse_duration
    )]
    pub etcd_compaction_interval: std::time::Duration,

    /// Seconds to wait for etcd when connecting.
    #[arg(
        long,
        env = "STRATEGY_HOST_ETCD_DIAL_TIMEOUT_SECONDS",
        default_value_t = 5
    )]
    pub etcd_dial_timeout_seconds: u64,

    /// Load every `*.wasm` strategy module in this directory and watch it for changes.
    #[arg(long, env = "STRATEGY_HOST_STRATEGY_DIR")]
    pub strategy_dir: Option<PathBuf>,

    /// Where compiled strategy modules are cached by content digest (default: `module-cache`
    /// inside --data-dir on the embedded store; no cache on etcd unless set).
    #[arg(long, env = "STRATEGY_HOST_MODULE_CACHE_DIR")]
    pub module_cache_dir: Option<PathBuf>,

    /// A registry (or download host) of `StrategyModule` URLs reached over plain HTTP though not
    /// on loopback, as `HOST[:PORT]` (repeatable or comma-separated): docker's and containerd's
    /// rule. Loopback hosts are reached over plain HTTP unless given a --registry-ca.
    #[arg(
        long = "insecure-registry",
        env = "STRATEGY_HOST_INSECURE_REGISTRIES",
        value_delimiter = ',',
        value_name = "HOST[:PORT]"
    )]
    pub insecure_registries: Vec<String>,

    /// A CA certificate (PEM file) trusted beside the system roots for one registry or download
    /// host, as `HOST[:PORT]=FILE` (repeatable); such a host is always reached over HTTPS.
    #[arg(long = "registry-ca", value_name = "HOST[:PORT]=FILE")]
    pub registry_cas: Vec<RegistryCa>,

    /// Grant time to modules that read WASI clocks (Go's): the host's wall and monotonic time
    /// instead of a virtual clock starting at the epoch (sleeps still return at once).
    #[arg(long, env = "STRATEGY_HOST_WASM_REAL_CLOCK")]
    pub wasm_real_clock: bool,

    /// Tiered compilation: a module with no optimized code in the module cache serves first
    /// from Winch's baseline code while Cranelift compiles it in the background, then from the
    /// optimized code (the Go Deployment example ready in ~0.7 s instead of ~4 s, release
    /// build). `--tiered-compilation=false` waits for Cranelift.
    #[arg(
        long,
        env = "STRATEGY_HOST_TIERED_COMPILATION",
        default_value_t = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub tiered_compilation: bool,

    /// The largest request body accepted (bytes); larger requests answer 413.
    #[arg(
        long,
        env = "STRATEGY_HOST_MAX_REQUEST_BODY_BYTES",
        default_value_t = crate::api::body::DEFAULT_MAX_BODY_BYTES
    )]
    pub max_request_body_bytes: usize,

    /// How long a connection may take to send its first bytes and each request's headers, and
    /// an idle HTTP/1.1 connection is kept, before it is closed (Go duration; kube-apiserver's
    /// fixed `ReadHeaderTimeout` is 32 s).
    #[arg(
        long,
        env = "STRATEGY_HOST_READ_HEADER_TIMEOUT",
        default_value = "32s",
        value_parser = parse_duration
    )]
    pub read_header_timeout: std::time::Duration,

    /// How long a connection with nothing in progress (HTTP/2: no open stream) is kept before
    /// it is closed, on HTTP/2 with a GOAWAY (Go duration; kube-apiserver's fixed
    /// `IdleTimeout` is 90 s).
    #[arg(
        long,
        env = "STRATEGY_HOST_IDLE_CONNECTION_TIMEOUT",
        default_value = "90s",
        value_parser = parse_duration
    )]
    pub idle_connection_timeout: std::time::Duration,

    /// The most streams a client's HTTP/2 connection may have open at once (0: Go's default,
    /// 250, as kube-apiserver).
    #[arg(
        long,
        env = "STRATEGY_HOST_HTTP2_MAX_STREAMS_PER_CONNECTION",
        default_value_t = 0
    )]
    pub http2_max_streams_per_connection: u32,

    /// With `--max-mutating-requests-inflight`, the seats API Priority and Fairness shares
    /// between its priority levels (watches take none); alone, what bounds the exempt level's
    /// requests (`system:masters`, health probes) in flight. More answer 429.
    #[arg(
        long,
        env = "STRATEGY_HOST_MAX_REQUESTS_INFLIGHT",
        default_value_t = 400
    )]
    pub max_requests_inflight: usize,

    /// Added to `--max-requests-inflight` for the seats the priority levels share, as
    /// kube-apiserver does when API Priority and Fairness is on.
    #[arg(
        long,
        env = "STRATEGY_HOST_MAX_MUTATING_REQUESTS_INFLIGHT",
        default_value_t = 200
    )]
    pub max_mutating_requests_inflight: usize,

    /// How long an Event is kept after its last write (Go duration: `1h`, `30m`, `1h30m0s`).
    #[arg(
        long,
        env = "STRATEGY_HOST_EVENT_TTL",
        default_value = "1h",
        value_parser = parse_duration
    )]
    pub event_ttl: std::time::Duration,

    /// The range Service cluster IPs are allocated from (kube-apiserver's flag; one CIDR: this
    /// server is single-stack).
    #[arg(
        long,
        env = "STRATEGY_HOST_SERVICE_CLUSTER_IP_RANGE",
        default_value = "10.96.0.0/12"
    )]
    pub service_cluster_ip_range: crate::registry::service::cluster_ip::ServiceIpRange,

    /// The range of node ports NodePort and LoadBalancer Services get (kube-apiserver's flag).
    #[arg(
        long,
        env = "STRATEGY_HOST_SERVICE_NODE_PORT_RANGE",
        default_value = "30000-32767"
    )]
    pub service_node_port_range: crate::registry::service::NodePortRange,

    /// The controllers to run (kube-controller-manager's spelling): `*` for every one on by
    /// default, a name to turn one on, `-name` to turn one off, e.g. `*,-garbagecollector`.
    /// Controllers: apiservice-autoregistration, apiservice-availability,
    /// cluster-authentication-trust, customresourcedefinition-cleanup, event-expiry,
    /// garbagecollector, ipaddress-repair, kubernetes-service, namespace, serviceaccount-token,
    /// validatingadmissionpolicy-status.
    #[arg(
        long,
        env = "STRATEGY_HOST_CONTROLLERS",
        value_delimiter = ',',
        default_value = "*"
    )]
    pub controllers: Vec<String>,

    /// Run the controllers only on the host holding the controllers' Lease, so hosts sharing
    /// a store run one set (`--leader-elect=false`: run them here regardless).
    #[arg(
        long,
        env = "STRATEGY_HOST_LEADER_ELECT",
        default_value_t = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub leader_elect: bool,

    /// How long the controllers' Lease holds without renewal before another host takes it.
    #[arg(long, env = "STRATEGY_HOST_LEADER_ELECT_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: std::time::Duration,

    /// How long the leader tries to renew before it stops its controllers.
    #[arg(long, env = "STRATEGY_HOST_LEADER_ELECT_RENEW_DEADLINE", default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: std::time::Duration,

    /// The pause between election attempts.
    #[arg(long, env = "STRATEGY_HOST_LEADER_ELECT_RETRY_PERIOD", default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: std::time::Duration,

    /// DEVELOPMENT ONLY: serve plain HTTP with no authentication or authorization, every
    /// request acting as an admin (group system:masters). Refused unless --listen is a loopback
    /// address.
    #[arg(long, env = "STRATEGY_HOST_DEV_MODE")]
    pub dev_mode: bool,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub security: SecurityFlags,
}

impl Config {
    /// The key and certificate files the flags name.
    pub fn pki_flags(&self) -> strategy_host_https::pki::PkiFlags {
        let s = &self.security;
        strategy_host_https::pki::PkiFlags {
            tls_cert_file: s.tls_cert_file.clone(),
            tls_private_key_file: s.tls_private_key_file.clone(),
            client_ca_file: s.client_ca_file.clone(),
            service_account_signing_key_file: s.service_account_signing_key_file.clone(),
            service_account_key_files: s.service_account_key_file.clone(),
        }
    }

    /// The front proxy's files and headers the flags name.
    pub fn front_proxy_flags(&self) -> strategy_host_https::pki::front_proxy::FrontProxyFlags {
        let s = &self.security;
        strategy_host_https::pki::front_proxy::FrontProxyFlags {
            proxy_client_cert_file: s.proxy_client_cert_file.clone(),
            proxy_client_key_file: s.proxy_client_key_file.clone(),
            requestheader_client_ca_file: s.requestheader_client_ca_file.clone(),
            requestheader_allowed_names: s.requestheader_allowed_names.clone(),
            requestheader_username_headers: s.requestheader_username_headers.clone(),
            requestheader_group_headers: s.requestheader_group_headers.clone(),
            requestheader_extra_headers_prefix: s.requestheader_extra_headers_prefix.clone(),
            requestheader_uid_headers: s.requestheader_uid_headers.clone(),
        }
    }

    /// Where pulled modules are kept by digest: `pulled` in the module cache, or in
    /// `module-cache` inside --data-dir when there is no cache (pulled modules are always kept,
    /// so a restart serves them while the registry is down).
    pub fn pulled_modules_dir(&self) -> PathBuf {
        self.module_cache()
            .unwrap_or_else(|| self.data_dir.join("module-cache"))
            .join("pulled")
    }

    /// The directory compiled modules are cached in, if any.
    pub fn module_cache(&self) -> Option<PathBuf> {
        match (&self.module_cache_dir, self.etcd_servers.is_empty()) {
            (Some(dir), _) => Some(dir.clone()),
            (None, true) => Some(self.data_dir.join("module-cache")),
            (None, false) => None,
        }
    }
}

/// `--registry-ca HOST[:PORT]=FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryCa {
    /// The registry's host, with its port if not the default.
    pub host: String,
    /// The PEM file.
    pub file: PathBuf,
}

impl std::str::FromStr for RegistryCa {
    type Err = RegistryCaError;

    fn from_str(s: &str) -> Result<Self, RegistryCaError> {
        match s.split_once('=') {
            Some((host, file)) if !host.is_empty() && !file.is_empty() => Ok(Self {
                host: host.to_owned(),
                file: file.into(),
            }),
            _ => Err(RegistryCaError(s.to_owned())),
        }
    }
}

/// A `--registry-ca` value that is not `HOST[:PORT]=FILE`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0:?} is not HOST[:PORT]=FILE")]
pub struct RegistryCaError(String);

/// Which store the server runs on.
#[derive(Debug, Clone)]
pub enum StoreChoice {
    /// The embedded store.
    Embedded(EmbeddedConfig),
    /// etcd v3.
    Etcd3(Etcd3Config),
}

impl Config {
    /// The HTTP/2 stream limit per connection, with 0 meaning Go's default (250).
    pub fn http2_max_streams(&self) -> u32 {
        match self.http2_max_streams_per_connection {
            0 => 250,
            n => n,
        }
    }

    /// The leader election the flags ask for, if any.
    pub fn election(&self) -> Option<crate::controllers::leader::ElectionConfig> {
        self.leader_elect
            .then_some(crate::controllers::leader::ElectionConfig {
                lease_duration: self.leader_elect_lease_duration,
                renew_deadline: self.leader_elect_renew_deadline,
                retry_period: self.leader_elect_retry_period,
            })
    }

    /// The encryption at rest `--encryption-provider-config` describes, if given (watched for
    /// changes with `--encryption-provider-config-automatic-reload`).
    ///
    /// # Errors
    /// The file cannot be read or is not a valid configuration (every field error).
    pub fn encryption(
        &self,
    ) -> anyhow::Result<Option<crate::storage::encryption::EncryptionConfig>> {
        let Some(path) = &self.security.encryption_provider_config else {
            return Ok(None);
        };
        if self.security.encryption_provider_config_automatic_reload {
            return Ok(Some(crate::storage::encryption::watch(path)?));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        crate::storage::encryption::parse(&text)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// The store the flags select.
    pub fn store(&self) -> StoreChoice {
        if self.etcd_servers.is_empty() {
            let mut c = EmbeddedConfig::new(self.data_dir.clone());
            c.compaction_interval = (self.compaction_interval_seconds > 0)
                .then(|| Duration::from_secs(self.compaction_interval_seconds));
            c.page_cache_bytes = self.embedded_cache_mib.saturating_mul(1 << 20);
            return StoreChoice::Embedded(c);
        }
        let mut c = Etcd3Config::new(self.etcd_servers.clone());
        c.prefix = self.etcd_prefix.clone();
        c.dial_timeout = Duration::from_secs(self.etcd_dial_timeout_seconds.max(1));
        c.compaction_interval =
            (!self.etcd_compaction_interval.is_zero()).then_some(self.etcd_compaction_interval);
        let any_tls = self.etcd_cafile.is_some()
            || self.etcd_certfile.is_some()
            || self.etcd_keyfile.is_some();
        if any_tls {
            c.tls = Some(TlsFiles {
                ca_file: self.etcd_cafile.clone(),
                cert_file: self.etcd_certfile.clone(),
                key_file: self.etcd_keyfile.clone(),
            });
        }
        StoreChoice::Etcd3(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_design() {
        let c = Config::try_parse_from(["strategy-host"]).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert!(!c.dev_mode);
        assert!(c.security.anonymous_auth);
        assert_eq!(c.security.authorization_mode, AuthorizationMode::Rbac);
        assert!(
            matches!(c.store(), StoreChoice::Embedded(e) if e.data_dir.as_path() == std::path::Path::new("data"))
        );
    }

    #[test]
    fn etcd_flags_select_etcd() {
        let c = Config::try_parse_from([
            "strategy-host",
            "--etcd-servers",
            "http://127.0.0.1:1,http://127.0.0.1:2",
            "--etcd-prefix",
            "/custom",
        ])
        .unwrap();
        match c.store() {
            StoreChoice::Etcd3(e) => {
                assert_eq!(e.endpoints.len(), 2);
                assert_eq!(e.prefix, "/custom");
                assert!(e.tls.is_none());
                assert_eq!(e.compaction_interval, Some(Duration::from_secs(300)));
            }
            other => panic!("{other:?}"),
        }
        let off = Config::try_parse_from([
            "strategy-host",
            "--etcd-servers",
            "http://127.0.0.1:1",
            "--etcd-compaction-interval",
            "0",
        ])
        .unwrap();
        assert!(matches!(off.store(), StoreChoice::Etcd3(e) if e.compaction_interval.is_none()));
    }
    #[test]
    fn security_flags_take_kube_apiserver_spellings() {
        let c = Config::try_parse_from([
            "strategy-host",
            "--anonymous-auth=false",
            "--authorization-mode",
            "AlwaysAllow",
            "--token-auth-file",
            "/tokens.csv",
        ])
        .unwrap();
        assert!(!c.security.anonymous_auth);
        assert_eq!(
            c.security.authorization_mode,
            AuthorizationMode::AlwaysAllow
        );
        assert!(Config::try_parse_from(["strategy-host", "--authorization-mode", "ABAC"]).is_err());
    }
}
