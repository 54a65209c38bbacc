//! A configuration file the server reads again when it changes, without a restart
//! (`--authentication-config`, `--authorization-config`): what it builds is swapped in whole; a
//! file that no longer reads keeps what the last good one built (the error is logged and counted
//! in kube-apiserver's `*_config_controller_automatic_reload*` metrics).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry as MetricsRegistry;

/// How often the file is looked at for changes.
const RELOAD_EVERY: Duration = Duration::from_secs(1);

/// Builds what a file's text configures, given what the last good text built (so parts whose
/// configuration did not change can be kept); the error says why the text is not a valid
/// configuration.
type Build<T> = dyn Fn(&str, Option<&T>) -> Result<T, InvalidConfiguration> + Send + Sync;

/// Why a configuration's text is not a valid configuration, in kube-apiserver's words.
#[derive(Debug, thiserror::Error)]
pub enum InvalidConfiguration {
    /// It is not YAML or JSON of the configuration's shape.
    #[error("decoding the configuration: {0}")]
    Decoding(#[from] serde_yaml::Error),
    /// It names a kind or version this server does not read.
    #[error("no kind \"{kind}\" is registered for version \"{api_version}\": expected {expected}")]
    Kind {
        /// The `kind` the text gives.
        kind: String,
        /// The `apiVersion` the text gives.
        api_version: String,
        /// The version and kind expected (`apiserver.config.k8s.io/v1 EncryptionConfiguration`).
        expected: &'static str,
    },
    /// Fields are invalid: every field error found, one per line.
    #[error("{}", .0.join("\n"))]
    Fields(Vec<String>),
}

impl InvalidConfiguration {
    /// Decodes `text` (YAML or JSON) as a `T`.
    ///
    /// # Errors
    /// The text is not of `T`'s shape.
    pub fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Self> {
        Ok(serde_yaml::from_str(text)?)
    }

    /// `Ok` when no field error was found.
    ///
    /// # Errors
    /// [`InvalidConfiguration::Fields`] with `errors`.
    pub fn check(errors: Vec<String>) -> Result<(), Self> {
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Self::Fields(errors))
        }
    }
}

/// Why a configuration file could not be loaded at start.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// It cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not a valid configuration.
    #[error("{path}: {source}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        source: InvalidConfiguration,
    },
}

/// The label of the reload metrics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    status: &'static str,
}

/// What a configuration file builds, kept current with the file.
pub struct ReloadedFile<T> {
    path: PathBuf,
    /// What the file configures, for the logs (`authentication`, `authorization`).
    what: &'static str,
    current: ArcSwap<T>,
    /// The text `current` was built from (or the last text that failed to build).
    loaded: Mutex<String>,
    build: Box<Build<T>>,
    /// Reloads by outcome (`success`, or `failure`: the last good configuration is kept).
    reloads: Family<ReloadLabels, Counter>,
    /// When each outcome last happened (seconds since the epoch).
    last_reload: Family<ReloadLabels, Gauge<f64, AtomicU64>>,
}

impl<T> std::fmt::Debug for ReloadedFile<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadedFile")
            .field("path", &self.path)
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

