//! Compiles modules once: an on-disk cache of compiled artifacts keyed by the module's content
//! digest and the engine's compatibility hash, so a restart or a second replica skips Cranelift.

use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use wasmtime::{Engine, Module};

use super::error::{Error, Result};

/// Where compiled modules live (`None`: compile every time).
pub(crate) struct ModuleCache {
    dir: Option<PathBuf>,
    engine_hash: String,
}

impl ModuleCache {
    pub(crate) fn new(dir: Option<PathBuf>, engine: &Engine) -> std::io::Result<Self> {
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir)?;
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        Ok(Self {
            dir,
            engine_hash: format!("{:016x}", h.finish()),
        })
    }

    fn path(&self, digest: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{digest}-{}.cwasm", self.engine_hash)))
    }

    /// The compiled module whose SHA-256 is `digest`, when the cache holds it and it loads
    /// (`engine` must be the one the cache was made for).
    pub(crate) fn cached(&self, engine: &Engine, digest: &str) -> Option<Module> {
        let path = self.path(digest)?;
        let artifact = std::fs::read(&path).ok()?;
        match deserialize(engine, &artifact) {
            Ok(module) => Some(module),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "ignoring unusable cached module");
                None
            }
        }
    }

    /// Compiles `bytes` (whose SHA-256 is `digest`) with the cache's engine and stores the
    /// result.
    pub(crate) fn compile(&self, engine: &Engine, digest: &str, bytes: &[u8]) -> Result<Module> {
        let module = compile(engine, digest, bytes, "optimized")?;
        let path = self.path(digest);
        if let Some(path) = &path {
            if let Err(e) = store(&module, path) {
                tracing::warn!(path = %path.display(), error = %e, "could not cache a compiled module");
            }
        }
        Ok(module)
    }
}

/// Compiles a module, saying so: a large module (Go's) takes seconds, and a waiting start is
/// explained. `tier` names the code it makes (baseline or optimized).
pub(crate) fn compile(engine: &Engine, digest: &str, bytes: &[u8], tier: &str) -> Result<Module> {
    let started = std::time::Instant::now();
    tracing::info!(
        digest,
        bytes = bytes.len(),
        tier,
        "compiling a strategy module"
    );
    let module = Module::new(engine, super::data_segments::merge(bytes))
        .map_err(|e| Error::Compile(super::error::one_line(format_args!("{e:#}"))))?;
    tracing::info!(
        digest,
        tier,
        seconds = format_args!("{:.1}", started.elapsed().as_secs_f64()),
        "compiled a strategy module"
    );
    Ok(module)
}

/// Loads a compiled artifact this cache wrote.
fn deserialize(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Module> {
    #[allow(unsafe_code)]
    // SAFETY: `artifact` was read from the cache directory, where only `store` below writes, and
    // only the output of `Module::serialize` from an engine with the same compatibility hash
    // (which is in the file name; wasmtime also checks its version and settings in the header).
    // The bytes are copied, so later changes to the file cannot affect the module. The cache
    // directory must be as trusted as the host binary itself.
    unsafe {
        Module::deserialize(engine, artifact)
    }
}

/// Writes a compiled artifact atomically (temporary file, then rename), so a reader never sees
/// half of it.
fn store(module: &Module, path: &Path) -> anyhow::Result<()> {
    let artifact = module.serialize().map_err(|e| anyhow::anyhow!("{e:#}"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(&artifact)?;
    tmp.persist(path)?;
    Ok(())
}
