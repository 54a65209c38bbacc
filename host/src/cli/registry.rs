//! `strategy-host module push|pull`, and the modules `module test|diff` read by URL: a module
//! moved to and from an OCI registry (or downloaded) with the server's own puller, using the
//! credentials `docker login` wrote.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::{Error, Result};
use crate::config::RegistryCa;
use crate::wasm::sources::pull::credentials::registry_auth;
use crate::wasm::sources::pull::{ModuleUrl, PullConfig, PullRequest, Puller};

/// How the commands reach registries (the server's flags of the same names).
#[derive(Debug, Clone, Default, Args)]
pub struct RegistryArgs {
    /// A non-loopback registry reached over plain HTTP, as `HOST[:PORT]` (repeatable).
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]")]
    pub insecure_registries: Vec<String>,
    /// A CA certificate (PEM) trusted for one registry, as `HOST[:PORT]=FILE` (repeatable).
    #[arg(long = "registry-ca", value_name = "HOST[:PORT]=FILE")]
    pub registry_cas: Vec<RegistryCa>,
}

/// `module push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The module (`.wasm`).
    #[arg(value_name = "MODULE.wasm")]
    pub module: PathBuf,
    /// Where to push it: `oci://HOST/REPOSITORY:TAG`.
    #[arg(value_name = "oci://HOST/REPOSITORY:TAG")]
    pub url: String,
    /// How to reach the registry.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `module pull`.
#[derive(Debug, Args)]
pub struct PullArgs {
    /// The module's URL: `oci://…` or `https://…`.
    #[arg(value_name = "URL")]
    pub url: String,
    /// Where to write it (default: the repository's last path segment, with `.wasm`).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The SHA-256 the module must have (`sha256:…`), as `spec.digest`.
    #[arg(long)]
    pub digest: Option<String>,
    /// How to reach the registry.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

impl RegistryArgs {
    fn puller(&self) -> Result<Puller> {
        let mut registry_cas = std::collections::BTreeMap::new();
        for ca in &self.registry_cas {
            let pem = read(&ca.file)?;
            registry_cas.insert(ca.host.clone(), pem);
        }
        Ok(Puller::new(PullConfig {
            insecure_registries: self.insecure_registries.clone(),
            registry_cas,
            ..PullConfig::default()
        }))
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::ReadFile {
        path: path.into(),
        source,
    })
}

fn parse_url(url: &str) -> Result<ModuleUrl> {
    url.parse()
        .map_err(|e| Error::Registry(format!("{url}: {e}")))
}

/// The credentials `docker login` (or `helm registry login`, `oras login`) stored for `host` in
/// `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`; anonymous without one.
fn docker_auth(host: &str) -> Result<crate::wasm::sources::pull::RegistryAuth> {
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker")));
    let Some(config) = dir.map(|d| d.join("config.json")).filter(|f| f.exists()) else {
        return Ok(crate::wasm::sources::pull::RegistryAuth::Anonymous);
    };
    registry_auth(&read(&config)?, host)
        .map_err(|e| Error::Registry(format!("{}: {e}", config.display())))
}

/// `module push`: pushes the module and prints what a `StrategyModule` pins it with.
///
/// # Errors
/// The file cannot be read, the URL is not `oci://`, or the registry refused the push.
pub async fn push(args: PushArgs) -> Result<ExitCode> {
    let bytes = read(&args.module)?;
    let url = parse_url(&args.url)?;
    let ModuleUrl::Oci(reference) = &url else {
        return Err(Error::Registry(format!(
            "{}: modules are pushed to oci:// references",
            args.url
        )));
    };
    let digest = crate::wasm_runtime::digest(&bytes);
    let auth = docker_auth(&url.host())?;
    let manifest = args
        .registry
        .puller()?
        .push(&url, &auth, bytes)
        .await
        .map_err(|e| Error::Registry(e.to_string()))?;
    let pinned = reference.clone_with_digest(manifest.clone());
    println!("pushed {url}");
    println!("manifest: {manifest}");
    println!("url: oci://{}", pinned.whole());
    println!("digest: sha256:{digest}");
    Ok(ExitCode::SUCCESS)
}

/// `module pull`: writes the module to a file and prints its digest.
///
/// # Errors
/// The URL is not a module URL, the pull failed, or the file cannot be written.
pub async fn pull(args: PullArgs) -> Result<ExitCode> {
    let url = parse_url(&args.url)?;
    let pinned = match &args.digest {
        Some(d) => Some(
            d.strip_prefix("sha256:")
                .ok_or_else(|| Error::Registry(format!("--digest {d}: must be sha256:<hex>")))?
                .to_owned(),
        ),
        None => None,
    };
    let module = fetch(&url, pinned, &args.registry).await?;
    let output = args.output.unwrap_or_else(|| default_file(&url));
    std::fs::write(&output, &module).map_err(|source| Error::ReadFile {
        path: output.clone(),
        source,
    })?;
    println!("pulled {url} to {}", output.display());
    println!("digest: sha256:{}", crate::wasm_runtime::digest(&module));
    Ok(ExitCode::SUCCESS)
}

/// The bytes of the module at `url`.
///
/// # Errors
/// [`Error::Registry`] with the puller's reason.
pub async fn fetch(
    url: &ModuleUrl,
    pinned: Option<String>,
    registry: &RegistryArgs,
) -> Result<Vec<u8>> {
    let request = PullRequest {
        url: url.clone(),
        pinned,
        resolved: None,
        auth: docker_auth(&url.host())?,
    };
    let pulled = registry
        .puller()?
        .pull(&request)
        .await
        .map_err(|e| Error::Registry(e.to_string()))?;
    Ok(pulled.bytes.to_vec())
}

/// `deployment.wasm` for `oci://host/strategies/deployment:v1` or `https://h/x/deployment.wasm`.
fn default_file(url: &ModuleUrl) -> PathBuf {
    let name = match url {
        ModuleUrl::Oci(r) => r
            .repository()
            .rsplit('/')
            .next()
            .unwrap_or("module")
            .to_owned(),
        ModuleUrl::Download(u) => u
            .rsplit('/')
            .next()
            .unwrap_or("module")
            .trim_end_matches(".wasm")
            .to_owned(),
    };
    PathBuf::from(format!("{name}.wasm"))
}

/// Whether a `module test|diff` argument names a module by URL rather than a file.
pub fn is_url(module: &Path) -> bool {
    let text = module.to_string_lossy();
    ["oci://", "https://", "http://"]
        .iter()
        .any(|scheme| text.starts_with(scheme))
}

/// The module a `module test|diff` argument names: a file, or a URL pulled now.
///
/// # Errors
/// The file cannot be read or the pull failed.
pub async fn module_bytes(module: &Path, registry: &RegistryArgs) -> Result<Vec<u8>> {
    if is_url(module) {
        let url = parse_url(&module.to_string_lossy())?;
        return fetch(&url, None, registry).await;
    }
    read(module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_file_names_and_url_arguments() {
        let oci: ModuleUrl = "oci://r:5000/strategies/deployment:v1".parse().unwrap();
        assert_eq!(default_file(&oci), PathBuf::from("deployment.wasm"));
        let https: ModuleUrl = "https://h/x/owner-label.wasm".parse().unwrap();
        assert_eq!(default_file(&https), PathBuf::from("owner-label.wasm"));
        assert!(is_url(Path::new("oci://r/m:v1")));
        assert!(!is_url(Path::new("strategies/m.wasm")));
    }
}
