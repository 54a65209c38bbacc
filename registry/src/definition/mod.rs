//! Resource definitions: what the registry serves for one resource (names, scope, versions,
//! schemas, printer columns), read from a `CustomResourceDefinition` or built in.

use std::cmp::Ordering;

use serde_json::Value;

use crate::strategy::{FieldError, ResourceInfo};

mod builtin;
mod conversion;
mod crd;
mod version_fields;

pub use conversion::Conversion;
pub use version_fields::ScaleSubresource;

/// The group of CustomResourceDefinitions.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";

/// One column of `kubectl get` output.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    /// Header.
    pub name: String,
    /// OpenAPI type (`string`, `integer`, `number`, `boolean`, `date`).
    pub type_: String,
    /// OpenAPI format, if any.
    pub format: String,
    /// Description.
    pub description: String,
    /// 0 = shown by default; more = `-o wide` only.
    pub priority: i64,
    /// A simple JSONPath into the object (`.spec.replicas`).
    pub json_path: String,
    /// Built-in kinds only: the cell counts what these paths select (`.data.*`), as Kubernetes'
    /// printers show a ConfigMap's DATA or a ServiceAccount's SECRETS.
    pub count_paths: Vec<String>,
    /// Built-in kinds only: each value the JSONPath selects is printed through this template
    /// (`{.kind}/{.name}`: JSONPaths relative to the value, text between them kept) and the
    /// results joined with `, `, as Kubernetes' printers show a binding's ROLE or USERS.
    pub template: String,
    /// Built-in kinds only: the cell's text when the JSONPath selects nothing (an APIService's
    /// SERVICE is `Local` without one).
    pub absent: String,
}

/// A resource served over another resource's stored objects under other field names, as
/// Kubernetes serves `events.k8s.io/v1` Events over core `v1` Events.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAs {
    /// The plural of the core resource whose objects these are (its key prefix is used).
    pub plural: String,
    /// The `apiVersion` the objects are stored with.
    pub api_version: String,
    /// The `kind` the objects are stored with.
    pub kind: String,
    /// Top-level fields renamed: (this resource's name, the stored name).
    pub renames: Vec<(String, String)>,
}

impl StoredAs {
    /// `obj` (this resource's shape) in the stored shape.
    pub fn to_stored(&self, obj: Value) -> Value {
        self.rename(obj, |(ours, stored)| (ours, stored))
    }

    /// The stored object's path of this resource's field path `field`, when its top-level
    /// field is renamed (`regarding.name` → `involvedObject.name`).
    pub fn stored_field(&self, field: &str) -> Option<String> {
        let (top, rest) = field
            .split_once('.')
            .map_or((field, None), |(t, r)| (t, Some(r)));
        let (_, stored) = self.renames.iter().find(|(ours, _)| ours == top)?;
        Some(match rest {
            Some(rest) => format!("{stored}.{rest}"),
            None => stored.clone(),
        })
    }

    /// A stored object in this resource's shape.
    pub fn from_stored(&self, obj: Value) -> Value {
        self.rename(obj, |(ours, stored)| (stored, ours))
    }

    fn rename<'a>(
        &'a self,
        mut obj: Value,
        dir: impl Fn((&'a str, &'a str)) -> (&'a str, &'a str),
    ) -> Value {
        if let Some(map) = obj.as_object_mut() {
            let moved: Vec<(&str, Option<Value>)> = self
                .renames
                .iter()
                .map(|(a, b)| dir((a.as_str(), b.as_str())))
                .map(|(from, to)| (to, map.remove(from)))
                .collect();
            for (to, value) in moved {
                match value {
                    Some(v) => {
                        map.insert(to.to_string(), v);
                    }
                    None => {
                        map.remove(to);
                    }
                }
            }
        }
        obj
    }
}

/// One served version of a resource.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionDefinition {
    /// `v1`, `v1beta1`, ...
    pub name: String,
    /// Whether this version is the one objects are stored at.
    pub storage: bool,
    /// Whether `/status` is served (and the main endpoint ignores status changes).
    pub status_subresource: bool,
    /// The `openAPIV3Schema`, if any.
    pub schema: Option<Value>,
    /// `additionalPrinterColumns`.
    pub printer_columns: Vec<PrinterColumn>,
    /// The schema's CEL rules, compiled (none when it has none).
    pub cel: Option<strategy_host_cel::CelRules>,
    /// `selectableFields`: the fields a field selector may name beside `metadata.name` and
    /// `metadata.namespace` (`spec.color`, `involvedObject.name`, ...).
    pub selectable_fields: Vec<String>,
    /// The `scale` subresource, when the version serves one.
    pub scale: Option<ScaleSubresource>,
    /// `deprecated: true`: the `deprecationWarning`, if the version gives one.
    pub deprecated: Option<Option<String>>,
}

