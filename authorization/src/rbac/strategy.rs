//! The native strategy of the four RBAC kinds: Kubernetes' defaults and validation, and its
//! escalation prevention (a user may grant only what it holds, or what it may `escalate` or
//! `bind`), refusing with 403 Forbidden in Kubernetes' words.

use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use serde_json::Value;

use super::authorizer::RbacAuthorizer;
use super::escalation::{confirm_no_escalation, full_authority};
use super::index::RbacKind;
use super::policy::{role_ref_of, rules_of, PolicyRule, RoleRef, GROUP};
use super::validation;
use crate::strategy::{Admission, Answer, Refusal, Strategy, StrategyContext, StrategyError};
use crate::user::UserInfo;
use crate::{Attributes, Authorizer, PRIVILEGED_GROUP};
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::Registry;

/// The strategy of one RBAC kind.
#[derive(derive_more::Debug)]
pub struct RbacStrategy {
    kind: RbacKind,
    /// The rules users hold.
    #[debug(skip)]
    rules: Arc<RbacAuthorizer>,
    /// The authorizer `escalate` and `bind` are asked of.
    #[debug(skip)]
    authorizer: Arc<dyn Authorizer>,
    /// The registry a binding's role is read from when the index does not know it yet.
    #[debug(skip)]
    registry: OnceLock<Weak<Registry>>,
}

/// Whether `user` may grant anything: members of `system:masters`, and the server's own writes
/// (an empty user), as Kubernetes' `EscalationAllowed`.
pub fn escalation_allowed(user: &UserInfo) -> bool {
    user.username.is_empty() || user.groups.iter().any(|g| g == PRIVILEGED_GROUP)
}

/// Whether only what the garbage collector changes (owner references, finalizers) differs
/// between `new` and `old` (Kubernetes' `IsOnlyMutatingGCFields`).
fn only_gc_fields_change(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for f in [
                "ownerReferences",
                "finalizers",
                "managedFields",
                "resourceVersion",
                "generation",
            ] {
                meta.remove(f);
            }
        }
        v
    };
    strip(new) == strip(old)
}

fn has_aggregation_rule(obj: &Value) -> bool {
    obj.get("aggregationRule").is_some_and(|v| !v.is_null())
}

impl RbacStrategy {
    /// The strategy of `kind`, checking escalation against `rules` and asking `authorizer` for
    /// `escalate` and `bind`.
    pub fn new(
        kind: RbacKind,
        rules: Arc<RbacAuthorizer>,
        authorizer: Arc<dyn Authorizer>,
    ) -> Self {
        Self {
            kind,
            rules,
            authorizer,
            registry: OnceLock::new(),
        }
    }

    /// Lets the strategy read roles the index has not seen yet from `registry`.
    pub fn set_registry(&self, registry: &Arc<Registry>) {
        let _ = self.registry.set(Arc::downgrade(registry));
    }

