//! The structured authentication configuration (`--authentication-config`,
//! `apiserver.config.k8s.io/v1` or `v1beta1` `AuthenticationConfiguration`): its JWT issuers,
//! read from YAML or JSON and validated (`validation.rs`) with kube-apiserver's field errors.

use serde::Deserialize;

use strategy_host_apimachinery::config_file::InvalidConfiguration;

/// The file's content.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationConfiguration {
    /// `apiserver.config.k8s.io/v1` (or `v1beta1`).
    pub api_version: String,
    /// `AuthenticationConfiguration`.
    pub kind: String,
    /// The JWT issuers, each an authenticator.
    #[serde(default)]
    pub jwt: Vec<JwtAuthenticator>,
    /// Anonymous access, everywhere or on the paths listed (instead of `--anonymous-auth`).
    #[serde(default)]
    pub anonymous: Option<Anonymous>,
}

/// `anonymous`: whether requests without credentials act as `system:anonymous`, and where.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Anonymous {
    /// On or off.
    pub enabled: bool,
    /// The paths it is limited to (none: everywhere).
    pub conditions: Vec<AnonymousCondition>,
}

/// One path anonymous access is allowed on.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct AnonymousCondition {
    /// The path, matched exactly (`/livez`).
    pub path: String,
}

impl Anonymous {
    /// Whether a request to `path` without credentials is anonymous.
    pub fn allows(&self, path: &str) -> bool {
        self.enabled
            && (self.conditions.is_empty() || self.conditions.iter().any(|c| c.path == path))
    }
}

/// One JWT issuer and how its tokens map to users.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JwtAuthenticator {
    /// Who issues the tokens and for whom.
    pub issuer: Issuer,
    /// Rules every token's claims must pass.
    #[serde(default)]
    pub claim_validation_rules: Vec<ClaimValidationRule>,
    /// How claims become the user.
    pub claim_mappings: ClaimMappings,
    /// CEL rules over the mapped `user` that must all hold.
    #[serde(default)]
    pub user_validation_rules: Vec<UserValidationRule>,
}

/// A CEL rule over `user` (`username`, `uid`, `groups`, `extra`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct UserValidationRule {
    /// The expression; must be true.
    pub expression: String,
    /// What the 401's log says when it is false.
    pub message: Option<String>,
}

/// An extra attribute of the user, from a CEL expression over `claims`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ExtraMapping {
    /// The key: a domain-prefixed path, lower case (`example.com/tenant`).
    pub key: String,
    /// A string or a list of strings (empty: the key is left out).
    pub value_expression: String,
}

/// The issuer.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Issuer {
    /// The `iss` of its tokens (https).
    pub url: String,
    /// Where its OpenID configuration is, when not at `url` + `/.well-known/openid-configuration`.
    #[serde(default, rename = "discoveryURL")]
    pub discovery_url: Option<String>,
    /// PEM CA certificates its discovery and key set are served with.
    #[serde(default)]
    pub certificate_authority: Option<String>,
    /// A token must name one of these in `aud`.
    #[serde(default)]
    pub audiences: Vec<String>,
    /// `MatchAny` (the only policy; required with more than one audience).
    #[serde(default)]
    pub audience_match_policy: Option<String>,
}

/// A claim that must hold a value (`claim` + `requiredValue`), or a CEL rule.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ClaimValidationRule {
    /// The claim.
    pub claim: Option<String>,
    /// The value it must have.
    pub required_value: Option<String>,
    /// A CEL rule over `claims`; must be true.
    pub expression: Option<String>,
    /// The CEL rule's message.
    pub message: Option<String>,
}

/// How claims become the user's name, groups, uid and extra.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClaimMappings {
    /// The user name.
    pub username: PrefixedClaim,
    /// The groups.
    #[serde(default)]
    pub groups: Option<PrefixedClaim>,
    /// The uid.
    #[serde(default)]
    pub uid: Option<PrefixedClaim>,
    /// Extra attributes, each a CEL expression over `claims`.
    #[serde(default)]
    pub extra: Vec<ExtraMapping>,
}

/// A claim with a prefix, or a CEL expression.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct PrefixedClaim {
    /// The claim.
    pub claim: Option<String>,
    /// Put before each value (required with `claim` for user names and groups; may be "").
    pub prefix: Option<String>,
    /// A CEL expression over `claims`, instead of `claim` and `prefix`.
    pub expression: Option<String>,
}

