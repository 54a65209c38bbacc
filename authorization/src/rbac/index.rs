//! The policy index: the Roles, ClusterRoles, RoleBindings and ClusterRoleBindings an
//! authorizer decides by, held in memory and indexed by subject (user name, group, service
//! account user name), so a decision looks up only the bindings that name the requester.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::policy::{
    go_quote, role_ref_of, rules_of, service_account_username, subjects_of, PolicyRule, RoleRef,
    Subject, GROUP,
};
use crate::user::UserInfo;

/// One of the four RBAC kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RbacKind {
    /// Namespaced `roles`.
    Role,
    /// Cluster-scoped `clusterroles`.
    ClusterRole,
    /// Namespaced `rolebindings`.
    RoleBinding,
    /// Cluster-scoped `clusterrolebindings`.
    ClusterRoleBinding,
}

impl RbacKind {
    /// All four, in the order they are served.
    pub const ALL: [RbacKind; 4] = [
        Self::Role,
        Self::ClusterRole,
        Self::RoleBinding,
        Self::ClusterRoleBinding,
    ];

    /// The plural resource.
    pub fn plural(self) -> &'static str {
        match self {
            Self::Role => "roles",
            Self::ClusterRole => "clusterroles",
            Self::RoleBinding => "rolebindings",
            Self::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    /// The kind.
    pub fn kind(self) -> &'static str {
        match self {
            Self::Role => "Role",
            Self::ClusterRole => "ClusterRole",
            Self::RoleBinding => "RoleBinding",
            Self::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }

    /// Whether objects live in namespaces.
    pub fn namespaced(self) -> bool {
        matches!(self, Self::Role | Self::RoleBinding)
    }

    /// Whether this is a binding kind.
    pub fn is_binding(self) -> bool {
        matches!(self, Self::RoleBinding | Self::ClusterRoleBinding)
    }
}

/// A RoleBinding or ClusterRoleBinding, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The binding's name.
    pub name: String,
    /// Its namespace (empty for a ClusterRoleBinding).
    pub namespace: String,
    /// The role it grants.
    pub role_ref: RoleRef,
    /// Whom it grants it to.
    pub subjects: Vec<Subject>,
}

impl Binding {
    /// Decodes a binding object.
    pub fn from_object(obj: &Value) -> Self {
        let meta = |f: &str| {
            obj.pointer(&format!("/metadata/{f}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Self {
            name: meta("name"),
            namespace: meta("namespace"),
            role_ref: role_ref_of(obj),
            subjects: subjects_of(obj),
        }
    }

    /// The first subject that is `user`, if any (Kubernetes' `appliesTo`).
    pub fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects
            .iter()
            .find(|s| s.applies_to(&user.username, &user.groups, &self.namespace))
    }

    /// The keys this binding is found under: `u:{user}` and `g:{group}`.
    fn subject_keys(&self) -> BTreeSet<String> {
        self.subjects
            .iter()
            .filter_map(|s| match s.kind.as_str() {
                "User" => Some(format!("u:{}", s.name)),
                "Group" => Some(format!("g:{}", s.name)),
                "ServiceAccount" => {
                    let ns = if s.namespace.is_empty() {
                        &self.namespace
                    } else {
                        &s.namespace
                    };
                    (!ns.is_empty()).then(|| format!("u:{}", service_account_username(ns, &s.name)))
                }
                _ => None,
            })
            .collect()
    }
}

/// Where a rule came from, as Kubernetes' decision reasons describe it.
#[derive(Debug, Clone, Copy)]
pub struct RuleSource<'a> {
    /// The binding.
    pub binding: &'a Binding,
    /// The subject of it that applied.
    pub subject: &'a Subject,
}

