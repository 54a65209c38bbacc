//! A module's manifest, checked: the ABI version (major and minor), the resources it binds, the operations it
//! implements, the host functions it asks for against the ones it imports, and the resources
//! its hooks may apply.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use wasmtime::{ExternType, Module, ValType};

use super::abi::{self, AbiVersion, HostFunction, Operation};
use super::error::{Error, Result};
use super::policy_declaration::PolicyDeclaration;
use super::wasi::WASI_MODULE;
use strategy_host_contract::strategy::ResourceInfo;

/// The names of the host functions the runtime's linker defines.
pub(crate) const HOST_FUNCTIONS: [&str; 4] = ["log", "get", "list", "apply"];

/// Host functions a manifest may ask for, and what `apply` may write.
#[derive(Debug, Clone, Default)]
pub(crate) struct Grants {
    pub(crate) get: bool,
    pub(crate) list: bool,
    pub(crate) apply: bool,
    /// The resources `apply` may write, sorted (shared: every call's state holds a copy).
    pub(crate) applies: Arc<[GroupKind]>,
}

/// What a loaded module declared about itself.
#[derive(Debug, Clone)]
pub struct ModuleManifest {
    /// The module's name.
    pub name: String,
    /// The resources it is the strategy of.
    pub resources: Vec<ResourceInfo>,
    /// The ABI version it was built for (one the host serves).
    pub abi_version: AbiVersion,
    /// An admission policy module's declaration (then `resources` is empty).
    pub admission_policy: Option<PolicyDeclaration>,
    /// An authorizer module's declaration (then `resources` is empty, and there is no
    /// admission policy).
    pub authorizer: Option<AuthorizerDeclaration>,
    operations: BTreeSet<i32>,
    pub(crate) grants: Grants,
}

/// An authorizer module's declaration (ABI 1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthorizerDeclaration {
    /// Whether a failed call ends the authorizer chain (`failurePolicy: Deny`) rather than
    /// letting the next authorizer decide (`NoOpinion`, the default).
    pub deny_on_failure: bool,
}

impl AuthorizerDeclaration {
    /// Checks a manifest's authorizer declaration (ABI 1.5, alone in its module).
    fn from_abi(m: &abi::Manifest, abi_version: AbiVersion) -> Result<Option<Self>> {
        let Some(a) = &m.authorizer else {
            return Ok(None);
        };
        let bad = |why: &str| Err(Error::Manifest(format!("authorizer: {why}")));
        if abi_version.minor < 5 {
            return bad("authorizers need ABI 1.5 or later");
        }
        if !m.resources.is_empty() || m.admission_policy.is_some() {
            return bad("a module is a strategy, an admission policy or an authorizer, never two");
        }
        if m.operations != [Operation::Authorize as i32] {
            return bad("an authorizer implements the authorize operation, and only it");
        }
        if m.host_functions
            .iter()
            .any(|f| *f != HostFunction::Log as i32)
        {
            return bad(
                "an authorizer is asked on every request and reads nothing: it may only log",
            );
        }
        let deny_on_failure = match a.failure_policy.as_str() {
            "" | "NoOpinion" => false,
            "Deny" => true,
            other => {
                return bad(&format!(
                    "unknown failure policy {other:?} (NoOpinion or Deny)"
                ))
            }
        };
        Ok(Some(Self { deny_on_failure }))
    }
}

/// A resource named by API group and kind, whatever its version (Kubernetes' `GroupKind`): what
/// a manifest lists among the resources its hooks may apply.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupKind {
    /// The API group; `""` is the core group.
    pub group: String,
    /// The kind, e.g. `Quota`.
    pub kind: String,
}

impl fmt::Display for GroupKind {
    /// `Kind.group`, or `Kind` for the core group, as Kubernetes writes a GroupKind.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.group.as_str() {
            "" => f.write_str(&self.kind),
            group => write!(f, "{}.{group}", self.kind),
        }
    }
}

