//! The structured authentication configuration (`--authentication-config`,
//! `apiserver.config.k8s.io/v1` or `v1beta1` `AuthenticationConfiguration`): its JWT issuers,
//! read from YAML or JSON and validated with kube-apiserver's field errors.

use serde::Deserialize;

use crate::registry::cel::expression::Expression;

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
pub struct Anonymous {
    /// On or off.
    #[serde(default)]
    pub enabled: bool,
    /// The paths it is limited to (none: everywhere).
    #[serde(default)]
    pub conditions: Vec<AnonymousCondition>,
}

/// One path anonymous access is allowed on.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct AnonymousCondition {
    /// The path, matched exactly (`/livez`).
    #[serde(default)]
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
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UserValidationRule {
    /// The expression; must be true.
    #[serde(default)]
    pub expression: String,
    /// What the 401's log says when it is false.
    #[serde(default)]
    pub message: Option<String>,
}

/// An extra attribute of the user, from a CEL expression over `claims`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExtraMapping {
    /// The key: a domain-prefixed path, lower case (`example.com/tenant`).
    #[serde(default)]
    pub key: String,
    /// A string or a list of strings (empty: the key is left out).
    #[serde(default)]
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
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClaimValidationRule {
    /// The claim.
    #[serde(default)]
    pub claim: Option<String>,
    /// The value it must have.
    #[serde(default)]
    pub required_value: Option<String>,
    /// A CEL rule over `claims`; must be true.
    #[serde(default)]
    pub expression: Option<String>,
    /// The CEL rule's message.
    #[serde(default)]
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
#[serde(rename_all = "camelCase")]
pub struct PrefixedClaim {
    /// The claim.
    #[serde(default)]
    pub claim: Option<String>,
    /// Put before each value (required with `claim` for user names and groups; may be "").
    #[serde(default)]
    pub prefix: Option<String>,
    /// A CEL expression over `claims`, instead of `claim` and `prefix`.
    #[serde(default)]
    pub expression: Option<String>,
}

/// Reads and validates a configuration.
///
/// # Errors
/// The file is not YAML or JSON of this kind, or a field is invalid: every field error,
/// worded as kube-apiserver words them, one per line.
pub fn parse(text: &str) -> Result<AuthenticationConfiguration, String> {
    let config: AuthenticationConfiguration =
        serde_yaml::from_str(text).map_err(|e| format!("decoding the configuration: {e}"))?;
    let errors = validate(&config);
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors.join("\n"))
    }
}

/// `{at}: Invalid value` when `expression` does not compile.
fn compiles(expression: &str, at: &str, errors: &mut Vec<String>) {
    if let Err(e) = Expression::compile(expression) {
        errors.push(format!("{at}: Invalid value: {expression:?}: {e}"));
    }
}

