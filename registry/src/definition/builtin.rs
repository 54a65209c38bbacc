//! The built-in kinds' definitions, read from the CRD-shaped JSON documents embedded in the
//! binary (`builtin_kinds.json`, `admission_kinds.json`, `flowcontrol_kinds.json`,
//! `review_kinds.json`, `core_kinds.json`): the one way a built-in kind is declared.

use serde_json::Value;

use super::{ResourceDefinition, StoredAs};

impl ResourceDefinition {
    /// Definitions of kinds built into the server, from CRD-shaped documents embedded in the
    /// binary (a JSON list): the one way a built-in kind is declared. The documents may use
    /// what a CustomResourceDefinition may not (the core group `""`, the column extensions
    /// `x-count` and `x-template`, and `x-stored-as` for a kind stored as another).
    ///
    /// # Panics
    /// When a document is not a valid definition (a defect of the binary, caught by its tests).
    pub fn builtins(documents: &str) -> Vec<Self> {
        let docs: Vec<Value> =
            serde_json::from_str(documents).expect("built-in definitions are a JSON list");
        docs.iter()
            .map(|doc| {
                let mut def = Self::parse(doc, true).expect("a valid built-in definition");
                def.builtin = true;
                def.stored_as = doc.pointer("/spec/x-stored-as").map(|s| StoredAs {
                    plural: s["resource"].as_str().unwrap_or_default().to_string(),
                    api_version: s["apiVersion"].as_str().unwrap_or_default().to_string(),
                    kind: s["kind"].as_str().unwrap_or_default().to_string(),
                    renames: s["renames"]
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(k, v)| {
                                    (k.clone(), v.as_str().unwrap_or_default().to_string())
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                });
                def
            })
            .collect()
    }

    /// The built-in kinds served with the module table's strategies (configmaps, secrets, ...),
    /// from `builtin_kinds.json`.
    pub fn builtin_kinds() -> Vec<Self> {
        let mut defs = Self::builtins(include_str!("../builtin_kinds.json"));
        for def in &mut defs {
            def.module_strategy = true;
        }
        defs
    }

    /// The admission configuration kinds (`admissionregistration.k8s.io`: webhook
    /// configurations), from `admission_kinds.json`, served with the default strategy.
    pub fn admission_kinds() -> Vec<Self> {
        Self::builtins(include_str!("../admission_kinds.json"))
    }

    /// API priority and fairness' configuration kinds (`flowcontrol.apiserver.k8s.io/v1`
    /// FlowSchemas and PriorityLevelConfigurations), from `flowcontrol_kinds.json`, served with
    /// the default strategy.
    pub fn flowcontrol_kinds() -> Vec<Self> {
        Self::builtins(include_str!("../flowcontrol_kinds.json"))
    }

    /// The create-only kinds (`SelfSubjectReview`, `SubjectAccessReview`, ...), from
    /// `review_kinds.json`, so discovery and OpenAPI describe them.
    pub fn review_kinds() -> Vec<Self> {
        let mut defs = Self::builtins(include_str!("../review_kinds.json"));
        for def in &mut defs {
            def.create_only = true;
        }
        defs
    }

    /// Core `v1` namespaces (`core_kinds.json`).
    pub fn namespaces() -> Self {
        Self::core_kind("namespaces")
    }

    /// `apiextensions.k8s.io/v1` CustomResourceDefinitions (`core_kinds.json`).
    pub fn custom_resource_definitions() -> Self {
        Self::core_kind("customresourcedefinitions")
    }

    fn core_kind(plural: &str) -> Self {
        Self::builtins(include_str!("../core_kinds.json"))
            .into_iter()
            .find(|d| d.plural == plural)
            .expect("core_kinds.json defines it")
    }
}