/// Kubernetes' version priority: GA before beta before alpha, higher numbers first.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn key(v: &str) -> (u8, u64, u64, String) {
        let Some(rest) = v.strip_prefix('v') else {
            return (0, 0, 0, v.to_string());
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(major) = digits.parse::<u64>() else {
            return (0, 0, 0, v.to_string());
        };
        let tail = &rest[digits.len()..];
        let (level, minor_text) = if tail.is_empty() {
            (3, "")
        } else if let Some(t) = tail.strip_prefix("beta") {
            (2, t)
        } else if let Some(t) = tail.strip_prefix("alpha") {
            (1, t)
        } else {
            return (0, 0, 0, v.to_string());
        };
        (level, major, minor_text.parse().unwrap_or(0), String::new())
    }
    let (ka, kb) = (key(a), key(b));
    kb.0.cmp(&ka.0)
        .then(kb.1.cmp(&ka.1))
        .then(kb.2.cmp(&ka.2))
        .then(ka.3.cmp(&kb.3))
}

/// Everything the registry needs to serve one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceDefinition {
    /// API group (`""` for core).
    pub group: String,
    /// Plural name (the path segment).
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// List kind.
    pub list_kind: String,
    /// Short names (`kubectl get wd`).
    pub short_names: Vec<String>,
    /// Categories (`kubectl get all`).
    pub categories: Vec<String>,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The served versions, in the CRD's order.
    pub versions: Vec<VersionDefinition>,
    /// Built in (namespaces, CRDs, ...) rather than from a CRD.
    pub builtin: bool,
    /// A built-in resource whose strategy comes from the module table (the module built into
    /// the binary, or one an operator loads in its place) rather than the host's own code.
    pub module_strategy: bool,
    /// Served over another resource's stored objects (`events.k8s.io` events).
    pub stored_as: Option<StoredAs>,
    /// Nothing is stored: a create is a question the API layer answers (the access and
    /// subject reviews); every other verb answers 405.
    pub create_only: bool,
    /// How objects are converted between the versions (`spec.conversion`).
    pub conversion: Conversion,
    /// The definition is being deleted: its objects are being deleted, no new one is created.
    pub terminating: bool,
    /// The revision from which stored objects carry the schema's current defaults (the CRD's
    /// resourceVersion when they last changed); an object stored before it is defaulted as it
    /// is read, as Kubernetes defaults what it decodes from storage. 0: nothing to default.
    pub defaults_revision: u64,
}

/// A subresource as discovery lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    /// `status`, `token`.
    pub name: &'static str,
    /// The group of the kind it takes and returns.
    pub group: String,
    /// The version of that kind.
    pub version: String,
    /// That kind.
    pub kind: String,
    /// Its verbs.
    pub verbs: &'static [&'static str],
}

impl ResourceDefinition {
    /// The storage key prefix: `/{group}/{plural}` (`/{plural}` for the core group, and for a
    /// resource stored as a core one).
    pub fn key_prefix(&self) -> String {
        if let Some(stored) = &self.stored_as {
            format!("/{}", stored.plural)
        } else if self.group.is_empty() {
            format!("/{}", self.plural)
        } else {
            format!("/{}/{}", self.group, self.plural)
        }
    }

    /// Whether this is core `namespaces` (whose lifecycle the registry keeps).
    pub fn is_namespaces(&self) -> bool {
        self.builtin && self.group.is_empty() && self.plural == "namespaces"
    }

    /// Whether this is `customresourcedefinitions` (whose deletion the registry keeps until
    /// their objects are gone).
    pub fn is_custom_resource_definitions(&self) -> bool {
        self.builtin && self.group == CRD_GROUP && self.plural == "customresourcedefinitions"
    }

    /// Whether objects carry `metadata.generation`: custom resources, CRDs and StrategyModules
    /// do; the core kinds, leases and the RBAC kinds do not, as in Kubernetes.
    pub fn tracks_generation(&self) -> bool {
        let kubernetes_kind = self.group.is_empty() || self.group == "rbac.authorization.k8s.io";
        !(self.module_strategy || (self.builtin && kubernetes_kind))
    }