fn validate(config: &AuthenticationConfiguration) -> Vec<String> {
    let mut errors = Vec::new();
    if config.kind != "AuthenticationConfiguration"
        || !matches!(
            config.api_version.as_str(),
            "apiserver.config.k8s.io/v1" | "apiserver.config.k8s.io/v1beta1"
        )
    {
        errors.push(format!(
            "no kind \"{}\" is registered for version \"{}\": expected apiserver.config.k8s.io/v1 AuthenticationConfiguration",
            config.kind, config.api_version
        ));
    }
    if let Some(anonymous) = &config.anonymous {
        if !anonymous.enabled && !anonymous.conditions.is_empty() {
            errors.push(
                "anonymous.conditions: Invalid value: \"\": enabled should be set to true when conditions are defined"
                    .into(),
            );
        }
        let mut seen = Vec::new();
        for (i, c) in anonymous.conditions.iter().enumerate() {
            if c.path.is_empty() {
                errors.push(format!("anonymous.conditions[{i}].path: Required value"));
            } else if seen.contains(&&c.path) {
                errors.push(format!(
                    "anonymous.conditions[{i}].path: Duplicate value: {:?}",
                    c.path
                ));
            }
            seen.push(&c.path);
        }
    }
    let mut seen = Vec::new();
    for (i, jwt) in config.jwt.iter().enumerate() {
        let at = |field: &str| format!("jwt[{i}].{field}");
        let issuer = &jwt.issuer;
        match issuer.url.split_once("://") {
            _ if issuer.url.is_empty() => errors.push(format!(
                "{}: Required value: URL is required",
                at("issuer.url")
            )),
            Some(("https", rest)) if !rest.is_empty() => {}
            _ => errors.push(format!(
                "{}: Invalid value: {:?}: URL scheme must be https",
                at("issuer.url"),
                issuer.url
            )),
        }
        if seen.contains(&issuer.url) {
            errors.push(format!(
                "{}: Duplicate value: {:?}",
                at("issuer.url"),
                issuer.url
            ));
        }
        seen.push(issuer.url.clone());
        if let Some(discovery) = &issuer.discovery_url {
            if !discovery.starts_with("https://") {
                errors.push(format!(
                    "{}: Invalid value: {discovery:?}: discoveryURL scheme must be https",
                    at("issuer.discoveryURL")
                ));
            }
            if discovery == &issuer.url {
                errors.push(format!(
                    "{}: Invalid value: {discovery:?}: discoveryURL must be different from URL",
                    at("issuer.discoveryURL")
                ));
            }
        }
        if issuer.audiences.is_empty() {
            errors.push(format!(
                "{}: Required value: at least one {} is required",
                at("issuer.audiences"),
                at("issuer.audiences")
            ));
        }
        match issuer.audience_match_policy.as_deref() {
            None if issuer.audiences.len() > 1 => errors.push(format!(
                "{}: Invalid value: \"\": audienceMatchPolicy must be MatchAny for multiple audiences",
                at("issuer.audienceMatchPolicy")
            )),
            None | Some("MatchAny") => {}
            Some(other) => errors.push(format!(
                "{}: Invalid value: {other:?}: audienceMatchPolicy must be empty or MatchAny for single audience",
                at("issuer.audienceMatchPolicy")
            )),
        }
        if let Some(ca) = &issuer.certificate_authority {
            if let Err(e) = crate::pki::trust_store(ca.as_bytes(), "certificateAuthority") {
                errors.push(format!(
                    "{}: Invalid value: \"<omitted>\": {e}",
                    at("issuer.certificateAuthority")
                ));
            }
        }
        for (r, rule) in jwt.claim_validation_rules.iter().enumerate() {
            let field = at(&format!("claimValidationRules[{r}]"));
            match (&rule.claim, &rule.expression) {
                (Some(_), None) => {}
                (None, Some(expression)) => {
                    compiles(expression, &format!("{field}.expression"), &mut errors);
                    if rule.required_value.is_some() {
                        errors.push(format!("{field}.requiredValue: Invalid value: {:?}: requiredValue can't be set when expression is set", rule.required_value.as_deref().unwrap_or_default()));
                    }
                }
                (Some(_), Some(_)) => errors.push(format!(
                    "{field}: Invalid value: \"\": claim and expression can't both be set"
                )),
                (None, None) => errors.push(format!(
                    "{field}: Invalid value: \"\": claim or expression is required"
                )),
            }
        }
        prefixed_claim(
            &jwt.claim_mappings.username,
            &at("claimMappings.username"),
            true,
            &mut errors,
        );
        if let Some(groups) = &jwt.claim_mappings.groups {
            prefixed_claim(groups, &at("claimMappings.groups"), false, &mut errors);
        }
        if let Some(uid) = &jwt.claim_mappings.uid {
            let field = at("claimMappings.uid");
            match (&uid.claim, &uid.expression) {
                (Some(_), Some(_)) => errors.push(format!(
                    "{field}: Invalid value: \"\": claim and expression can't both be set"
                )),
                (None, Some(expression)) => {
                    compiles(expression, &format!("{field}.expression"), &mut errors)
                }
                _ => {}
            }
        }
        let mut keys = Vec::new();
        for (e, extra) in jwt.claim_mappings.extra.iter().enumerate() {
            let field = at(&format!("claimMappings.extra[{e}]"));
            let key = extra.key.as_str();
            if key.is_empty() {
                errors.push(format!("{field}.key: Required value"));
            } else if !key.contains('/') || key.starts_with('/') {
                errors.push(format!("{field}.key: Invalid value: {key:?}: must be a domain-prefix path (such as \"acme.io/foo\")"));
            } else if key != key.to_lowercase() {
                errors.push(format!(
                    "{field}.key: Invalid value: {key:?}: key must be lowercase"
                ));
            } else if ["kubernetes.io", "k8s.io"].iter().any(|d| {
                let domain = key.split('/').next().unwrap_or_default();
                domain == *d || domain.ends_with(&format!(".{d}"))
            }) {
                errors.push(format!("{field}.key: Invalid value: {key:?}: k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use"));
            } else if keys.contains(&key) {
                errors.push(format!("{field}.key: Duplicate value: {key:?}"));
            }
            keys.push(key);
            if extra.value_expression.is_empty() {
                errors.push(format!(
                    "{field}.valueExpression: Required value: valueExpression is required"
                ));
            } else {
                compiles(
                    &extra.value_expression,
                    &format!("{field}.valueExpression"),
                    &mut errors,
                );
            }
        }
        for (u, rule) in jwt.user_validation_rules.iter().enumerate() {
            let field = at(&format!("userValidationRules[{u}].expression"));
            match rule.expression.as_str() {
                "" => errors.push(format!("{field}: Required value: expression is required")),
                expression => compiles(expression, &field, &mut errors),
            }
        }
        email_verified_is_checked(jwt, &at("claimMappings.username.expression"), &mut errors);
    }
    errors
}

