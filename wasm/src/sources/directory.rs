//! Hot reload from a watched directory: every `*.wasm` in it is a source (`dir:<file name>`);
//! writing one offers a new version to the table, deleting one unloads it. A sidecar
//! `<name>.rollout.json` beside `<name>.wasm` holds its rollout (`{"mode": "Shadow"}`, or
//! `{"mode": "Canary", "weight": 10}`; the same fields as a `StrategyModule`'s `spec.rollout`):
//! while it says Shadow or Canary, a new `<name>.wasm` is staged beside the version in force
//! instead of replacing it; writing `{"mode": "Active"}` (or removing the sidecar) promotes it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind, MetadataKind, ModifyKind};
use notify::{RecursiveMode, Watcher};

use crate::rollout::RolloutSpec;
use crate::ModuleTable;

/// How long the watcher waits for a burst of events about a file to settle.
const SETTLE: Duration = Duration::from_millis(30);

/// Watches a directory and feeds its modules to a [`ModuleTable`]. Dropping it stops watching.
pub struct DirectoryWatcher {
    _watcher: notify::RecommendedWatcher,
    _worker: thread::JoinHandle<()>,
    reads: Arc<AtomicU64>,
}

impl std::fmt::Debug for DirectoryWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectoryWatcher").finish_non_exhaustive()
    }
}

/// The source name of a module file.
pub fn source_name(path: &Path) -> String {
    format!(
        "dir:{}",
        path.file_name().unwrap_or_default().to_string_lossy()
    )
}

fn is_module(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "wasm")
}

/// Whether an event may mean a file's content changed. Opening, reading and closing a file
/// unwritten are events too (inotify's `IN_OPEN`, `IN_ACCESS`, `IN_CLOSE_NOWRITE`), and the
/// watcher reads every file it is told about: acting on those would read the file again and
/// again for as long as it exists. Closing a file written (`IN_CLOSE_WRITE`) counts.
fn may_change_content(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)) => false,
        _ => true,
    }
}

/// The suffix of a module's rollout sidecar.
const ROLLOUT_SUFFIX: &str = ".rollout.json";

/// The module a changed path is about: the path itself, or the `.wasm` of a rollout sidecar.
fn module_of(path: &Path) -> Option<PathBuf> {
    if is_module(path) {
        return Some(path.to_owned());
    }
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(ROLLOUT_SUFFIX)?;
    Some(path.with_file_name(format!("{stem}.wasm")))
}

/// A rollout sidecar that cannot be used.
#[derive(Debug, thiserror::Error)]
enum SidecarError {
    /// It cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// It is not JSON.
    #[error("{}: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// Its fields are wrong.
    #[error("{}: {}", path.display(), causes.join("; "))]
    Invalid { path: PathBuf, causes: Vec<String> },
}

/// The rollout in a module's sidecar (Active when there is none).
fn rollout_of(module: &Path) -> Result<RolloutSpec, SidecarError> {
    let stem = module.file_stem().unwrap_or_default().to_string_lossy();
    let sidecar = module.with_file_name(format!("{stem}{ROLLOUT_SUFFIX}"));
    let text = match std::fs::read_to_string(&sidecar) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RolloutSpec::default()),
        Err(source) => {
            return Err(SidecarError::Read {
                path: sidecar,
                source,
            })
        }
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(source) => {
            return Err(SidecarError::Json {
                path: sidecar,
                source,
            })
        }
    };
    RolloutSpec::from_json(Some(&value), "rollout").map_err(|errors| SidecarError::Invalid {
        path: sidecar,
        causes: errors.iter().map(ToString::to_string).collect(),
    })
}

impl DirectoryWatcher {
    /// Loads every `*.wasm` in `dir` (blocking; a refused file is logged and recorded, not
    /// fatal), then watches `dir` for changes on a thread of its own.
    ///
    /// # Errors
    ///
    /// The directory cannot be read or watched.
    pub fn start(table: Arc<ModuleTable>, dir: impl Into<PathBuf>) -> notify::Result<Self> {
        let dir = dir.into();
        let (tx, rx) = mpsc::channel::<PathBuf>();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
                Ok(event) if may_change_content(&event.kind) => {
                    for path in event.paths.iter().filter_map(|p| module_of(p)) {
                        let _ = tx.send(path);
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("strategy directory watch error: {e}"),
            })?;
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;
        // Watch first, then scan: a file written in between is seen by one or the other.
        let mut initial: Vec<PathBuf> = std::fs::read_dir(&dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_module(p))
            .collect();
        initial.sort();
        let reads = Arc::new(AtomicU64::new(0));
        for path in &initial {
            sync(&table, path, &reads);
        }
        let counted = reads.clone();
        let worker = thread::Builder::new()
            .name("strategy-dir".into())
            .spawn(move || run(table, rx, &counted))?;
        tracing::info!(dir = %dir.display(), modules = initial.len(), "watching the strategy directory");
        Ok(Self {
            _watcher: watcher,
            _worker: worker,
            reads,
        })
    }

    /// How many times a module file was read (once at start, then once per change).
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

/// Collects changed paths until the events settle, then brings each in line with the disk.
/// Ends when the watcher (the sender) is dropped.
fn run(table: Arc<ModuleTable>, rx: mpsc::Receiver<PathBuf>, reads: &AtomicU64) {
    while let Ok(first) = rx.recv() {
        let mut changed = BTreeSet::from([first]);
        while let Ok(more) = rx.recv_timeout(SETTLE) {
            changed.insert(more);
        }
        for path in &changed {
            sync(&table, path, reads);
        }
    }
}

/// Loads the file at `path`, or unloads its source when it is gone.
fn sync(table: &ModuleTable, path: &Path, reads: &AtomicU64) {
    let source = source_name(path);
    reads.fetch_add(1, Ordering::Relaxed);
    match std::fs::read(path) {
        Ok(bytes) => match rollout_of(path) {
            // Refusals are logged and recorded by the table.
            Ok(rollout) => {
                let _ = table.stage(&source, &bytes, &rollout, None, &|_| Ok(()));
            }
            Err(e) => {
                tracing::warn!(
                    source,
                    "rollout sidecar refused; the module is left as it is: {e}"
                )
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            table.unload(&source);
        }
        Err(e) => tracing::warn!(path = %path.display(), "cannot read strategy module: {e}"),
    }
}
