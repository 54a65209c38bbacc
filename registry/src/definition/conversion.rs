//! `spec.conversion` of a CustomResourceDefinition: how objects move between its versions,
//! read and checked as Kubernetes checks it.

use serde_json::Value;

use crate::strategy::{FieldError, FieldErrorKind};
use strategy_host_https::webhook::{ClientConfig, Endpoint};

/// How a resource's objects are converted between its versions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Conversion {
    /// `None`: only `apiVersion` changes.
    #[default]
    None,
    /// `Webhook`: a `ConversionReview` sent to the webhook.
    Webhook {
        /// Where and how it is called.
        client: ClientConfig,
        /// The `ConversionReview` version sent (`v1`, else `v1beta1`).
        review_version: String,
    },
}

fn error(kind: FieldErrorKind, field: &str, detail: impl Into<String>) -> FieldError {
    FieldError {
        kind,
        field: field.into(),
        detail: detail.into(),
    }
}

impl Conversion {
    /// Reads `spec.conversion`, adding the field errors Kubernetes gives to `errors`.
    pub(super) fn parse(crd: &Value, errors: &mut Vec<FieldError>) -> Self {
        let conversion = crd.pointer("/spec/conversion");
        let strategy = conversion
            .and_then(|c| c.get("strategy"))
            .and_then(Value::as_str);
        let webhook = conversion
            .and_then(|c| c.get("webhook"))
            .filter(|w| !w.is_null());
        match strategy {
            None | Some("None") => {
                if webhook.is_some() {
                    errors.push(error(
                        FieldErrorKind::Forbidden,
                        "spec.conversion.webhook",
                        "should not be set when strategy is not set to Webhook",
                    ));
                }
                Self::None
            }
            Some("Webhook") => Self::webhook(webhook, errors),
            Some(other) => {
                errors.push(error(
                    FieldErrorKind::NotSupported,
                    "spec.conversion.strategy",
                    format!("{other:?}: supported values: \"None\", \"Webhook\""),
                ));
                Self::None
            }
        }
    }

    fn webhook(webhook: Option<&Value>, errors: &mut Vec<FieldError>) -> Self {
        let Some(webhook) = webhook else {
            errors.push(error(
                FieldErrorKind::Required,
                "spec.conversion.webhook",
                "required when strategy is set to Webhook",
            ));
            return Self::None;
        };
        let versions = crate::system_fields::strings(webhook.get("conversionReviewVersions"));
        let review_version = ["v1", "v1beta1"]
            .into_iter()
            .find(|v| versions.iter().any(|given| given == v));
        if review_version.is_none() {
            let shown: Vec<String> = versions.iter().map(|v| format!("{v:?}")).collect();
            errors.push(error(
                FieldErrorKind::Invalid,
                "spec.conversion.webhook.conversionReviewVersions",
                format!(
                    "[]string{{{}}}: must include at least one of v1, v1beta1",
                    shown.join(", ")
                ),
            ));
        }
        let config = webhook.get("clientConfig").unwrap_or(&Value::Null);
        let has_url = config.get("url").is_some_and(|u| !u.is_null());
        let has_service = config.get("service").is_some_and(|s| !s.is_null());
        if has_url == has_service {
            errors.push(error(
                FieldErrorKind::Required,
                "spec.conversion.webhook.clientConfig",
                "exactly one of url or service is required",
            ));
        }
        let client = ClientConfig::parse(config);
        if let Endpoint::Url(url) = &client.endpoint {
            if !url.starts_with("https://") {
                errors.push(error(
                    FieldErrorKind::Invalid,
                    "spec.conversion.webhook.clientConfig.url",
                    format!("{url:?}: 'https' is the only allowed URL scheme"),
                ));
            }
        }
        Self::Webhook {
            client,
            review_version: review_version.unwrap_or("v1").to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(crd: Value) -> (Conversion, Vec<String>) {
        let mut errors = Vec::new();
        let conversion = Conversion::parse(&crd, &mut errors);
        (conversion, errors.into_iter().map(|e| e.field).collect())
    }

    #[test]
    fn a_conversion_webhook_is_read_and_checked() {
        let good = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1beta1", "v1"],
            "clientConfig": {"url": "https://127.0.0.1:9443/convert"}}}}});
        let (conversion, errors) = fields(good);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(
            matches!(conversion, Conversion::Webhook { review_version, .. } if review_version == "v1")
        );
        let (_, errors) = fields(json!({"spec": {"conversion": {"strategy": "Webhook"}}}));
        assert_eq!(errors, vec!["spec.conversion.webhook"]);
        let bad = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v2"], "clientConfig": {"url": "http://x/convert"}}}}});
        let (_, errors) = fields(bad);
        assert_eq!(
            errors,
            vec![
                "spec.conversion.webhook.conversionReviewVersions",
                "spec.conversion.webhook.clientConfig.url"
            ]
        );
        let none_with_webhook =
            json!({"spec": {"conversion": {"strategy": "None", "webhook": {}}}});
        assert_eq!(fields(none_with_webhook).1, vec!["spec.conversion.webhook"]);
        assert_eq!(fields(json!({"spec": {}})).0, Conversion::None);
    }
}