/// Reads and validates a configuration.
///
/// # Errors
/// The file is not YAML or JSON of this kind, or a field is invalid: every field error,
/// worded as kube-apiserver words them, one per line.
pub fn parse(text: &str) -> Result<AuthenticationConfiguration, InvalidConfiguration> {
    let config: AuthenticationConfiguration = InvalidConfiguration::decode(text)?;
    InvalidConfiguration::check(super::validation::validate(&config))?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://idp.example
    audiences: [kubernetes]
  claimValidationRules:
  - claim: hd
    requiredValue: example.com
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
    groups: {claim: groups, prefix: ""}
"#;

    #[test]
    fn a_configuration_with_one_issuer_reads() {
        let config = parse(GOOD).unwrap();
        assert_eq!(config.jwt[0].issuer.url, "https://idp.example");
        assert_eq!(
            config.jwt[0].claim_mappings.username.prefix.as_deref(),
            Some("oidc:")
        );
    }

    #[test]
    fn invalid_fields_are_named_as_kubernetes_names_them() {
        let bad = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "http://idp", audiences: []}
  claimMappings:
    username: {claim: sub}
- issuer: {url: "http://idp", audiences: [a, b]}
  claimMappings:
    username: {expression: "claims.sub + "}
"#;
        let errors = parse(bad).unwrap_err().to_string();
        for expected in [
            r#"jwt[0].issuer.url: Invalid value: "http://idp": URL scheme must be https"#,
            "jwt[0].issuer.audiences: Required value: at least one jwt[0].issuer.audiences is required",
            "jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set",
            r#"jwt[1].issuer.url: Duplicate value: "http://idp""#,
            "jwt[1].issuer.audienceMatchPolicy: Invalid value: \"\": audienceMatchPolicy must be MatchAny for multiple audiences",
            r#"jwt[1].claimMappings.username.expression: Invalid value: "claims.sub + ": compilation failed"#,
        ] {
            assert!(errors.contains(expected), "{expected}\nnot in:\n{errors}");
        }
        let kind = parse("kind: Other\napiVersion: v1\n").unwrap_err();
        assert!(matches!(kind, InvalidConfiguration::Fields(_)), "{kind:?}");
        assert!(kind.to_string().contains("no kind"), "{kind}");
        let decoding = parse("jwt: [").unwrap_err();
        assert!(matches!(decoding, InvalidConfiguration::Decoding(_)));
        assert!(decoding.to_string().starts_with("decoding"), "{decoding}");
    }

    #[test]
    fn cel_fields_are_checked_as_kube_apiserver_checks_them() {
        let text = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://idp", audiences: [k]}
  claimValidationRules:
  - {claim: hd, expression: "true"}
  claimMappings:
    username: {expression: "claims.email", prefix: "x:"}
    extra:
    - {key: "tenant", valueExpression: "claims.t"}
    - {key: "kubernetes.io/t", valueExpression: "claims.t"}
    - {key: "example.com/T", valueExpression: "claims.t"}
    - {key: "example.com/t", valueExpression: ""}
  userValidationRules:
  - {expression: ""}
"#;
        let errors = parse(text).unwrap_err().to_string();
        for expected in [
            r#"jwt[0].claimValidationRules[0]: Invalid value: "": claim and expression can't both be set"#,
            r#"jwt[0].claimMappings.username.prefix: Invalid value: "x:": may not be specified when claim is not set"#,
            r#"jwt[0].claimMappings.extra[0].key: Invalid value: "tenant": must be a domain-prefix path"#,
            r#"jwt[0].claimMappings.extra[1].key: Invalid value: "kubernetes.io/t": k8s.io, kubernetes.io and their subdomains are reserved"#,
            r#"jwt[0].claimMappings.extra[2].key: Invalid value: "example.com/T": key must be lowercase"#,
            "jwt[0].claimMappings.extra[3].valueExpression: Required value",
            "jwt[0].userValidationRules[0].expression: Required value",
            r#"jwt[0].claimMappings.username.expression: Invalid value: "claims.email": claims.email_verified must be used"#,
        ] {
            assert!(errors.contains(expected), "{expected}\nnot in:\n{errors}");
        }
    }
}