    /// The key of one object.
    pub fn object_key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => format!("{}/{ns}/{name}", self.key_prefix()),
            None => format!("{}/{name}", self.key_prefix()),
        }
    }

    /// The key a list reads under (one namespace, or all).
    pub fn collection_key(&self, namespace: Option<&str>) -> String {
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => format!("{}/{ns}", self.key_prefix()),
            None => self.key_prefix(),
        }
    }

    /// The served version called `name`.
    pub fn version(&self, name: &str) -> Option<&VersionDefinition> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// The fields a field selector may name at `version`: `metadata.name`,
    /// `metadata.namespace` and the version's `selectableFields`.
    pub fn selectable_fields(&self, version: &str) -> Vec<&str> {
        let mut fields = strategy_host_apimachinery::fields::DEFAULT_SELECTABLE_FIELDS.to_vec();
        if let Some(v) = self.version(version) {
            fields.extend(v.selectable_fields.iter().map(String::as_str));
        }
        fields
    }

    /// The warning every request at a deprecated `version` gets: its `deprecationWarning`, or
    /// Kubernetes' default (`g/v1beta1 Kind is deprecated; use g/v1 Kind`, naming the most
    /// stable served version that is not deprecated when it outranks this one).
    pub fn deprecation_warning(&self, version: &str) -> Option<String> {
        let given = self.version(version)?.deprecated.as_ref()?;
        if let Some(text) = given {
            return Some(text.clone());
        }
        let mut warning = format!("{} {} is deprecated", self.api_version(version), self.kind);
        let better = self
            .versions
            .iter()
            .filter(|v| v.deprecated.is_none())
            .min_by(|a, b| compare_versions(&a.name, &b.name));
        if let Some(better) = better.filter(|b| compare_versions(&b.name, version).is_lt()) {
            warning.push_str(&format!(
                "; use {} {}",
                self.api_version(&better.name),
                self.kind
            ));
        }
        Some(warning)
    }

    /// The storage version (the first served one if none is marked).
    pub fn storage_version(&self) -> &str {
        self.versions
            .iter()
            .find(|v| v.storage)
            .or(self.versions.first())
            .map_or("v1", |v| v.name.as_str())
    }

    /// `group/version` (or `version` for core).
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    /// What strategy calls are told about this resource at `version`.
    pub fn info(&self, version: &str) -> ResourceInfo {
        ResourceInfo {
            group: self.group.clone(),
            version: version.to_string(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
            namespaced: self.namespaced,
        }
    }

    /// Reads a stored `CustomResourceDefinition`.
    ///
    /// # Errors
    /// The field errors a CRD create or update would answer 422 with.
    pub fn from_crd(crd: &Value) -> Result<Self, Vec<FieldError>> {
        Self::parse(crd, false)
    }

    /// Every `default` in the versions' schemas, with where it is: equal for definitions that
    /// default alike, empty when none defaults anything.
    pub fn defaults_fingerprint(&self) -> String {
        let mut out = String::new();
        for version in &self.versions {
            if let Some(schema) = &version.schema {
                crate::schema::fingerprint_defaults(
                    schema,
                    &mut format!("/{}", version.name),
                    &mut out,
                );
            }
        }
        out
    }

    /// The verbs the resource answers, as discovery lists them.
    pub fn verbs(&self) -> &'static [&'static str] {
        if self.create_only {
            &["create"]
        } else {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        }
    }

    /// The subresources served at `version`, as discovery lists them: `status` where the
    /// version has one, a namespace's `finalize`, and a ServiceAccount's `token` (a
    /// TokenRequest).
    pub fn subresources(&self, version: &str) -> Vec<Subresource> {
        let mut subs = Vec::new();
        if self.version(version).is_some_and(|v| v.status_subresource) {
            subs.push(Subresource {
                name: "status",
                group: self.group.clone(),
                version: version.to_string(),
                kind: self.kind.clone(),
                verbs: &["get", "patch", "update"],
            });
        }
        if self.version(version).is_some_and(|v| v.scale.is_some()) {
            subs.push(Subresource {
                name: "scale",
                group: "autoscaling".into(),
                version: "v1".into(),
                kind: "Scale".into(),
                verbs: &["get", "patch", "update"],
            });
        }
        if self.is_namespaces() {
            subs.push(Subresource {
                name: "finalize",
                group: String::new(),
                version: "v1".into(),
                kind: "Namespace".into(),
                verbs: &["update"],
            });
        }
        if self.builtin && self.group.is_empty() && self.plural == "serviceaccounts" {
            subs.push(Subresource {
                name: "token",
                group: "authentication.k8s.io".into(),
                version: "v1".into(),
                kind: "TokenRequest".into(),
                verbs: &["create"],
            });
        }
        subs
    }
}
