//! The structured authorization configuration (`--authorization-config`,
//! `apiserver.config.k8s.io/v1` (or `v1beta1`) `AuthorizationConfiguration`): the ordered
//! authorizers, read from YAML or JSON, defaulted and validated with kube-apiserver's field
//! errors.

use std::time::Duration;

use serde::Deserialize;

use strategy_host_apimachinery::config_file::InvalidConfiguration;
use strategy_host_cel::expression::Expression;

/// The file's content.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationConfiguration {
    /// `apiserver.config.k8s.io/v1` (or `v1beta1`, `v1alpha1`).
    #[serde(default)]
    pub api_version: String,
    /// `AuthorizationConfiguration`.
    #[serde(default)]
    pub kind: String,
    /// The authorizers, asked in order until one allows or denies.
    #[serde(default)]
    pub authorizers: Vec<AuthorizerConfiguration>,
}

/// One authorizer of the chain.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizerConfiguration {
    /// `RBAC`, `Webhook`, `AlwaysAllow`, `AlwaysDeny`, or `Module` (beyond Kubernetes: the
    /// authorizer module of this name); `Node` and `ABAC` are refused.
    #[serde(default, rename = "type")]
    pub authorizer_type: String,
    /// Its name (a DNS subdomain, unique in the chain), in metrics and logs.
    #[serde(default)]
    pub name: String,
    /// The webhook, for `type: Webhook`.
    #[serde(default)]
    pub webhook: Option<WebhookConfiguration>,
}

/// A webhook authorizer.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WebhookConfiguration {
    /// How long an allowed answer is cached (Go duration; default `5m`).
    #[serde(default, rename = "authorizedTTL")]
    pub authorized_ttl: Option<String>,
    /// Whether allowed answers are cached (default true).
    #[serde(default)]
    pub cache_authorized_requests: Option<bool>,
    /// How long a denied or no-opinion answer is cached (default `30s`).
    #[serde(default, rename = "unauthorizedTTL")]
    pub unauthorized_ttl: Option<String>,
    /// Whether denied and no-opinion answers are cached (default true).
    #[serde(default)]
    pub cache_unauthorized_requests: Option<bool>,
    /// How long a call may take (required, at most `30s`).
    #[serde(default)]
    pub timeout: Option<String>,
    /// The SubjectAccessReview version sent: `v1` or `v1beta1`.
    #[serde(default)]
    pub subject_access_review_version: String,
    /// The version `request` has in match conditions: `v1`.
    #[serde(default)]
    pub match_condition_subject_access_review_version: String,
    /// What a failed call decides: `NoOpinion` (the next authorizer decides) or `Deny`.
    #[serde(default)]
    pub failure_policy: String,
    /// How the webhook is reached.
    #[serde(default)]
    pub connection_info: ConnectionInfo,
    /// CEL expressions over `request` (the SubjectAccessReview's spec) that must all be true
    /// for the webhook to be called.
    #[serde(default)]
    pub match_conditions: Vec<MatchCondition>,
}

/// How a webhook is reached.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionInfo {
    /// `KubeConfigFile` (`InClusterConfig` is refused: this server runs in no cluster).
    #[serde(default, rename = "type")]
    pub connection_type: String,
    /// The kubeconfig naming the webhook's server and credentials.
    #[serde(default)]
    pub kube_config_file: Option<String>,
}

/// One match condition.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct MatchCondition {
    /// The CEL expression.
    #[serde(default)]
    pub expression: String,
}

/// A webhook's settings once defaulted and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookSettings {
    /// Cache TTL of allowed answers (`None`: not cached).
    pub authorized_ttl: Option<Duration>,
    /// Cache TTL of other answers (`None`: not cached).
    pub unauthorized_ttl: Option<Duration>,
    /// The call's deadline.
    pub timeout: Duration,
    /// `v1` or `v1beta1`.
    pub review_version: String,
    /// A failed call denies (instead of having no opinion).
    pub deny_on_failure: bool,
    /// The kubeconfig's path.
    pub kubeconfig: String,
}