    async fn authorized(
        &self,
        user: &UserInfo,
        verb: &str,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> bool {
        self.authorizer
            .authorize(&Attributes {
                user: user.clone(),
                verb: verb.into(),
                resource_request: true,
                api_group: GROUP.into(),
                api_version: "*".into(),
                resource: resource.into(),
                namespace: namespace.into(),
                name: name.into(),
                ..Attributes::default()
            })
            .await
            .allowed()
    }

    fn check_grant(
        &self,
        user: &UserInfo,
        namespace: &str,
        granted: &[PolicyRule],
    ) -> Option<Refusal> {
        let (held, errors) = self.rules.policy_rules_for(user, namespace);
        confirm_no_escalation(user, &held, &errors, granted)
            .err()
            .map(|escalation| Refusal::Forbidden(escalation.to_string()))
    }

    /// The escalation check of a Role or ClusterRole write (`old` for an update).
    async fn check_role(
        &self,
        user: &UserInfo,
        obj: &Value,
        old: Option<&Value>,
    ) -> Option<Refusal> {
        let namespace = meta(obj, "namespace");
        // Kubernetes asks with the request's name: none on a create.
        let name = old.map_or("", |_| meta(obj, "name"));
        if self
            .authorized(user, "escalate", self.kind.plural(), namespace, name)
            .await
        {
            return None;
        }
        if let Some(refusal) = self.check_grant(user, namespace, &rules_of(obj)) {
            return Some(refusal);
        }
        let aggregates = has_aggregation_rule(obj) || old.is_some_and(has_aggregation_rule);
        if self.kind == RbacKind::ClusterRole && aggregates {
            return self.check_grant(user, "", &full_authority()).map(|_| {
                Refusal::Forbidden(
                    "must have cluster-admin privileges to use the aggregationRule".into(),
                )
            });
        }
        None
    }

    /// The escalation check of a binding write.
    async fn check_binding(
        &self,
        user: &UserInfo,
        obj: &Value,
    ) -> Result<Option<Refusal>, StrategyError> {
        let namespace = meta(obj, "namespace");
        let role_ref = role_ref_of(obj);
        let resource = if role_ref.kind == "Role" {
            "roles"
        } else {
            "clusterroles"
        };
        if self
            .authorized(user, "bind", resource, namespace, &role_ref.name)
            .await
        {
            return Ok(None);
        }
        let rules = match self.role_rules(&role_ref, namespace).await? {
            Some(rules) => rules,
            None => {
                return Ok(Some(Refusal::NotFound {
                    group: GROUP.into(),
                    plural: resource.into(),
                    name: role_ref.name,
                }))
            }
        };
        Ok(self.check_grant(user, namespace, &rules))
    }

    /// The rules of the role `role_ref` names: from the index, else read from the registry (a
    /// role created a moment ago); `None` when it does not exist.
    async fn role_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Option<Vec<PolicyRule>>, StrategyError> {
        if let Ok(rules) = self.rules.role_ref_rules(role_ref, namespace) {
            return Ok(Some(rules.as_ref().clone()));
        }
        let Some(registry) = self.registry.get().and_then(Weak::upgrade) else {
            return Ok(None);
        };
        let plural = if role_ref.kind == "Role" {
            "roles"
        } else {
            "clusterroles"
        };
        let in_namespace = (role_ref.kind == "Role").then_some(namespace);
        let role = ObjectRef::new(GROUP, "v1", plural, in_namespace, &role_ref.name);
        match Client::new(&registry, "rbac").get(&role).await {
            Ok(role) => Ok(role.as_ref().map(rules_of)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(StrategyError {
                module: self.name().into(),
                reason: format!("reading the role of the binding: {e}"),
            }),
        }
    }

    async fn admit(&self, ctx: &StrategyContext, obj: &mut Value, old: Option<&Value>) -> Answer {
        validation::apply_defaults(self.kind, obj);
        let field_errors = validation::validate(self.kind, obj, old);
        if !field_errors.is_empty() || escalation_allowed(&ctx.user) {
            return Ok(Admission {
                field_errors,
                ..Admission::default()
            });
        }
        if old.is_some_and(|old| only_gc_fields_change(obj, old)) {
            return Ok(Admission::default());
        }
        let refusal = if self.kind.is_binding() {
            self.check_binding(&ctx.user, obj).await?
        } else {
            self.check_role(&ctx.user, obj, old).await
        };
        Ok(Admission {
            refusal,
            ..Admission::default()
        })
    }
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[async_trait]
impl Strategy for RbacStrategy {
    fn name(&self) -> &str {
        match self.kind {
            RbacKind::Role => "builtin-roles",
            RbacKind::ClusterRole => "builtin-clusterroles",
            RbacKind::RoleBinding => "builtin-rolebindings",
            RbacKind::ClusterRoleBinding => "builtin-clusterrolebindings",
        }
    }

    async fn before_create(&self, ctx: &StrategyContext, obj: &mut Value) -> Answer {
        self.admit(ctx, obj, None).await
    }

    async fn before_update(&self, ctx: &StrategyContext, new: &mut Value, old: &Value) -> Answer {
        self.admit(ctx, new, Some(old)).await
    }

    /// RBAC objects may be created by a PUT, as Kubernetes allows.
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn allow_unconditional_update(&self) -> bool {
        true
    }
}
