//! One webhook of a `MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration`, read
//! from the stored object, and whether a write is its business (rules, match policy, scope,
//! namespace and object selectors) — Kubernetes' matching, decided here once per request.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use strategy_host_https::webhook::ClientConfig;

use std::sync::Arc;

use crate::rules::Rule;
use strategy_host_cel::expression::Expression;
use strategy_host_registry::admission::AdmissionRequest;
use strategy_host_registry::labels::{labels_of, selector_matches};
use strategy_host_registry::system_fields::meta_str;

/// The default and the most a webhook may take (`timeoutSeconds`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_TIMEOUT: Duration = Duration::from_secs(30);

/// One webhook.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// The configuration it is in.
    pub configuration: String,
    /// Its name (what denials and failures name).
    pub name: String,
    /// Where and how it is called.
    pub client: ClientConfig,
    rules: Vec<Rule>,
    /// `failurePolicy: Fail` (the default); `Ignore` otherwise.
    pub fail_closed: bool,
    equivalent: bool,
    namespace_selector: Value,
    object_selector: Value,
    /// `sideEffects` is `None` or `NoneOnDryRun`: dry-run requests may be sent.
    pub dry_run_safe: bool,
    /// `reinvocationPolicy: IfNeeded`: called again when a later mutation changed the object.
    pub reinvoke_if_needed: bool,
    /// `timeoutSeconds`, capped at 30 s.
    pub timeout: Duration,
    /// `matchConditions`, compiled (an expression that does not compile is an error when
    /// the webhook is matched).
    pub match_conditions: Vec<Arc<strategy_host_cel::expression::Result<Expression>>>,
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or_default()
}

impl Webhook {
    /// The webhooks of a stored configuration.
    pub fn of_configuration(configuration: &Value) -> Vec<Self> {
        let config_name = meta_str(configuration, "name").unwrap_or_default();
        let Some(webhooks) = configuration.get("webhooks").and_then(Value::as_array) else {
            return Vec::new();
        };
        webhooks
            .iter()
            .map(|w| {
                let client = ClientConfig::parse(w.get("clientConfig").unwrap_or(&Value::Null));
                let rules = Rule::list(w.get("rules"));
                let timeout = w
                    .get("timeoutSeconds")
                    .and_then(Value::as_u64)
                    .map_or(DEFAULT_TIMEOUT, Duration::from_secs)
                    .min(MAX_TIMEOUT);
                Self {
                    configuration: config_name.to_string(),
                    name: text(w, "name").to_string(),
                    client,
                    rules,
                    fail_closed: text(w, "failurePolicy") != "Ignore",
                    equivalent: text(w, "matchPolicy") != "Exact",
                    namespace_selector: w.get("namespaceSelector").cloned().unwrap_or(Value::Null),
                    object_selector: w.get("objectSelector").cloned().unwrap_or(Value::Null),
                    dry_run_safe: matches!(text(w, "sideEffects"), "None" | "NoneOnDryRun"),
                    reinvoke_if_needed: text(w, "reinvocationPolicy") == "IfNeeded",
                    timeout,
                    match_conditions: w
                        .get("matchConditions")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(|c| {
                            let text = c
                                .get("expression")
                                .and_then(Value::as_str)
                                .unwrap_or_default();
                            Arc::new(Expression::compile(text))
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// Whether a rule names the request's operation and resource.
    pub fn rules_match(&self, request: &AdmissionRequest<'_>) -> bool {
        self.rules
            .iter()
            .any(|r| r.matches(request, self.equivalent))
    }

    /// Whether the selectors hold: the namespace's labels (`namespace_labels`, for a
    /// namespaced object) and the object's (or, for an update, the old object's).
    pub fn selectors_match(
        &self,
        request: &AdmissionRequest<'_>,
        namespace_labels: Option<&BTreeMap<String, String>>,
    ) -> bool {
        let namespace_ok = match namespace_labels {
            _ if self.namespace_selector.is_null() => true,
            Some(labels) => selector_matches(&self.namespace_selector, labels),
            // A namespace object is judged by its own labels; other cluster-scoped ones match.
            None if request.resource.is_namespaces() => {
                selector_matches(&self.namespace_selector, &labels_of(request.object))
            }
            None => true,
        };
        let object_ok = self.object_selector.is_null()
            || selector_matches(&self.object_selector, &labels_of(request.object))
            || request
                .old_object
                .is_some_and(|old| selector_matches(&self.object_selector, &labels_of(old)));
        namespace_ok && object_ok
    }
}