/// Reads and validates a configuration.
///
/// # Errors
/// The text is not YAML or JSON of this kind, or a field is invalid: every field error, worded
/// as kube-apiserver words them, one per line.
pub fn parse(text: &str) -> Result<AuthorizationConfiguration, InvalidConfiguration> {
    let config: AuthorizationConfiguration = InvalidConfiguration::decode(text)?;
    InvalidConfiguration::check(validate(&config))?;
    Ok(config)
}

/// The types this server builds.
const KNOWN_TYPES: [&str; 5] = ["AlwaysAllow", "AlwaysDeny", "Module", "RBAC", "Webhook"];

/// The supported values, as field errors list them.
const SUPPORTED: &str =
    "supported values: \"AlwaysAllow\", \"AlwaysDeny\", \"Module\", \"RBAC\", \"Webhook\"";

fn validate(config: &AuthorizationConfiguration) -> Vec<String> {
    let mut errors = Vec::new();
    if config.kind != "AuthorizationConfiguration"
        || !matches!(
            config.api_version.as_str(),
            "apiserver.config.k8s.io/v1"
                | "apiserver.config.k8s.io/v1beta1"
                | "apiserver.config.k8s.io/v1alpha1"
        )
    {
        errors.push(format!(
            "no kind \"{}\" is registered for version \"{}\": expected apiserver.config.k8s.io/v1 AuthorizationConfiguration",
            config.kind, config.api_version
        ));
    }
    if config.authorizers.is_empty() {
        errors.push(
            "authorizers: Required value: at least one authorization mode must be defined".into(),
        );
    }
    let mut types = Vec::new();
    let mut names = Vec::new();
    for (i, a) in config.authorizers.iter().enumerate() {
        let at = format!("authorizers[{i}]");
        let kind = a.authorizer_type.as_str();
        match kind {
            "" => {
                errors.push(format!("{at}.type: Required value"));
                continue;
            }
            "Node" | "ABAC" => {
                errors.push(format!("{at}.type: Unsupported value: {kind:?}: this server has no {kind} authorizer; {SUPPORTED}"));
                continue;
            }
            _ if !KNOWN_TYPES.contains(&kind) => {
                errors.push(format!(
                    "{at}.type: Unsupported value: {kind:?}: {SUPPORTED}"
                ));
                continue;
            }
            _ if !matches!(kind, "Webhook" | "Module") && types.contains(&kind) => {
                errors.push(format!("{at}.type: Duplicate value: {kind:?}"));
                continue;
            }
            _ => types.push(kind),
        }
        if a.name.is_empty() {
            errors.push(format!("{at}.name: Required value"));
        } else if names.contains(&a.name.as_str()) {
            errors.push(format!("{at}.name: Duplicate value: {:?}", a.name));
        } else if let Some(e) = strategy_host_registry::names::dns1123_subdomain_error(&a.name) {
            errors.push(format!(
                "{at}.name: Invalid value: {:?}: authorizer name is invalid: {e}",
                a.name
            ));
        }
        names.push(&a.name);
        match (&a.webhook, kind) {
            (None, "Webhook") => errors.push(format!(
                "{at}.webhook: Required value: required when type=Webhook"
            )),
            (Some(w), "Webhook") => {
                if let Err(mut e) = settings(w, &at) {
                    errors.append(&mut e);
                }
            }
            (Some(_), _) => errors.push(format!(
                "{at}.webhook: Invalid value: \"non-null\": may only be specified when type=Webhook"
            )),
            (None, _) => {}
        }
    }
    errors
}

