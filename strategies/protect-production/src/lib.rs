//! An example authorizer module, for a chain `[this module, RBAC]` in `--authorization-config`:
//! in namespaces named `prod-*`, only members of the `sre` group may delete (anyone else is
//! denied, whatever RBAC grants them); members of `auditors` may read everything (allowed where
//! RBAC grants them nothing); every other request is left to RBAC (no opinion).

use strategy_guest_sdk::{AccessRequest, Authorizer, Context, Decision};

/// The group allowed to delete in production.
pub const SRE_GROUP: &str = "sre";
/// The group allowed to read everything.
pub const AUDITORS_GROUP: &str = "auditors";
/// The prefix of production namespaces.
pub const PRODUCTION_PREFIX: &str = "prod-";

/// The authorizer.
#[derive(Debug, Default)]
pub struct ProtectProduction;

impl Authorizer for ProtectProduction {
    const NAME: &'static str = "protect-production";

    fn authorize(&self, _ctx: &Context, request: &AccessRequest) -> Decision {
        let Some(resource) = &request.resource else {
            return Decision::NoOpinion;
        };
        let verb = resource.verb.as_str();
        let deletes = matches!(verb, "delete" | "deletecollection");
        if deletes
            && resource.namespace.starts_with(PRODUCTION_PREFIX)
            && !request.in_group(SRE_GROUP)
        {
            return Decision::Deny(format!(
                "only members of {SRE_GROUP:?} delete in production namespaces"
            ));
        }
        if matches!(verb, "get" | "list" | "watch") && request.in_group(AUDITORS_GROUP) {
            return Decision::Allow(format!("{AUDITORS_GROUP:?} read everything"));
        }
        Decision::NoOpinion
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategy_guest_sdk::ResourceAttributes;

    fn request(user: &str, groups: &[&str], verb: &str, namespace: &str) -> AccessRequest {
        AccessRequest {
            user: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            resource: Some(ResourceAttributes {
                verb: verb.into(),
                namespace: namespace.into(),
                version: "v1".into(),
                resource: "configmaps".into(),
                ..ResourceAttributes::default()
            }),
            ..AccessRequest::default()
        }
    }

    fn decide(r: &AccessRequest) -> Decision {
        ProtectProduction.authorize(&Context::default(), r)
    }

    #[test]
    fn only_sre_delete_in_production() {
        assert!(matches!(
            decide(&request("dev", &["dev"], "delete", "prod-payments")),
            Decision::Deny(_)
        ));
        assert_eq!(
            decide(&request("ops", &["sre"], "delete", "prod-payments")),
            Decision::NoOpinion,
            "RBAC still decides for SREs"
        );
        assert_eq!(
            decide(&request("dev", &["dev"], "delete", "staging")),
            Decision::NoOpinion
        );
    }

    #[test]
    fn auditors_read_everything() {
        assert!(matches!(
            decide(&request("eve", &["auditors"], "list", "prod-payments")),
            Decision::Allow(_)
        ));
        assert_eq!(
            decide(&request("eve", &["auditors"], "update", "prod-payments")),
            Decision::NoOpinion
        );
    }
}