impl ModuleManifest {
    /// Checks a decoded manifest.
    pub(crate) fn from_abi(m: abi::Manifest) -> Result<Self> {
        let abi_version = AbiVersion {
            major: m.abi_version,
            minor: m.abi_minor_version,
        };
        if !abi_version.is_served() {
            return Err(Error::AbiVersion {
                found: abi_version,
                expected: AbiVersion::HOST,
            });
        }
        if m.name.is_empty() || m.name.len() > 253 {
            return Err(Error::Manifest(
                "the module's name must have 1 to 253 characters".into(),
            ));
        }
        let authorizer = AuthorizerDeclaration::from_abi(&m, abi_version)?;
        let admission_policy =
            match &m.admission_policy {
                Some(_) if abi_version.minor < 2 => {
                    return Err(Error::Manifest(
                        "admission policies need ABI 1.2 or later".into(),
                    ))
                }
                Some(_) if !m.resources.is_empty() => return Err(Error::Manifest(
                    "a module is either a strategy (resources) or an admission policy, not both"
                        .into(),
                )),
                Some(p) => Some(PolicyDeclaration::from_abi(p, &m.operations)?),
                None if m.resources.is_empty() && authorizer.is_none() => {
                    return Err(Error::Manifest("no resources".into()))
                }
                None => None,
            };
        let mut resources = Vec::new();
        for r in &m.resources {
            let namespaced = match r.scope() {
                abi::Scope::Namespaced => true,
                abi::Scope::Cluster => false,
                abi::Scope::Unspecified => {
                    return Err(Error::Manifest(format!(
                        "resource {:?} has no scope",
                        r.kind
                    )));
                }
            };
            if r.version.is_empty() || r.kind.is_empty() || r.plural.is_empty() {
                return Err(Error::Manifest(
                    "a resource needs a version, kind and plural".into(),
                ));
            }
            if r.plural != r.plural.to_lowercase() {
                return Err(Error::Manifest(format!(
                    "plural {:?} must be lowercase",
                    r.plural
                )));
            }
            resources.push(ResourceInfo {
                group: r.group.clone(),
                version: r.version.clone(),
                kind: r.kind.clone(),
                plural: r.plural.clone(),
                namespaced,
            });
        }
        let mut operations = BTreeSet::new();
        for op in &m.operations {
            match Operation::try_from(*op) {
                Ok(Operation::Unspecified) | Err(_) => {
                    return Err(Error::Manifest(format!("unknown operation {op}")));
                }
                Ok(Operation::AdmitMutate | Operation::AdmitValidate)
                    if admission_policy.is_none() =>
                {
                    return Err(Error::Manifest(
                        "the admit operations are for admission policies".into(),
                    ));
                }
                Ok(Operation::Convert) if abi_version.minor < 3 => {
                    return Err(Error::Manifest("conversion needs ABI 1.3 or later".into()));
                }
                Ok(Operation::Authorize) if authorizer.is_none() => {
                    return Err(Error::Manifest(
                        "the authorize operation is for authorizers".into(),
                    ));
                }
                Ok(Operation::Convert) if admission_policy.is_some() => {
                    return Err(Error::Manifest(
                        "an admission policy converts nothing: convert is for strategies".into(),
                    ));
                }
                Ok(_) => operations.insert(*op),
            };
        }
        let mut grants = Grants::default();
        for f in &m.host_functions {
            match HostFunction::try_from(*f) {
                Ok(HostFunction::Log) => {}
                Ok(HostFunction::Get) => grants.get = true,
                Ok(HostFunction::List) => grants.list = true,
                Ok(HostFunction::Apply) => grants.apply = true,
                Ok(HostFunction::Unspecified) | Err(_) => {
                    return Err(Error::Manifest(format!("unknown host function {f}")));
                }
            }
        }
        let hooks = [
            Operation::AfterCreate,
            Operation::AfterUpdate,
            Operation::AfterDelete,
        ];
        if grants.apply && !hooks.iter().any(|h| operations.contains(&(*h as i32))) {
            return Err(Error::Manifest(
                "apply is granted only to modules with After hooks".into(),
            ));
        }
        grants.applies = applies(&m.applies, grants.apply)?;
        Ok(Self {
            name: m.name,
            resources,
            abi_version,
            admission_policy,
            authorizer,
            operations,
            grants,
        })
    }

    /// A manifest granting nothing, for the load-time instantiation that reads the real one.
    pub(crate) fn placeholder() -> Self {
        Self {
            name: String::new(),
            resources: Vec::new(),
            abi_version: AbiVersion::HOST,
            admission_policy: None,
            authorizer: None,
            operations: BTreeSet::new(),
            grants: Grants::default(),
        }
    }

    /// The resources the module's After hooks may apply (empty without the `apply` grant).
    pub fn applies(&self) -> &[GroupKind] {
        &self.grants.applies
    }

    /// Whether the module implements an operation.
    pub fn implements(&self, op: Operation) -> bool {
        self.operations.contains(&(op as i32))
    }

    /// Whether the module implements any of `ops`.
    pub fn implements_any(&self, ops: &[Operation]) -> bool {
        ops.iter().any(|op| self.implements(*op))
    }

    /// Refuses a module importing a host function its manifest did not ask for.
    pub(crate) fn check_grants(&self, module: &Module) -> Result<()> {
        let host_imports = module.imports().filter(|i| i.module() == abi::HOST_MODULE);
        for import in host_imports {
            let granted = match import.name() {
                "log" => true,
                "get" => self.grants.get,
                "list" => self.grants.list,
                "apply" => self.grants.apply,
                other => return Err(Error::UnknownImport(other.to_owned())),
            };
            if !granted {
                return Err(Error::UngrantedImport(import.name().to_owned()));
            }
        }
        Ok(())
    }
}

