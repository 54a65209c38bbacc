//! Loads the modules `strategy-host module test|diff` names and runs their phases on the input
//! objects through [`crate::wasm::rollout::evaluate`], comparing two versions with
//! [`crate::wasm::rollout::differences`].

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use super::objects::{read_objects, InputObject};
use super::output::{self, DiffRow, PhaseRow};
use super::registry::RegistryArgs;
use super::{DiffArgs, Error, Inputs, Result, TestArgs};
use crate::admission_policy::{AdmissionAttributes, AdmissionPhase, Operation};
use crate::strategy::StrategyContext;
use crate::user::UserInfo;
use crate::wasm::rollout::{differences, evaluate, Outcome, Role, Verb};
use crate::wasm::{Runtime, RuntimeConfig, WasmStrategy};
use crate::wasm_runtime::StrategyModule;

/// The user the phases run as: no one real, so a module's user checks are visible.
pub const TEST_USER: &str = "module-test";

/// One phase to run on one input object (and, for `--update OLD NEW`, its old object).
#[derive(Debug, Clone)]
pub struct Case {
    /// The object the phase is about (the new object of an update).
    pub object: InputObject,
    /// The phase.
    pub verb: Verb,
    /// The old object of an update from another object; `None` for an update onto itself.
    pub old: Option<InputObject>,
}

impl Case {
    /// The phase as reports name it: `create`, `update`, `delete`, or `update from SOURCE`.
    pub fn phase(&self) -> String {
        match &self.old {
            Some(old) => format!("update from {}", old.source),
            None => self.verb.verb().to_owned(),
        }
    }
}

/// Reads the inputs into cases: `create`, `update` onto itself and `delete` for every object,
/// in file order, then the `--update` pairs.
///
/// # Errors
///
/// A file cannot be read or parsed, or an `--update` pair holds different numbers of objects.
pub fn cases(inputs: &Inputs) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for path in &inputs.objects {
        for object in read_objects(path)? {
            for verb in [Verb::Create, Verb::Update, Verb::Delete] {
                cases.push(Case {
                    object: object.clone(),
                    verb,
                    old: None,
                });
            }
        }
    }
    for pair in inputs.update.chunks(2) {
        let [old_path, new_path] = pair else {
            unreachable!("clap takes --update's values in pairs")
        };
        let (olds, news) = (read_objects(old_path)?, read_objects(new_path)?);
        if olds.len() != news.len() {
            return Err(Error::UnpairedUpdate {
                old: old_path.display().to_string(),
                new: new_path.display().to_string(),
                old_count: olds.len(),
                new_count: news.len(),
            });
        }
        for (old, object) in olds.into_iter().zip(news) {
            cases.push(Case {
                object,
                verb: Verb::Update,
                old: Some(old),
            });
        }
    }
    Ok(cases)
}

/// A module loaded from a file, as the strategy a server would serve.
#[derive(Debug)]
pub struct LoadedModule {
    file: String,
    strategy: WasmStrategy,
}

impl LoadedModule {
    /// Reads (or pulls, for a URL), compiles and checks the module at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be read, or the runtime refuses the module.
    pub async fn load(runtime: &Runtime, path: &Path, registry: &RegistryArgs) -> Result<Self> {
        let bytes = super::registry::module_bytes(path, registry).await?;
        let file = path.display().to_string();
        // Compiling is blocking work (Cranelift).
        let rt = runtime.clone();
        let loaded = tokio::task::spawn_blocking(move || StrategyModule::load(&rt, &bytes))
            .await
            .expect("loading a module does not panic");
        let module = loaded.map_err(|source| Error::LoadModule {
            file: file.clone(),
            source,
        })?;
        Ok(Self {
            file,
            strategy: WasmStrategy::new(runtime.clone(), Arc::new(module)),
        })
    }

