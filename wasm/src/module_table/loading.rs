//! What the table is compiling now, and whether the server's first load of modules is still
//! running: what `/readyz` and the startup gate report while a server starts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A version being compiled (or taken from the compilation cache) and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiling {
    /// Its source, e.g. `dir:tenants_go.wasm`.
    pub source: String,
    /// The module's size.
    pub bytes: usize,
    /// How long it has been compiling.
    pub elapsed: Duration,
}

impl std::fmt::Display for Compiling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} bytes, {} s so far)",
            self.source,
            self.bytes,
            self.elapsed.as_secs()
        )
    }
}

/// The table's loads in progress.
#[derive(Debug, Default)]
pub(super) struct Loading {
    compiling: Mutex<BTreeMap<u64, (String, usize, Instant)>>,
    next: std::sync::atomic::AtomicU64,
    starting: AtomicBool,
}

/// Removes its entry when the compile ends, however it ends.
pub(super) struct CompileGuard<'a> {
    loading: &'a Loading,
    id: u64,
}

impl Drop for CompileGuard<'_> {
    fn drop(&mut self) {
        self.loading
            .compiling
            .lock()
            .expect("compiling")
            .remove(&self.id);
    }
}

impl Loading {
    /// Records that `source`'s version of `bytes` bytes is compiling until the guard drops.
    pub(super) fn begin(&self, source: &str, bytes: usize) -> CompileGuard<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.compiling
            .lock()
            .expect("compiling")
            .insert(id, (source.to_owned(), bytes, Instant::now()));
        CompileGuard { loading: self, id }
    }

    pub(super) fn compiling(&self) -> Vec<Compiling> {
        self.compiling
            .lock()
            .expect("compiling")
            .values()
            .map(|(source, bytes, since)| Compiling {
                source: source.clone(),
                bytes: *bytes,
                elapsed: since.elapsed(),
            })
            .collect()
    }

    pub(super) fn set_starting(&self, starting: bool) {
        self.starting.store(starting, Ordering::Release);
    }

    pub(super) fn starting(&self) -> bool {
        self.starting.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compile_is_listed_until_its_guard_drops() {
        let loading = Loading::default();
        let guard = loading.begin("dir:tenants_go.wasm", 5_989_851);
        let listed = loading.compiling();
        assert_eq!(listed.len(), 1);
        assert!(listed[0]
            .to_string()
            .starts_with("dir:tenants_go.wasm (5989851 bytes, 0 s"));
        drop(guard);
        assert!(loading.compiling().is_empty());
        assert!(!loading.starting());
        loading.set_starting(true);
        assert!(loading.starting());
    }
}
