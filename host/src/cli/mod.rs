//! `strategy-host module test|diff`: an author's test runner. It runs a strategy module's write
//! phases on objects read from files, without a server, and prints what the module did
//! (`test`) or where two versions of it disagree (`diff`), using the same phase runner and
//! comparison as a rollout's shadow evaluation ([`crate::wasm::rollout::outcome`]).
//!
//! [`objects`] reads the input files, [`module`] loads modules and runs the phases,
//! [`output`] prints the reports. [`store`] is `strategy-host store restore|status`, for store
//! snapshots.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub mod module;
pub mod objects;
pub mod output;
pub mod registry;
pub mod store;

/// Why a `module` command could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An objects file is not JSON or YAML objects.
    #[error("{file}: {reason}")]
    Parse {
        /// The file.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A module was refused (not wasm, wrong ABI, bad manifest, ...).
    #[error("cannot load module {file}: {source}")]
    LoadModule {
        /// The module's file.
        file: String,
        /// The runtime's reason.
        #[source]
        source: crate::wasm_runtime::Error,
    },
    /// A module is not the strategy of an input object's kind.
    #[error("module {module} does not declare {resource} (the kind of {object}); it declares: {declared}")]
    UndeclaredKind {
        /// The module's name and file.
        module: String,
        /// The object's apiVersion and kind.
        resource: String,
        /// Where the object came from.
        object: String,
        /// The resources the module declares.
        declared: String,
    },
    /// `--update OLD NEW` with files holding different numbers of objects.
    #[error("--update {old} {new}: the files hold {old_count} and {new_count} objects; they are paired in order, so the counts must match")]
    UnpairedUpdate {
        /// The OLD file.
        old: String,
        /// The NEW file.
        new: String,
        /// Objects in OLD.
        old_count: usize,
        /// Objects in NEW.
        new_count: usize,
    },
    /// A registry or download could not give or take a module.
    #[error("{0}")]
    Registry(String),
    /// The wasm runtime could not start.
    #[error("cannot start the wasm runtime: {0:#}")]
    Runtime(anyhow::Error),
}

/// `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Test strategy modules on objects from files, without a server.
///
/// Each object is run through `create`, `update` (onto itself) and `delete`, as a request with
/// `dryRun` by the user `module-test` would be; `--update OLD NEW` adds an update from the
/// objects of OLD to those of NEW. Nothing is stored and the modules' get/list/apply host
/// functions answer with an error.
#[derive(Debug, Parser)]
#[command(name = "module", bin_name = "strategy-host module")]
pub struct ModuleCli {
    /// What to do.
    #[command(subcommand)]
    pub command: ModuleCommand,
}

/// The `module` subcommands.
#[derive(Debug, Subcommand)]
pub enum ModuleCommand {
    /// Print what a module does with each object in each phase.
    ///
    /// For each object and phase: admitted or rejected, the object after the phase as a JSON
    /// patch from the input (what the module defaulted or rewrote), field errors, warnings and
    /// failures (trap, deadline, ...). Exits 0 when it ran, even if objects were rejected; 2
    /// when a file or module cannot be read.
    Test(TestArgs),
    /// Run two versions of a module on the same objects and print where they differ.
    ///
    /// Only differences are printed: the NEW version rejects, admits, rejects for other causes,
    /// leaves a different object (a JSON patch from OLD's object to NEW's), warns differently,
    /// or fails, as a rollout's shadow evaluation reports them. Exits 0 when they agree, 1 when
    /// they differ, 2 on errors, like diff(1).
    Diff(DiffArgs),
    /// Push a module to an OCI registry as a CNCF Wasm artifact (config
    /// `application/vnd.wasm.config.v0+json`, one `application/wasm` layer) and print the
    /// `spec.url` and `spec.digest` that pin it. Credentials come from `docker login`'s
    /// config.json.
    Push(registry::PushArgs),
    /// Pull a module from an OCI registry (or an https:// URL) into a file and print its digest.
    Pull(registry::PullArgs),
}

/// `module test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The module: a `.wasm` file, or a URL (`oci://…`, `https://…`) pulled now.
    #[arg(value_name = "MODULE.wasm|URL")]
    pub module: PathBuf,
    /// The objects, and how to print the results.
    #[command(flatten)]
    pub inputs: Inputs,
}

/// `module diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The version in force: a `.wasm` file or a URL.
    #[arg(value_name = "OLD.wasm|URL")]
    pub old: PathBuf,
    /// The candidate version: a `.wasm` file or a URL.
    #[arg(value_name = "NEW.wasm|URL")]
    pub new: PathBuf,
    /// The objects, and how to print the differences.
    #[command(flatten)]
    pub inputs: Inputs,
}

/// The inputs and output format both commands take.
#[derive(Debug, Args)]
pub struct Inputs {
    /// Files of objects, JSON or YAML; a file may hold several YAML documents or a `List`.
    #[arg(value_name = "OBJECTS", required_unless_present = "update")]
    pub objects: Vec<PathBuf>,
    /// Also run an update from the objects in OLD to those in NEW (paired in order).
    /// Repeatable.
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"], action = clap::ArgAction::Append)]
    pub update: Vec<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Cache compiled modules here by content digest, as the server does (worth it for large
    /// modules, such as Go's, which take seconds to compile); no cache by default.
    #[arg(long, env = "STRATEGY_HOST_MODULE_CACHE_DIR")]
    pub module_cache_dir: Option<PathBuf>,
    /// How modules given by URL are pulled.
    #[command(flatten)]
    pub registry: registry::RegistryArgs,
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people.
    Table,
    /// JSON for scripts.
    Json,
}

/// Runs a `module` command, printing its report on stdout and errors on stderr; the exit
/// status is 0 (ran; for `diff`: the versions agree), 1 (`diff`: they differ) or 2 (error).
pub async fn run(cli: ModuleCli) -> ExitCode {
    let result = match cli.command {
        ModuleCommand::Test(args) => module::test(args).await,
        ModuleCommand::Diff(args) => module::diff(args).await,
        ModuleCommand::Push(args) => registry::push(args).await,
        ModuleCommand::Pull(args) => registry::pull(args).await,
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_takes_pairs_of_files_and_objects_are_optional_with_it() {
        let cli = ModuleCli::try_parse_from([
            "module", "test", "m.wasm", "--update", "a", "b", "--update", "c", "d", "-o", "json",
        ])
        .unwrap();
        let ModuleCommand::Test(args) = cli.command else {
            panic!("not test")
        };
        assert!(args.inputs.objects.is_empty());
        assert_eq!(args.inputs.update.len(), 4);
        assert_eq!(args.inputs.output, Format::Json);
        assert!(ModuleCli::try_parse_from(["module", "test", "m.wasm"]).is_err());
        assert!(
            ModuleCli::try_parse_from(["module", "diff", "a.wasm", "b.wasm", "--update", "x"])
                .is_err()
        );
    }
}
