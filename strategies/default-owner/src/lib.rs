//! A test program: a mutating admission policy. Where the owner-label policy
//! (`strategies/owner-label`) refuses a namespaced object without an `owner` label, this one
//! gives such an object one first — the requester's name, made a label value — so the two loaded
//! together show the mutating phase running before the validating one.
//!
//! Not an example to follow: it exists for tests.

use serde_json::Value;
use strategy_guest_sdk::{AdmissionPolicy, AdmissionRequest, Context, MatchResources};
use strategy_owner_label::{owner, OwnerLabel, OWNER_LABEL};

/// The mutating policy.
#[derive(Debug, Default)]
pub struct DefaultOwner;

/// `name` as a label value: characters outside `[A-Za-z0-9._-]` become `-`, at most 63.
pub fn label_value(name: &str) -> String {
    let value: String = name
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                true => c,
                false => '-',
            },
        )
        .take(63)
        .collect();
    value
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned()
}

impl AdmissionPolicy for DefaultOwner {
    type Object = Value;
    const NAME: &'static str = "default-owner";
    const MATCH: MatchResources = OwnerLabel::MATCH;
    const MUTATES: bool = true;

    fn mutate(&self, ctx: &Context, request: &mut AdmissionRequest<Value>) {
        if owner(request).is_some_and(|o| !o.is_empty()) {
            return;
        }
        let value = label_value(&ctx.user.username);
        if let Some(obj) = request.object.as_mut() {
            if !obj["metadata"]["labels"].is_object() {
                obj["metadata"]["labels"] = serde_json::json!({});
            }
            obj["metadata"]["labels"][OWNER_LABEL] = Value::String(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use strategy_guest_sdk::{AdmissionOperation, UserInfo};

    fn create(labels: Value) -> AdmissionRequest<Value> {
        AdmissionRequest {
            operation: AdmissionOperation::Create,
            namespace: "default".into(),
            name: "x".into(),
            subresource: String::new(),
            object: Some(json!({"metadata": {"name": "x", "labels": labels}})),
            old_object: None,
        }
    }

    #[test]
    fn an_object_without_an_owner_gets_the_requester() {
        let ctx = Context {
            user: UserInfo {
                username: "system:serviceaccount:ci:builder".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut request = create(json!(null));
        DefaultOwner.mutate(&ctx, &mut request);
        assert_eq!(owner(&request), Some("system-serviceaccount-ci-builder"));
        let mut owned = create(json!({"owner": "team-a"}));
        DefaultOwner.mutate(&ctx, &mut owned);
        assert_eq!(owner(&owned), Some("team-a"));
    }
}
