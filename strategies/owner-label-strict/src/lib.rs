//! A test program: a second, stricter version of the owner-label policy (`strategies/owner-label`,
//! same policy name `owner-label`, same match), so tests can hot-swap and shadow one version of a
//! policy against another. Beyond the example's rule, the owner must be a DNS label (lower-case
//! letters, digits and `-`, at most 63 characters), so `Bob` or `team_a` are refused.
//!
//! Not an example to follow: it exists for tests.

use serde_json::Value;
use strategy_guest_sdk::{AdmissionPolicy, AdmissionRequest, Context, FieldError, MatchResources};
use strategy_owner_label::{owner, owner_path, OwnerLabel};

/// The stricter policy.
#[derive(Debug, Default)]
pub struct StrictOwnerLabel;

fn dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

impl AdmissionPolicy for StrictOwnerLabel {
    type Object = Value;
    const NAME: &'static str = OwnerLabel::NAME;
    const MATCH: MatchResources = OwnerLabel::MATCH;

    fn validate(&self, ctx: &Context, request: &AdmissionRequest<Value>) -> Vec<FieldError> {
        let mut errors = OwnerLabel.validate(ctx, request);
        if let Some(o) = owner(request).filter(|o| !o.is_empty() && !dns_label(o)) {
            errors.push(FieldError::invalid(
                &owner_path(),
                o,
                "an owner is a DNS label (lower-case letters, digits and '-')",
            ));
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use strategy_guest_sdk::AdmissionOperation;

    fn with_owner(o: &str) -> AdmissionRequest<Value> {
        AdmissionRequest {
            operation: AdmissionOperation::Create,
            namespace: "default".into(),
            name: "x".into(),
            subresource: String::new(),
            object: Some(json!({"metadata": {"labels": {"owner": o}}})),
            old_object: None,
        }
    }

    #[test]
    fn only_dns_label_owners_are_admitted() {
        let ctx = Context::default();
        assert!(StrictOwnerLabel
            .validate(&ctx, &with_owner("team-a"))
            .is_empty());
        assert_eq!(StrictOwnerLabel.validate(&ctx, &with_owner("Bob")).len(), 1);
        assert!(OwnerLabel.validate(&ctx, &with_owner("Bob")).is_empty());
    }
}
