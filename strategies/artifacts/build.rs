//! Compiles the example strategies to `wasm32-unknown-unknown` (through `strategy-wasm-build`)
//! and emits constants naming the `.wasm` files.

use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;

/// (crate name, constant name) of every example strategy built (`ALL` lists these).
const STRATEGIES: &[(&str, &str)] = &[
    ("strategy-deployment", "DEPLOYMENT"),
    ("strategy-configmap", "CONFIGMAP"),
    ("strategy-project", "PROJECT"),
];

/// (crate name, constant name) of the test programs built beside them: strategies that exist to
/// misbehave in a way a WAT fixture could not easily (e.g. a hook applying its own kind).
const TEST_PROGRAMS: &[(&str, &str)] = &[("strategy-replicator", "REPLICATOR")];

/// The module the host embeds (built again here so tests can load it into tables of their own).
/// It links the ConfigMap example's rules without its exports, so it builds in a cargo
/// invocation of its own: built together, cargo would unify the example's features and link
/// two sets of entry points.
const EMBEDDED: (&str, &str) = ("strategy-builtin", "BUILTIN");

fn main() {
    let root = strategy_wasm_build::workspace_root(2);
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let crates: Vec<&str> = STRATEGIES
        .iter()
        .chain(TEST_PROGRAMS)
        .map(|(krate, _)| *krate)
        .collect();
    strategy_wasm_build::rerun_if_changed(&root, &crates);
    strategy_wasm_build::rerun_if_changed(&root, &[EMBEDDED.0]);
    let files = strategy_wasm_build::build(&root, &crates);
    let embedded = strategy_wasm_build::build(&root, &[EMBEDDED.0]);

    let mut consts = String::new();
    let mut all = String::from(
        "/// Every example strategy: (crate name, path of its `.wasm`).\npub const ALL: &[(&str, &str)] = &[\n",
    );
    for ((krate, name), file) in STRATEGIES.iter().chain(TEST_PROGRAMS).zip(files) {
        let path = file.display().to_string();
        writeln!(
            consts,
            "/// The `.wasm` of `{krate}`.\npub const {name}: &str = {path:?};"
        )
        .unwrap();
        if STRATEGIES.iter().any(|(k, _)| k == krate) {
            writeln!(all, "    ({krate:?}, {name}),").unwrap();
        }
    }
    writeln!(
        consts,
        "/// The `.wasm` of `{}` (the built-in kinds' module).\npub const {}: &str = {:?};",
        EMBEDDED.0,
        EMBEDDED.1,
        embedded[0].display().to_string()
    )
    .unwrap();
    all.push_str("];\n");
    std::fs::write(out_dir.join("artifacts.rs"), consts + &all).unwrap();
}