impl std::fmt::Display for RuleSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.binding;
        let q = go_quote;
        if b.namespace.is_empty() {
            write!(
                f,
                "ClusterRoleBinding {} of {} {} to {}",
                q(&b.name),
                b.role_ref.kind,
                q(&b.role_ref.name),
                self.subject.describe("")
            )
        } else {
            write!(
                f,
                "RoleBinding {} of {} {} to {}",
                q(&format!("{}/{}", b.name, b.namespace)),
                b.role_ref.kind,
                q(&b.role_ref.name),
                self.subject.describe(&b.namespace)
            )
        }
    }
}

/// What a rule visitor is shown: a rule with its source, or an error met resolving a binding.
pub type Visited<'a> = Result<(RuleSource<'a>, &'a PolicyRule), RoleRefError>;

/// A binding's `roleRef` that names no role, in the texts of Kubernetes' listers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleRefError {
    /// No such Role in the binding's namespace.
    #[error("role.{group} {} not found", go_quote(.0), group = GROUP)]
    RoleNotFound(String),
    /// No such ClusterRole.
    #[error("clusterrole.{group} {} not found", go_quote(.0), group = GROUP)]
    ClusterRoleNotFound(String),
    /// A kind other than Role and ClusterRole.
    #[error("unsupported role reference kind: {}", go_quote(.0))]
    UnsupportedKind(String),
}

/// Bindings by (namespace, name) and by subject key.
#[derive(Debug, Default, Clone)]
struct BindingTable {
    by_name: HashMap<(String, String), Arc<Binding>>,
    /// (namespace, subject key) → binding names.
    by_subject: HashMap<(String, String), BTreeSet<String>>,
}

impl BindingTable {
    fn insert(&mut self, binding: Binding) {
        self.remove(&binding.namespace, &binding.name);
        for key in binding.subject_keys() {
            self.by_subject
                .entry((binding.namespace.clone(), key))
                .or_default()
                .insert(binding.name.clone());
        }
        self.by_name.insert(
            (binding.namespace.clone(), binding.name.clone()),
            Arc::new(binding),
        );
    }

    fn remove(&mut self, namespace: &str, name: &str) {
        let Some(old) = self
            .by_name
            .remove(&(namespace.to_string(), name.to_string()))
        else {
            return;
        };
        for key in old.subject_keys() {
            let k = (namespace.to_string(), key);
            if let Some(names) = self.by_subject.get_mut(&k) {
                names.remove(name);
                if names.is_empty() {
                    self.by_subject.remove(&k);
                }
            }
        }
    }

    /// The bindings in `namespace` that may name `user`, ordered by name.
    fn candidates(&self, namespace: &str, user: &UserInfo) -> Vec<Arc<Binding>> {
        let mut names = BTreeSet::new();
        let keys = std::iter::once(format!("u:{}", user.username))
            .chain(user.groups.iter().map(|g| format!("g:{g}")));
        for key in keys {
            if let Some(found) = self.by_subject.get(&(namespace.to_string(), key)) {
                names.extend(found.iter().cloned());
            }
        }
        names
            .into_iter()
            .filter_map(|n| self.by_name.get(&(namespace.to_string(), n)).cloned())
            .collect()
    }
}

/// The four kinds in memory.
#[derive(Debug, Default, Clone)]
pub struct PolicyIndex {
    /// (namespace, name) → rules.
    roles: HashMap<(String, String), Arc<Vec<PolicyRule>>>,
    /// name → rules.
    cluster_roles: HashMap<String, Arc<Vec<PolicyRule>>>,
    role_bindings: BindingTable,
    cluster_role_bindings: BindingTable,
}

fn name_and_namespace(obj: &Value) -> (String, String) {
    let get = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (get("/metadata/namespace"), get("/metadata/name"))
}