/// Kubernetes' rule: a user name taken from `claims.email` by an expression must look at
/// `claims.email_verified` somewhere (the user name, an extra, or a claim validation rule), as
/// the `claim: email` mapping checks it itself.
fn email_verified_is_checked(jwt: &JwtAuthenticator, at: &str, errors: &mut Vec<String>) {
    let Some(username) = &jwt.claim_mappings.username.expression else {
        return;
    };
    if !username.contains("claims.email") || username.contains("claims.email_verified") {
        return;
    }
    let elsewhere = jwt
        .claim_mappings
        .extra
        .iter()
        .map(|e| e.value_expression.as_str())
        .chain(
            jwt.claim_validation_rules
                .iter()
                .filter_map(|r| r.expression.as_deref()),
        )
        .any(|e| e.contains("claims.email_verified"));
    if !elsewhere {
        errors.push(format!("{at}: Invalid value: {username:?}: claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression"));
    }
}

/// A user name or groups mapping: a claim with a prefix (required for user names and groups
/// alike, as in Kubernetes; `""` disables prefixing).
fn prefixed_claim(mapping: &PrefixedClaim, at: &str, required: bool, errors: &mut Vec<String>) {
    if let Some(expression) = &mapping.expression {
        if mapping.claim.is_some() {
            errors.push(format!(
                "{at}: Invalid value: \"\": claim and expression can't both be set"
            ));
        }
        if let Some(prefix) = &mapping.prefix {
            errors.push(format!(
                "{at}.prefix: Invalid value: {prefix:?}: may not be specified when claim is not set"
            ));
        }
        compiles(expression, &format!("{at}.expression"), errors);
        return;
    }
    match &mapping.claim {
        None if required => errors.push(format!(
            "{at}: Required value: claim or expression is required"
        )),
        None => {}
        Some(_) if mapping.prefix.is_none() => errors.push(format!(
            "{at}.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing"
        )),
        Some(_) => {}
    }
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
        let errors = parse(bad).unwrap_err();
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
        assert!(parse("kind: Other\napiVersion: v1\n")
            .unwrap_err()
            .contains("no kind"));
        assert!(parse("jwt: [").unwrap_err().starts_with("decoding"));
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
        let errors = parse(text).unwrap_err();
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
