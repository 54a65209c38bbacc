//! Compiles the example strategies to `wasm32-unknown-unknown` and the Go examples to WASI
//! reactors (through `strategy-wasm-build`) and emits constants naming the `.wasm` files.

use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;

/// (crate name, constant name) of every example strategy built (`ALL` lists these).
const STRATEGIES: &[(&str, &str)] = &[
    ("strategy-deployment", "DEPLOYMENT"),
    ("strategy-configmap", "CONFIGMAP"),
    ("strategy-project", "PROJECT"),
];

/// (crate name, constant name) of the example admission policy modules: built like the
/// strategies but not in `ALL` (what `examples/run.sh` loads), since a policy guards every
/// resource and the walk-through turns it on by hand.
const POLICIES: &[(&str, &str)] = &[("strategy-owner-label", "OWNER_LABEL")];

/// (crate name, constant name) of the example authorizer modules: not in `ALL` either, since an
/// authorizer acts only where `--authorization-config` names it.
const AUTHORIZERS: &[(&str, &str)] = &[("strategy-protect-production", "PROTECT_PRODUCTION")];

/// (crate name, constant name) of the example version conversion modules: not in `ALL` either,
/// since each converts a resource only a user's CRD defines (Cluster API's MachineDeployment).
const CONVERSIONS: &[(&str, &str)] = &[(
    "strategy-machinedeployment-conversion",
    "MACHINEDEPLOYMENT_CONVERSION",
)];

/// (crate name, constant name) of the test programs built beside them: strategies that exist to
/// misbehave in a way a WAT fixture could not easily (e.g. a hook applying its own kind), or to
/// be a second version of an example (`strategy-configmap-strict`).
const TEST_PROGRAMS: &[(&str, &str)] = &[
    ("strategy-replicator", "REPLICATOR"),
    ("strategy-configmap-strict", "CONFIGMAP_STRICT"),
    ("strategy-owner-label-strict", "OWNER_LABEL_STRICT"),
    ("strategy-default-owner", "DEFAULT_OWNER"),
    (
        "strategy-machinedeployment-conversion-lossy",
        "MACHINEDEPLOYMENT_CONVERSION_LOSSY",
    ),
];

/// (package under `strategies/go`, constant name) of the Go examples, built with the Go
/// toolchain: two strategies, the owner-label admission policy and the MachineDeployment
/// conversion (ports of the Rust examples).
const GO_EXAMPLES: &[(&str, &str)] = &[
    ("deployment", "GO_DEPLOYMENT"),
    ("tenant", "GO_TENANT"),
    ("owner-label", "GO_OWNER_LABEL"),
    (
        "machinedeployment-conversion",
        "GO_MACHINEDEPLOYMENT_CONVERSION",
    ),
];

/// The hostile Go fixtures (`strategies/go/hostile/<name>`), each misbehaving in one way
/// (`HOSTILE_GO` lists them with their files).
const GO_HOSTILE: &[&str] = &["spin", "alloc", "panic", "stdout", "wasi", "exit"];

/// The module the host embeds (built again here so tests can load it into tables of their own).
const EMBEDDED: (&str, &str) = ("strategy-builtin", "BUILTIN");

fn main() {
    let root = strategy_wasm_build::workspace_root(2);
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    // Every strategy crate in one cargo invocation, those that link another's library (the
    // built-in kinds and the strict ConfigMap link the ConfigMap example) beside it.
    let crates: Vec<&str> = STRATEGIES
        .iter()
        .chain(TEST_PROGRAMS)
        .chain(POLICIES)
        .chain(AUTHORIZERS)
        .chain(CONVERSIONS)
        .chain([&EMBEDDED])
        .map(|(krate, _)| *krate)
        .collect();
    strategy_wasm_build::rerun_if_changed(&root, &crates);
    // (crate name, its `.wasm`) of everything built.
    let built: Vec<(&str, PathBuf)> = crates
        .iter()
        .copied()
        .zip(strategy_wasm_build::build(&root, &crates))
        .collect();
    let file = |krate: &str| {
        let (_, file) = built.iter().find(|(k, _)| *k == krate).unwrap();
        file.clone()
    };

    let mut consts = String::new();
    let mut all = String::from(
        "/// Every example strategy: (crate name, path of its `.wasm`).\npub const ALL: &[(&str, &str)] = &[\n",
    );
    for (krate, name) in STRATEGIES
        .iter()
        .chain(TEST_PROGRAMS)
        .chain(POLICIES)
        .chain(AUTHORIZERS)
        .chain(CONVERSIONS)
    {
        let path = file(krate).display().to_string();
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
        file(EMBEDDED.0).display().to_string()
    )
    .unwrap();
    all.push_str("];\n");
    writeln!(
        consts,
        "/// The strategy crates built above, all in one `cargo build`.\npub const BUILT_TOGETHER: &[&str] = &{crates:?};"
    )
    .unwrap();
    consts.push_str(&go_constants(&root));
    std::fs::write(out_dir.join("artifacts.rs"), consts + &all).unwrap();
}

/// Builds the Go examples and hostile fixtures and returns their constants.
fn go_constants(root: &std::path::Path) -> String {
    strategy_wasm_build::rerun_if_changed_go(root);
    let hostile: Vec<String> = GO_HOSTILE.iter().map(|n| format!("hostile/{n}")).collect();
    let packages: Vec<&str> = GO_EXAMPLES
        .iter()
        .map(|(package, _)| *package)
        .chain(hostile.iter().map(String::as_str))
        .collect();
    let files = strategy_wasm_build::build_go(root, &packages);
    let mut consts = String::new();
    for ((package, name), file) in GO_EXAMPLES.iter().zip(&files) {
        writeln!(
            consts,
            "/// The `.wasm` of the Go example `strategies/go/{package}`.\npub const {name}: &str = {:?};",
            file.display().to_string()
        )
        .unwrap();
    }
    consts.push_str("/// The hostile Go fixtures: (name, path of its `.wasm`).\npub const HOSTILE_GO: &[(&str, &str)] = &[\n");
    for (name, file) in GO_HOSTILE.iter().zip(&files[GO_EXAMPLES.len()..]) {
        writeln!(consts, "    ({name:?}, {:?}),", file.display().to_string()).unwrap();
    }
    consts.push_str("];\n");
    consts
}