    /// The context of a dry-run request by [`TEST_USER`] for `object`, whose kind this module
    /// must declare.
    ///
    /// # Errors
    ///
    /// [`Error::UndeclaredKind`].
    pub fn context(&self, object: &InputObject) -> Result<(StrategyContext, Role)> {
        let api_version = object.object["apiVersion"].as_str().unwrap_or("");
        let kind = object.object["kind"].as_str().unwrap_or("");
        let (group, version) = strategy_host_apimachinery::group_version(api_version);
        let manifest = self.strategy.module().manifest();
        if manifest.admission_policy.is_some() {
            return Ok(policy_context(object, group, version, kind));
        }
        let resource = manifest
            .resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .ok_or_else(|| Error::UndeclaredKind {
                module: format!("{:?} ({})", manifest.name, self.file),
                resource: format!("{api_version} {kind}"),
                object: object.source.clone(),
                declared: manifest
                    .resources
                    .iter()
                    .map(|r| match r.group.as_str() {
                        "" => format!("{} {}", r.version, r.kind),
                        g => format!("{g}/{} {}", r.version, r.kind),
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        Ok((test_context(object, resource.clone()), Role::Strategy))
    }

    /// Whether the module is asked about `verb`: always for a strategy; for an admission policy,
    /// when one of its declared resource rules names the operation (`*` names all).
    fn asked_about(&self, verb: Verb) -> bool {
        let Some(policy) = &self.strategy.module().manifest().admission_policy else {
            return true;
        };
        crate::admission::rules::Rule::list(policy.match_resources.get("resourceRules"))
            .iter()
            .any(|rule| rule.names_operation(verb.as_str()))
    }

    /// Runs `case` on this module.
    ///
    /// # Errors
    ///
    /// [`Error::UndeclaredKind`]; a module's own failure is part of the [`Outcome`].
    pub async fn run(&self, case: &Case) -> Result<Outcome> {
        let (ctx, role) = self.context(&case.object)?;
        if let Some(old) = &case.old {
            self.context(old)?;
        }
        if !self.asked_about(case.verb) {
            // A policy whose rules never name the operation is not asked: the write goes on.
            return Ok(Outcome {
                result: Ok(Default::default()),
                object: (case.verb != Verb::Delete).then(|| case.object.object.clone()),
                latency: std::time::Duration::ZERO,
            });
        }
        // An update onto itself passes the object as its own old object, so what the strategy
        // rewrites on update is kept in the outcome.
        let old = match (&case.old, case.verb) {
            (Some(old), _) => Some(&old.object),
            (None, Verb::Update) => Some(&case.object.object),
            (None, _) => None,
        };
        Ok(evaluate(
            &self.strategy,
            &role,
            &ctx,
            case.verb,
            case.object.object.clone(),
            old,
        )
        .await)
    }
}

/// The context of a dry-run request by [`TEST_USER`] asking an admission policy module (which
/// serves no resource of its own) for its verdict on `object`: the validating phase, the
/// resource named by the object's `apiVersion` and `kind` (plural: the kind in lower case with
/// an `s`), namespaced when the object has a namespace.
fn policy_context(
    object: &InputObject,
    group: &str,
    version: &str,
    kind: &str,
) -> (StrategyContext, Role) {
    let namespace = object.object["metadata"]["namespace"]
        .as_str()
        .map(String::from);
    let resource = crate::strategy::ResourceInfo {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
        plural: format!("{}s", kind.to_lowercase()),
        namespaced: namespace.is_some(),
    };
    let attributes = AdmissionAttributes {
        // The phase's verb sets the operation.
        operation: Operation::Create,
        phase: AdmissionPhase::Validate,
        name: object.object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        namespace,
        subresource: None,
    };
    (test_context(object, resource), Role::Policy(attributes))
}

/// The context of a dry-run request by [`TEST_USER`] about `object` of `resource`.
fn test_context(object: &InputObject, resource: crate::strategy::ResourceInfo) -> StrategyContext {
    StrategyContext {
        resource,
        dry_run: true,
        request_id: format!("{TEST_USER}/{}", object.source),
        hook_depth: 0,
        user: Arc::new(UserInfo {
            username: TEST_USER.into(),
            ..UserInfo::default()
        }),
    }
}

/// The runtime the commands load modules into: the server's limits, few instances (phases run
/// one at a time), the compilation cache `inputs` names, if any.
fn runtime(inputs: &Inputs) -> Result<Runtime> {
    Runtime::new(RuntimeConfig {
        max_instances: 4,
        cache_dir: inputs.module_cache_dir.clone(),
        ..RuntimeConfig::default()
    })
    .map_err(Error::Runtime)
}

/// `module test`: prints every case's outcome.
///
/// # Errors
///
/// An input or module cannot be read, or the module does not declare an object's kind.
pub async fn test(args: TestArgs) -> Result<ExitCode> {
    let cases = cases(&args.inputs)?;
    let runtime = runtime(&args.inputs)?;
    let module = LoadedModule::load(&runtime, &args.module, &args.inputs.registry).await?;
    let mut rows = Vec::new();
    for case in &cases {
        let outcome = module.run(case).await?;
        rows.push(PhaseRow::new(case, &outcome));
    }
    output::print_test(&module.file, &rows, args.inputs.output);
    Ok(ExitCode::SUCCESS)
}

/// `module diff`: prints where NEW's outcome differs from OLD's; exit status 1 when any does.
///
/// # Errors
///
/// As [`test()`], for either module.
pub async fn diff(args: DiffArgs) -> Result<ExitCode> {
    let cases = cases(&args.inputs)?;
    let runtime = runtime(&args.inputs)?;
    let old = LoadedModule::load(&runtime, &args.old, &args.inputs.registry).await?;
    let new = LoadedModule::load(&runtime, &args.new, &args.inputs.registry).await?;
    let mut rows = Vec::new();
    for case in &cases {
        let (in_force, candidate) = (old.run(case).await?, new.run(case).await?);
        for d in differences(&in_force, &candidate) {
            rows.push(DiffRow::new(case, d));
        }
    }
    output::print_diff(&old.file, &new.file, cases.len(), &rows, args.inputs.output);
    Ok(if rows.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The JSON patch from the input object of `case` to the object after the phase (none for
/// `delete` or a failed call).
pub(super) fn patch_from_input(case: &Case, outcome: &Outcome) -> Option<Value> {
    let after = outcome.object.as_ref().filter(|_| outcome.result.is_ok())?;
    let patch = json_patch::diff(&case.object.object, after);
    Some(serde_json::to_value(patch).expect("a JSON patch serializes"))
}
