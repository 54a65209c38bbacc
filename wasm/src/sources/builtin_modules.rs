//! Modules built into the binary: the strategy of the built-in kinds (configmaps, secrets,
//! serviceaccounts, events, leases), compiled from `strategies/builtin` by the build script and
//! loaded at start like any other source. Any other source serving the same resource takes
//! over from it, and hands it back when removed.

use crate::module_table::BUILTIN_SOURCE_PREFIX;
use crate::ModuleTable;
use strategy_host_wasm_runtime::Result;

/// The built-in kinds' module (`strategies/builtin`).
static BUILTIN_KINDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/builtin.wasm"));

/// The source name of the built-in kinds' module in the table and its statuses.
pub fn source() -> String {
    format!("{BUILTIN_SOURCE_PREFIX}kinds")
}

/// Loads every built-in module into `table`. Blocking (compiles, or reads the module cache):
/// call it off the async workers.
///
/// # Errors
/// A built-in module that does not load (a build defect: the binary's own module is refused).
pub fn load(table: &ModuleTable) -> Result<()> {
    table.load(&source(), BUILTIN_KINDS).map(|_| ())
}