/// Checks the resources a manifest says its hooks apply: only with the `apply` grant (a
/// declaration nothing can act on is a mistake worth saying so), each with a kind and no `/`
/// (a group or kind with one could never match an object's `apiVersion`), sorted and deduplicated.
/// A module granted `apply` that declares nothing still loads (one built before the field
/// existed keeps serving its other operations); each of its `apply` calls is refused.
fn applies(declared: &[abi::GroupKind], apply_granted: bool) -> Result<Arc<[GroupKind]>> {
    if !declared.is_empty() && !apply_granted {
        return Err(Error::Manifest(
            "the manifest declares resources its hooks apply but does not ask for the apply host function".into(),
        ));
    }
    let mut out = BTreeSet::new();
    for gk in declared {
        if gk.kind.is_empty() {
            return Err(Error::Manifest(format!(
                "a resource its hooks apply has an empty kind (group {:?}; the core group is \"\")",
                gk.group
            )));
        }
        if gk.group.contains('/') || gk.kind.contains('/') {
            return Err(Error::Manifest(format!(
                "a resource its hooks apply is named with a version or a '/': group {:?}, kind {:?} (give the API group alone, e.g. \"example.com\", and the kind, e.g. \"Quota\")",
                gk.group, gk.kind
            )));
        }
        out.insert(GroupKind {
            group: gk.group.clone(),
            kind: gk.kind.clone(),
        });
    }
    Ok(out.into_iter().collect())
}

/// Checks a compiled module's imports and exports against the ABI, before instantiating it.
pub(crate) fn check_shape(module: &Module) -> Result<()> {
    for import in module.imports() {
        let known = match import.module() {
            abi::HOST_MODULE => HOST_FUNCTIONS.contains(&import.name()),
            // Any WASI preview-1 function: the shim implements some and refuses the rest.
            WASI_MODULE => true,
            _ => false,
        } && matches!(import.ty(), ExternType::Func(_));
        if !known {
            return Err(Error::UnknownImport(format!(
                "{}::{}",
                import.module(),
                import.name()
            )));
        }
    }
    use ValType::{I32, I64};
    let funcs: [(&str, &[ValType], &[ValType]); 4] = [
        ("alloc", &[I32], &[I32]),
        ("dealloc", &[I32, I32], &[]),
        ("manifest", &[], &[I64]),
        ("call", &[I32, I32], &[I64]),
    ];
    for (name, params, results) in funcs {
        let ok = match module.get_export(name) {
            Some(ExternType::Func(f)) => same(f.params(), params) && same(f.results(), results),
            _ => false,
        };
        if !ok {
            let sig = format!("{name}({params:?}) -> {results:?}");
            return Err(Error::MissingExport(sig));
        }
    }
    if !matches!(module.get_export("memory"), Some(ExternType::Memory(_))) {
        return Err(Error::MissingExport("memory".into()));
    }
    Ok(())
}

fn same(actual: impl ExactSizeIterator<Item = ValType>, expected: &[ValType]) -> bool {
    actual.len() == expected.len() && actual.zip(expected).all(|(a, e)| ValType::eq(&a, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authorizer(policy: &str) -> abi::Manifest {
        abi::Manifest {
            abi_version: 1,
            abi_minor_version: 5,
            name: "protect".into(),
            operations: vec![Operation::Authorize as i32],
            host_functions: vec![HostFunction::Log as i32],
            authorizer: Some(abi::Authorizer {
                failure_policy: policy.into(),
            }),
            ..Default::default()
        }
    }

    fn refusal(m: abi::Manifest) -> String {
        ModuleManifest::from_abi(m).unwrap_err().to_string()
    }

    #[test]
    fn an_authorizer_declares_its_failure_policy_and_nothing_else() {
        let m = ModuleManifest::from_abi(authorizer("")).unwrap();
        assert_eq!(
            m.authorizer,
            Some(AuthorizerDeclaration {
                deny_on_failure: false
            })
        );
        assert!(m.resources.is_empty() && m.admission_policy.is_none());
        let deny = ModuleManifest::from_abi(authorizer("Deny")).unwrap();
        assert!(deny.authorizer.unwrap().deny_on_failure);
        assert!(refusal(authorizer("Ignore")).contains("unknown failure policy \"Ignore\""));
    }

    #[test]
    fn an_authorizer_is_refused_beside_resources_other_operations_or_grants() {
        let mut old = authorizer("");
        old.abi_minor_version = 4;
        assert!(refusal(old).contains("authorizers need ABI 1.5"));
        let mut with_resources = authorizer("");
        with_resources.resources.push(abi::Resource {
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            scope: abi::Scope::Cluster as i32,
            ..Default::default()
        });
        assert!(refusal(with_resources).contains("never two"));
        let mut validating = authorizer("");
        validating.operations.push(Operation::Validate as i32);
        assert!(refusal(validating).contains("only it"));
        let mut reading = authorizer("");
        reading.host_functions.push(HostFunction::Get as i32);
        assert!(refusal(reading).contains("may only log"));
        let mut strategy = authorizer("");
        strategy.authorizer = None;
        assert!(refusal(strategy).contains("no resources"));
    }
}
