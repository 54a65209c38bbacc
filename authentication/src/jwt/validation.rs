//! The checks of a structured authentication configuration's JWT issuers, each failure a field
//! error worded as kube-apiserver words it: issuer URLs, audiences, CA, claim validation rules,
//! claim mappings (claims with prefixes or CEL), extra keys and user validation rules.

use super::config::{AuthenticationConfiguration, JwtAuthenticator, PrefixedClaim};
use strategy_host_cel::expression::Expression;

/// `{at}: Invalid value` when `expression` does not compile.
fn compiles(expression: &str, at: &str, errors: &mut Vec<String>) {
    if let Err(e) = Expression::compile(expression) {
        errors.push(format!("{at}: Invalid value: {expression:?}: {e}"));
    }
}

pub(super) fn validate(config: &AuthenticationConfiguration) -> Vec<String> {
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
            if let Err(e) =
                strategy_host_https::pki::trust_store(ca.as_bytes(), "certificateAuthority")
            {
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
