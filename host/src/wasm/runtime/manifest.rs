//! A module's manifest, checked: the ABI version, the resources it binds, the operations it
//! implements, and the host functions it asks for against the ones it imports.

use std::collections::BTreeSet;

use wasmtime::{ExternType, Module, ValType};

use super::abi::{self, HostFunction, Operation};
use super::error::{Error, Result};
use super::host_functions::{Grants, HOST_FUNCTIONS};
use crate::strategy::ResourceInfo;

/// What a loaded module declared about itself.
#[derive(Debug, Clone)]
pub struct ModuleManifest {
    /// The module's name.
    pub name: String,
    /// The resources it is the strategy of.
    pub resources: Vec<ResourceInfo>,
    operations: BTreeSet<i32>,
    pub(crate) grants: Grants,
}

impl ModuleManifest {
    /// Checks a decoded manifest.
    pub(crate) fn from_abi(m: abi::Manifest) -> Result<Self> {
        if m.abi_version != abi::ABI_VERSION {
            return Err(Error::AbiVersion {
                found: m.abi_version,
                expected: abi::ABI_VERSION,
            });
        }
        if m.name.is_empty() || m.name.len() > 253 {
            return Err(Error::Manifest(
                "the module's name must have 1 to 253 characters".into(),
            ));
        }
        if m.resources.is_empty() {
            return Err(Error::Manifest("no resources".into()));
        }
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
        Ok(Self {
            name: m.name,
            resources,
            operations,
            grants,
        })
    }

    /// A manifest granting nothing, for the load-time instantiation that reads the real one.
    pub(crate) fn placeholder() -> Self {
        Self {
            name: String::new(),
            resources: Vec::new(),
            operations: BTreeSet::new(),
            grants: Grants::default(),
        }
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
        for import in module.imports() {
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

/// Checks a compiled module's imports and exports against the ABI, before instantiating it.
pub(crate) fn check_shape(module: &Module) -> Result<()> {
    for import in module.imports() {
        let known = import.module() == abi::HOST_MODULE
            && HOST_FUNCTIONS.contains(&import.name())
            && matches!(import.ty(), ExternType::Func(_));
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