impl PolicyIndex {
    /// Records a created or changed object of `kind`.
    pub fn apply(&mut self, kind: RbacKind, obj: &Value) {
        let (ns, name) = name_and_namespace(obj);
        match kind {
            RbacKind::Role => {
                self.roles.insert((ns, name), Arc::new(rules_of(obj)));
            }
            RbacKind::ClusterRole => {
                self.cluster_roles.insert(name, Arc::new(rules_of(obj)));
            }
            RbacKind::RoleBinding => self.role_bindings.insert(Binding::from_object(obj)),
            RbacKind::ClusterRoleBinding => {
                let mut b = Binding::from_object(obj);
                b.namespace.clear();
                self.cluster_role_bindings.insert(b);
            }
        }
    }

    /// Forgets a deleted object of `kind`.
    pub fn delete(&mut self, kind: RbacKind, obj: &Value) {
        let (ns, name) = name_and_namespace(obj);
        match kind {
            RbacKind::Role => {
                self.roles.remove(&(ns, name));
            }
            RbacKind::ClusterRole => {
                self.cluster_roles.remove(&name);
            }
            RbacKind::RoleBinding => self.role_bindings.remove(&ns, &name),
            RbacKind::ClusterRoleBinding => self.cluster_role_bindings.remove("", &name),
        }
    }

    /// Replaces every object of `kind` with `objects` (a fresh list).
    pub fn replace(&mut self, kind: RbacKind, objects: &[Value]) {
        match kind {
            RbacKind::Role => self.roles.clear(),
            RbacKind::ClusterRole => self.cluster_roles.clear(),
            RbacKind::RoleBinding => self.role_bindings = BindingTable::default(),
            RbacKind::ClusterRoleBinding => self.cluster_role_bindings = BindingTable::default(),
        }
        for obj in objects {
            self.apply(kind, obj);
        }
    }

    /// The rules of the role `role_ref` names, for a binding in `namespace` (empty for a
    /// ClusterRoleBinding): Kubernetes' `GetRoleReferenceRules`, with the lister's NotFound text.
    ///
    /// # Errors
    /// The role does not exist, or the kind is not a role kind.
    pub fn role_ref_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Arc<Vec<PolicyRule>>, RoleRefError> {
        match role_ref.kind.as_str() {
            "Role" => self
                .roles
                .get(&(namespace.to_string(), role_ref.name.clone()))
                .cloned()
                .ok_or_else(|| RoleRefError::RoleNotFound(role_ref.name.clone())),
            "ClusterRole" => self
                .cluster_roles
                .get(&role_ref.name)
                .cloned()
                .ok_or_else(|| RoleRefError::ClusterRoleNotFound(role_ref.name.clone())),
            other => Err(RoleRefError::UnsupportedKind(other.to_owned())),
        }
    }

    /// Kubernetes' `VisitRulesFor`: every rule granted to `user` cluster-wide and, when
    /// `namespace` is set, in it, with its source; errors (missing roles) as they are met. The
    /// visitor returns false to stop.
    pub fn visit_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
        visitor: &mut dyn FnMut(Visited<'_>) -> bool,
    ) {
        let mut tables = vec![("", &self.cluster_role_bindings)];
        if !namespace.is_empty() {
            tables.push((namespace, &self.role_bindings));
        }
        for (ns, table) in tables {
            for binding in table.candidates(ns, user) {
                let Some(subject) = binding.subject_for(user) else {
                    continue;
                };
                match self.role_ref_rules(&binding.role_ref, ns) {
                    Err(e) => {
                        if !visitor(Err(e)) {
                            return;
                        }
                    }
                    Ok(rules) => {
                        let source = RuleSource {
                            binding: &binding,
                            subject,
                        };
                        for rule in rules.iter() {
                            if !visitor(Ok((source, rule))) {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Kubernetes' `RulesFor`: every rule `user` holds in `namespace` (cluster-wide ones
    /// included), and the errors met resolving them.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        self.visit_rules_for(user, namespace, &mut |found| {
            match found {
                Ok((_, rule)) => rules.push(rule.clone()),
                Err(e) => errors.push(e.to_string()),
            }
            true
        });
        (rules, errors)
    }
}