/// `webhook`'s settings, defaulted as kube-apiserver defaults them, or its field errors (under
/// `at`).
///
/// # Errors
/// Every invalid field.
pub fn settings(webhook: &WebhookConfiguration, at: &str) -> Result<WebhookSettings, Vec<String>> {
    let mut errors = Vec::new();
    let mut duration = |field: &str, text: Option<&str>, default: Option<Duration>| {
        let parsed = match text {
            None | Some("") => default,
            Some(text) => match strategy_host_apimachinery::go_duration::parse(text) {
                Some(d) => Some(d),
                None => {
                    errors.push(format!(
                        "{at}.{field}: Invalid value: {text:?}: time: invalid duration {text:?}"
                    ));
                    return Duration::ZERO;
                }
            },
        };
        match parsed {
            Some(d) if !d.is_zero() => d,
            _ => {
                errors.push(format!("{at}.{field}: Required value"));
                Duration::ZERO
            }
        }
    };
    let timeout = duration("timeout", webhook.timeout.as_deref(), None);
    let authorized_ttl = duration(
        "authorizedTTL",
        webhook.authorized_ttl.as_deref(),
        Some(Duration::from_secs(300)),
    );
    let unauthorized_ttl = duration(
        "unauthorizedTTL",
        webhook.unauthorized_ttl.as_deref(),
        Some(Duration::from_secs(30)),
    );
    if timeout > Duration::from_secs(30) {
        errors.push(format!(
            "{at}.timeout: Invalid value: {:?}: must be > 0s and <= 30s",
            webhook.timeout.clone().unwrap_or_default()
        ));
    }
    match webhook.subject_access_review_version.as_str() {
        "" => errors.push(format!("{at}.subjectAccessReviewVersion: Required value")),
        "v1" | "v1beta1" => {}
        other => errors.push(format!(
            "{at}.subjectAccessReviewVersion: Unsupported value: {other:?}: supported values: \"v1\", \"v1beta1\""
        )),
    }
    match webhook.match_condition_subject_access_review_version.as_str() {
        "" if !webhook.match_conditions.is_empty() => errors.push(format!(
            "{at}.matchConditionSubjectAccessReviewVersion: Required value: required if match conditions are specified"
        )),
        "" | "v1" => {}
        other => errors.push(format!(
            "{at}.matchConditionSubjectAccessReviewVersion: Unsupported value: {other:?}: supported values: \"v1\""
        )),
    }
    match webhook.failure_policy.as_str() {
        "" => errors.push(format!("{at}.failurePolicy: Required value")),
        "NoOpinion" | "Deny" => {}
        other => errors.push(format!(
            "{at}.failurePolicy: Unsupported value: {other:?}: supported values: \"NoOpinion\", \"Deny\""
        )),
    }
    let kubeconfig = webhook
        .connection_info
        .kube_config_file
        .clone()
        .unwrap_or_default();
    let file = format!("{at}.connectionInfo.kubeConfigFile");
    match webhook.connection_info.connection_type.as_str() {
        "" => errors.push(format!("{at}.connectionInfo.type: Required value")),
        "KubeConfigFile" if kubeconfig.is_empty() => errors.push(format!("{file}: Required value")),
        "KubeConfigFile" if !std::path::Path::new(&kubeconfig).is_absolute() => {
            errors.push(format!("{file}: Invalid value: {kubeconfig:?}: must be an absolute path"));
        }
        "KubeConfigFile" => match std::fs::metadata(&kubeconfig) {
            Err(e) => errors.push(format!(
                "{file}: Invalid value: {kubeconfig:?}: error loading file: stat {kubeconfig}: {e}"
            )),
            Ok(m) if !m.is_file() => errors.push(format!(
                "{file}: Invalid value: {kubeconfig:?}: must be a regular file"
            )),
            Ok(_) => {}
        },
        "InClusterConfig" => errors.push(format!(
            "{at}.connectionInfo.type: Unsupported value: \"InClusterConfig\": this server runs in no cluster; supported values: \"KubeConfigFile\""
        )),
        other => errors.push(format!(
            "{at}.connectionInfo.type: Unsupported value: {other:?}: supported values: \"InClusterConfig\", \"KubeConfigFile\""
        )),
    }
    if webhook.match_conditions.len() > 64 {
        errors.push(format!(
            "{at}.matchConditions: Too many: {}: must have at most 64 items",
            webhook.match_conditions.len()
        ));
    }
    let mut seen = Vec::new();
    for (i, condition) in webhook.match_conditions.iter().enumerate() {
        let field = format!("{at}.matchConditions[{i}].expression");
        let expression = condition.expression.as_str();
        if expression.trim().is_empty() {
            errors.push(format!("{field}: Required value"));
        } else if seen.contains(&expression) {
            errors.push(format!("{field}: Duplicate value: {expression:?}"));
        } else if let Err(e) = Expression::compile(expression) {
            errors.push(format!("{field}: Invalid value: {expression:?}: {e}"));
        }
        seen.push(expression);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let cached = |on: Option<bool>, ttl: Duration| on.unwrap_or(true).then_some(ttl);
    Ok(WebhookSettings {
        authorized_ttl: cached(webhook.cache_authorized_requests, authorized_ttl),
        unauthorized_ttl: cached(webhook.cache_unauthorized_requests, unauthorized_ttl),
        timeout,
        review_version: webhook.subject_access_review_version.clone(),
        deny_on_failure: webhook.failure_policy == "Deny",
        kubeconfig,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig() -> tempfile::NamedTempFile {
        tempfile::NamedTempFile::new().unwrap()
    }

    #[test]
    fn a_webhook_and_rbac_read_with_kubernetes_defaults() {
        let file = kubeconfig();
        let text = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n\
             - type: Webhook\n  name: corp\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    \
             matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    connectionInfo:\n      \
             type: KubeConfigFile\n      kubeConfigFile: {}\n    matchConditions:\n    - expression: has(request.resourceAttributes)\n\
             - type: RBAC\n  name: rbac\n",
            file.path().display()
        );
        let config = parse(&text).unwrap();
        assert_eq!(config.authorizers.len(), 2);
        let webhook = config.authorizers[0].webhook.as_ref().unwrap();
        let s = settings(webhook, "authorizers[0]").unwrap();
        assert_eq!(s.timeout, Duration::from_secs(3));
        assert_eq!(s.authorized_ttl, Some(Duration::from_secs(300)));
        assert_eq!(s.unauthorized_ttl, Some(Duration::from_secs(30)));
        assert!(s.deny_on_failure);
    }

    #[test]
    fn invalid_fields_are_named_as_kube_apiserver_names_them() {
        let text = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n\
             - type: RBAC\n  name: rbac\n- type: RBAC\n  name: again\n- type: Node\n  name: node\n\
             - type: Webhook\n  name: Bad_Name\n  webhook:\n    timeout: 31s\n    subjectAccessReviewVersion: v2\n    \
             failurePolicy: Allow\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: relative.yaml\n    \
             matchConditions:\n    - expression: 'request.user =='\n";
        let errors = parse(text).unwrap_err().to_string();
        let lines: Vec<&str> = errors.lines().collect();
        assert_eq!(lines[0], "authorizers[1].type: Duplicate value: \"RBAC\"");
        assert!(lines[1].starts_with("authorizers[2].type: Unsupported value: \"Node\""));
        assert!(lines[2].starts_with(
            "authorizers[3].name: Invalid value: \"Bad_Name\": authorizer name is invalid"
        ));
        assert!(lines
            .contains(&"authorizers[3].timeout: Invalid value: \"31s\": must be > 0s and <= 30s"));
        assert!(lines.contains(&"authorizers[3].subjectAccessReviewVersion: Unsupported value: \"v2\": supported values: \"v1\", \"v1beta1\""));
        assert!(lines.contains(&"authorizers[3].matchConditionSubjectAccessReviewVersion: Required value: required if match conditions are specified"));
        assert!(lines.contains(&"authorizers[3].failurePolicy: Unsupported value: \"Allow\": supported values: \"NoOpinion\", \"Deny\""));
        assert!(lines.contains(&"authorizers[3].connectionInfo.kubeConfigFile: Invalid value: \"relative.yaml\": must be an absolute path"));
        assert!(lines.iter().any(|l| l.starts_with(
            "authorizers[3].matchConditions[0].expression: Invalid value: \"request.user ==\""
        )));
        assert_eq!(
            parse("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n")
                .unwrap_err()
                .to_string(),
            "authorizers: Required value: at least one authorization mode must be defined"
        );
    }
}
