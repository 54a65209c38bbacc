//! The structured authentication configuration (`--authentication-config`,
//! `apiserver.config.k8s.io/v1` or `v1beta1` `AuthenticationConfiguration`): its JWT issuers,
//! read from YAML or JSON and validated with kube-apiserver's field errors.

use serde::Deserialize;

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
    /// Anonymous access by path (not supported yet: refused when set).
    #[serde(default)]
    pub anonymous: Option<serde_json::Value>,
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
    /// Rules on the mapped user (CEL; not supported yet: refused when set).
    #[serde(default)]
    pub user_validation_rules: Vec<serde_json::Value>,
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
    /// A CEL rule (not supported yet: refused).
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
    /// Extra attributes (CEL; not supported yet: refused when set).
    #[serde(default)]
    pub extra: Vec<serde_json::Value>,
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
    /// A CEL expression (not supported yet: refused).
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

const UNSUPPORTED_CEL: &str = "CEL expressions are not supported by this server yet";

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
    if config.anonymous.is_some() {
        errors.push(format!("anonymous: Forbidden: {}", "anonymous authentication by path is not supported by this server yet (use --anonymous-auth)"));
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
                (None, Some(_)) => {
                    errors.push(format!("{field}.expression: Forbidden: {UNSUPPORTED_CEL}"))
                }
                _ => errors.push(format!(
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
            if uid.expression.is_some() {
                errors.push(format!(
                    "{}.expression: Forbidden: {UNSUPPORTED_CEL}",
                    at("claimMappings.uid")
                ));
            }
        }
        if !jwt.claim_mappings.extra.is_empty() {
            errors.push(format!(
                "{}: Forbidden: {UNSUPPORTED_CEL}",
                at("claimMappings.extra")
            ));
        }
        if !jwt.user_validation_rules.is_empty() {
            errors.push(format!(
                "{}: Forbidden: {UNSUPPORTED_CEL}",
                at("userValidationRules")
            ));
        }
    }
    errors
}

/// A user name or groups mapping: a claim with a prefix (required for user names and groups
/// alike, as in Kubernetes; `""` disables prefixing).
fn prefixed_claim(mapping: &PrefixedClaim, at: &str, required: bool, errors: &mut Vec<String>) {
    if mapping.expression.is_some() {
        errors.push(format!("{at}.expression: Forbidden: {UNSUPPORTED_CEL}"));
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
    username: {expression: "claims.sub"}
"#;
        let errors = parse(bad).unwrap_err();
        for expected in [
            r#"jwt[0].issuer.url: Invalid value: "http://idp": URL scheme must be https"#,
            "jwt[0].issuer.audiences: Required value: at least one jwt[0].issuer.audiences is required",
            "jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set",
            r#"jwt[1].issuer.url: Duplicate value: "http://idp""#,
            "jwt[1].issuer.audienceMatchPolicy: Invalid value: \"\": audienceMatchPolicy must be MatchAny for multiple audiences",
            "jwt[1].claimMappings.username.expression: Forbidden: CEL expressions are not supported",
        ] {
            assert!(errors.contains(expected), "{expected}\nnot in:\n{errors}");
        }
        assert!(parse("kind: Other\napiVersion: v1\n")
            .unwrap_err()
            .contains("no kind"));
        assert!(parse("jwt: [").unwrap_err().starts_with("decoding"));
    }
}
