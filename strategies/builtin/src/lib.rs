//! The strategy module of the host's built-in kinds that have no host-side behaviour of their
//! own: core `configmaps`, `secrets`, `serviceaccounts` and `events`, `events.k8s.io` `events`
//! and `coordination.k8s.io` `leases`. The host embeds this module and loads it at start like any other source, so an
//! operator can replace it; each kind's rules are Kubernetes' own (see each file).

use serde_json::Value;
use strategy_guest_sdk::{Context, FieldError, Resource, Scope, Strategy};

mod event;
mod lease;
mod secret;

/// The strategy of every built-in kind, dispatching on the request's kind.
#[derive(Debug, Default)]
pub struct BuiltinKinds;

/// What one kind does; [`BuiltinKinds`] calls the one the request names.
trait KindStrategy {
    fn prepare(&self, _obj: &mut Value) {}
    fn validate(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate(new)
    }
}

struct ConfigMaps;

impl ConfigMaps {
    fn typed(obj: &Value) -> Result<strategy_configmap::ConfigMap, Vec<FieldError>> {
        serde_json::from_value(obj.clone()).map_err(|e| {
            vec![FieldError::invalid(
                &strategy_guest_sdk::FieldPath::new("data"),
                &obj["data"],
                format!("not a ConfigMap: {e}"),
            )]
        })
    }
}

impl KindStrategy for ConfigMaps {
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        match Self::typed(obj) {
            Ok(cm) => strategy_configmap::ConfigMaps.validate(&Context::default(), &cm),
            Err(e) => e,
        }
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        match (Self::typed(new), Self::typed(old)) {
            (Ok(new), Ok(old)) => {
                strategy_configmap::ConfigMaps.validate_update(&Context::default(), &new, &old)
            }
            (Err(e), _) | (_, Err(e)) => e,
        }
    }
}

/// Service accounts have no rules beyond the metadata every object gets.
struct ServiceAccounts;

impl KindStrategy for ServiceAccounts {}

fn kind_strategy(ctx: &Context) -> &'static dyn KindStrategy {
    match (ctx.resource.group.as_str(), ctx.resource.kind.as_str()) {
        ("", "ConfigMap") => &ConfigMaps,
        ("", "Secret") => &secret::Secrets,
        ("", "Event") => &event::Events,
        ("events.k8s.io", "Event") => &event::EventsV1,
        ("coordination.k8s.io", "Lease") => &lease::Leases,
        _ => &ServiceAccounts,
    }
}

impl Strategy for BuiltinKinds {
    type Object = Value;
    const NAME: &'static str = "builtin";
    const RESOURCES: &'static [Resource] = &[
        Resource::new("", "v1", "ConfigMap", "configmaps", Scope::Namespaced),
        Resource::new("", "v1", "Secret", "secrets", Scope::Namespaced),
        Resource::new(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            Scope::Namespaced,
        ),
        Resource::new("", "v1", "Event", "events", Scope::Namespaced),
        Resource::new("events.k8s.io", "v1", "Event", "events", Scope::Namespaced),
        Resource::new(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            Scope::Namespaced,
        ),
    ];

    fn prepare_for_create(&self, ctx: &Context, obj: &mut Value) {
        kind_strategy(ctx).prepare(obj);
    }

    fn validate(&self, ctx: &Context, obj: &Value) -> Vec<FieldError> {
        kind_strategy(ctx).validate(obj)
    }

    fn prepare_for_update(&self, ctx: &Context, new: &mut Value, _old: &Value) {
        kind_strategy(ctx).prepare(new);
    }

    fn validate_update(&self, ctx: &Context, new: &Value, old: &Value) -> Vec<FieldError> {
        kind_strategy(ctx).validate_update(new, old)
    }
}