impl<T: Send + Sync + 'static> ReloadedFile<T> {
    /// What `build` makes of the file at `path` (the `what` configuration, in logs).
    ///
    /// # Errors
    /// The file cannot be read, or `build` refuses its text.
    pub fn load(
        path: &Path,
        what: &'static str,
        build: impl Fn(&str, Option<&T>) -> Result<T, InvalidConfiguration> + Send + Sync + 'static,
    ) -> Result<Arc<Self>, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let built = build(&text, None).map_err(|source| LoadError::Invalid {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Arc::new(Self {
            path: path.to_path_buf(),
            what,
            current: ArcSwap::from_pointee(built),
            loaded: Mutex::new(text),
            build: Box::new(build),
            reloads: Family::default(),
            last_reload: Family::default(),
        }))
    }

    /// What the last good text built.
    pub fn current(&self) -> Arc<T> {
        self.current.load_full()
    }

    /// Registers kube-apiserver's reload metrics, `{prefix}_automatic_reloads_total` and
    /// `{prefix}_automatic_reload_last_timestamp_seconds`, into `registry`.
    pub fn register(&self, registry: &mut MetricsRegistry, prefix: &str) {
        registry.register(
            format!("{prefix}_automatic_reloads"),
            format!(
                "Automatic reloads of the {} configuration, by status",
                self.what
            ),
            self.reloads.clone(),
        );
        registry.register(
            format!("{prefix}_automatic_reload_last_timestamp_seconds"),
            format!(
                "When the {} configuration was last reloaded, by status",
                self.what
            ),
            self.last_reload.clone(),
        );
    }

    fn count_reload(&self, status: &'static str) {
        let labels = ReloadLabels { status };
        self.reloads.get_or_create(&labels).inc();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.last_reload.get_or_create(&labels).set(now);
    }

    /// Reads the file again when its text changed; keeps the last good configuration when the
    /// new one does not build.
    pub fn reload(&self) {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return;
        };
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if *loaded == text {
            return;
        }
        let current = self.current.load_full();
        match (self.build)(&text, Some(&current)) {
            Ok(built) => {
                tracing::info!(path = %self.path.display(), "{} configuration reloaded", self.what);
                self.current.store(Arc::new(built));
                self.count_reload("success");
            }
            Err(e) => {
                tracing::error!(path = %self.path.display(), error = %e, "the {} configuration does not read; keeping the last good one", self.what);
                self.count_reload("failure");
            }
        }
        *loaded = text;
    }

    /// Looks at the file every second for as long as `self` lives.
    pub fn spawn_reloader(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(RELOAD_EVERY);
            loop {
                tick.tick().await;
                let Some(this) = weak.upgrade() else { return };
                let _ = tokio::task::spawn_blocking(move || this.reload()).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(text: &str, _: Option<&Vec<u32>>) -> Result<Vec<u32>, InvalidConfiguration> {
        let mut numbers = Vec::new();
        let mut errors = Vec::new();
        for n in text.split_whitespace() {
            match n.parse() {
                Ok(n) => numbers.push(n),
                Err(e) => errors.push(format!("{n:?}: {e}")),
            }
        }
        InvalidConfiguration::check(errors)?;
        Ok(numbers)
    }

    /// A fresh directory holding the file `config` with `text`, and that file's path.
    fn written(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn counted(file: &ReloadedFile<Vec<u32>>, status: &'static str) -> u64 {
        file.reloads.get_or_create(&ReloadLabels { status }).get()
    }

    #[test]
    fn a_changed_file_is_built_again_and_a_broken_one_keeps_the_last_good() {
        let (_dir, path) = written("1 2");
        let file = ReloadedFile::load(&path, "test", numbers).unwrap();
        assert_eq!(*file.current(), vec![1, 2]);
        file.reload();
        assert_eq!(
            counted(&file, "success"),
            0,
            "an unchanged file is not rebuilt"
        );

        std::fs::write(&path, "1 2 3").unwrap();
        file.reload();
        assert_eq!(*file.current(), vec![1, 2, 3]);
        assert_eq!(counted(&file, "success"), 1);

        std::fs::write(&path, "1 x").unwrap();
        file.reload();
        assert_eq!(*file.current(), vec![1, 2, 3]);
        assert_eq!(counted(&file, "failure"), 1);
        file.reload();
        assert_eq!(
            counted(&file, "failure"),
            1,
            "a broken text is reported once"
        );
    }

    #[test]
    fn a_file_that_does_not_build_at_start_is_an_error_naming_it() {
        let (dir, path) = written("x");
        let err = ReloadedFile::load(&path, "test", numbers).unwrap_err();
        assert!(err.to_string().starts_with(&path.display().to_string()));
        let missing = ReloadedFile::load(&dir.path().join("none"), "test", numbers).unwrap_err();
        assert!(matches!(missing, LoadError::Read { .. }));
    }
}
