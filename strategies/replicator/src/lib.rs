//! A test program, not an example: a `Replicator` whose After hook applies another object, to
//! exercise the host's bounds on hooks. Creating a Replicator applies `spec.apply` when the
//! object carries one (any object, to try kinds the manifest does not declare), and otherwise the
//! next Replicator of its chain, which does the same: left alone, the chain never ends.

use serde_json::{json, Value};
use strategy_guest_sdk::meta::name;
use strategy_guest_sdk::{
    host, strategy, Context, GroupKind, HostFunction, Resource, Scope, Strategy,
};

/// The strategy.
#[derive(Debug, Default)]
pub struct Replicators;

/// The label naming the first Replicator of a chain.
pub const CHAIN_LABEL: &str = "test.example.com/chain";

/// The Replicator that follows `obj` in its chain: `<chain>-<hop + 1>`, one hop further.
pub fn next_replica(obj: &Value) -> Value {
    let this = name(obj).unwrap_or("replica");
    let chain = obj["metadata"]["labels"][CHAIN_LABEL]
        .as_str()
        .unwrap_or(this);
    let hop = obj["spec"]["hop"].as_u64().unwrap_or(0) + 1;
    json!({
        "apiVersion": "test.example.com/v1",
        "kind": "Replicator",
        "metadata": {"name": format!("{chain}-{hop}"), "labels": {CHAIN_LABEL: chain}},
        "spec": {"hop": hop}
    })
}

#[strategy]
impl Strategy for Replicators {
    type Object = Value;
    const NAME: &'static str = "replicators";
    const RESOURCES: &'static [Resource] = &[Resource::new(
        "test.example.com",
        "v1",
        "Replicator",
        "replicators",
        Scope::Cluster,
    )];
    const HOST_FUNCTIONS: &'static [HostFunction] = &[HostFunction::Apply];
    // Only its own kind: `spec.apply` of anything else must be refused by the host.
    const APPLIES: &'static [GroupKind] = &[GroupKind::new("test.example.com", "Replicator")];

    fn after_create(&self, _ctx: &Context, obj: &Value) -> Result<(), String> {
        let next = match obj["spec"].get("apply") {
            Some(other) => other.clone(),
            None => next_replica(obj),
        };
        host::apply(&next).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use strategy_guest_sdk::host::testing;

    use super::*;

    #[test]
    fn each_replica_applies_the_next() {
        let first = json!({"metadata": {"name": "r"}, "spec": {}});
        Replicators
            .after_create(&Context::default(), &first)
            .unwrap();
        let second = testing::take_applied().remove(0);
        assert_eq!(second["metadata"]["name"], "r-1");
        Replicators
            .after_create(&Context::default(), &second)
            .unwrap();
        assert_eq!(testing::take_applied()[0]["metadata"]["name"], "r-2");
    }

    #[test]
    fn spec_apply_is_applied_as_given() {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}});
        let obj = json!({"metadata": {"name": "r"}, "spec": {"apply": ns}});
        Replicators.after_create(&Context::default(), &obj).unwrap();
        assert_eq!(testing::take_applied(), [ns]);
    }
}
