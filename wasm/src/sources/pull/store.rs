//! This host's copies of pulled modules: the bytes by their SHA-256, what each resolved
//! reference (a tag's manifest digest) turned out to hold, and which URL gave which module, so a
//! restart serves the module in force without reaching the registry.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Pulled modules on disk (`None`: kept nowhere, as for the command line's `module pull`).
#[derive(Debug, Clone)]
pub struct ModuleStore {
    dir: Option<PathBuf>,
}

impl ModuleStore {
    /// A store in `dir` (created when first written).
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self { dir }
    }

    fn blob(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        // Only a digest names a file: nothing else may walk the directory.
        let valid = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit());
        valid.then(|| self.dir.as_ref().map(|d| d.join("sha256").join(hex)))?
    }

    fn resolution(&self, resolved: &str) -> Option<PathBuf> {
        let hex = resolved.strip_prefix("sha256:").unwrap_or(resolved);
        let valid = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit());
        valid.then(|| self.dir.as_ref().map(|d| d.join("resolved").join(hex)))?
    }

    fn origin(&self, url: &str, digest: &str) -> Option<PathBuf> {
        let url_digest = strategy_host_wasm_runtime::digest(url.as_bytes());
        let blob = self.blob(digest)?;
        let name = blob.file_name()?.to_owned();
        self.dir
            .as_ref()
            .map(|d| d.join("urls").join(url_digest).join(name))
    }

    /// The module whose SHA-256 is `digest`, if held and once pulled from `url` (a module pinned
    /// by digest is served from the copy only for the URL that gave it, so a wrong URL is found
    /// out).
    pub fn pulled_from(&self, url: &str, digest: &str) -> Option<Vec<u8>> {
        self.origin(url, digest)?
            .exists()
            .then(|| self.module(digest))?
    }

    /// The module whose SHA-256 is `digest` (hex, or `sha256:hex`), if held and intact.
    pub fn module(&self, digest: &str) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.blob(digest)?).ok()?;
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        // A file damaged on disk is not served; it is pulled again.
        (strategy_host_wasm_runtime::digest(&bytes) == hex).then_some(bytes)
    }

    /// The module a resolved reference (`sha256:…` of a manifest, or of a download) held.
    pub fn resolved(&self, resolved: &str) -> Option<(String, Vec<u8>)> {
        let digest = std::fs::read_to_string(self.resolution(resolved)?).ok()?;
        let digest = digest.trim().to_owned();
        let bytes = self.module(&digest)?;
        Some((digest, bytes))
    }

    /// Keeps `bytes` (whose SHA-256 is `digest`, hex) as what `url` resolved to as `resolved`.
    ///
    /// # Errors
    /// The directory cannot be written.
    pub fn keep(
        &self,
        url: &str,
        resolved: &str,
        digest: &str,
        bytes: &[u8],
    ) -> std::io::Result<()> {
        let paths = (
            self.blob(digest),
            self.resolution(resolved),
            self.origin(url, digest),
        );
        let (Some(blob), Some(resolution), Some(origin)) = paths else {
            return Ok(());
        };
        if self.module(digest).is_none() {
            write_atomically(&blob, bytes)?;
        }
        write_atomically(&resolution, digest.as_bytes())?;
        write_atomically(&origin, b"")
    }
}

/// Writes through a temporary file and a rename, so a reader never sees half a module.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("store paths have a parent");
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile_in(dir)?;
    file.1.write_all(bytes)?;
    file.1.sync_all()?;
    std::fs::rename(&file.0, path)
}

fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let path = dir.join(format!(
        ".tmp-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    Ok((path.clone(), std::fs::File::create(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_modules_by_digest_and_what_a_reference_resolved_to() {
        let dir = tempfile::tempdir().unwrap();
        let store = ModuleStore::new(Some(dir.path().into()));
        let bytes = b"\0asm\x01\0\0\0".to_vec();
        let digest = strategy_host_wasm_runtime::digest(&bytes);
        let manifest = format!("sha256:{}", "b".repeat(64));
        assert_eq!(store.module(&digest), None);
        store
            .keep("oci://r/m:v1", &manifest, &digest, &bytes)
            .unwrap();
        assert_eq!(
            store.module(&format!("sha256:{digest}")),
            Some(bytes.clone())
        );
        assert_eq!(
            store.pulled_from("oci://r/m:v1", &digest),
            Some(bytes.clone())
        );
        assert_eq!(store.pulled_from("oci://r/other:v1", &digest), None);
        assert_eq!(store.resolved(&manifest), Some((digest.clone(), bytes)));
        // A damaged copy is not served, and names that are not digests reach no file.
        std::fs::write(dir.path().join("sha256").join(&digest), b"changed").unwrap();
        assert_eq!(store.module(&digest), None);
        assert_eq!(store.module("../../etc/passwd"), None);
        assert!(ModuleStore::new(None).module(&digest).is_none());
    }
}
