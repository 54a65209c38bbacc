//! Escalation prevention: whether the rules a user holds cover the rules a Role, ClusterRole or
//! binding would grant (Kubernetes' `validation.Covers`, `BreakdownRule`, `CompactRules` and
//! `ConfirmNoEscalation`, with its message).

use std::collections::BTreeSet;

use super::policy::{go_quote, go_quote_list, PolicyRule, ALL};
use crate::user::UserInfo;

/// The rules `cluster-admin` holds: what setting an aggregationRule requires.
pub fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule {
            verbs: vec![ALL.into()],
            api_groups: vec![ALL.into()],
            resources: vec![ALL.into()],
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: vec![ALL.into()],
            non_resource_urls: vec![ALL.into()],
            ..PolicyRule::default()
        },
    ]
}

/// Splits `rule` into rules of one group, resource, verb and name (or one URL and verb).
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let one = |names: Vec<String>| PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    resource_names: names,
                    non_resource_urls: vec![],
                };
                if rule.resource_names.is_empty() {
                    out.push(one(vec![]));
                } else {
                    out.extend(rule.resource_names.iter().map(|n| one(vec![n.clone()])));
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: vec![verb.clone()],
                non_resource_urls: vec![url.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn has(set: &[String], want: &str) -> bool {
    set.iter().any(|s| s == want)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

fn non_resource_urls_cover(owner: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|path| {
        owner.iter().any(|o| {
            o == path
                || o.strip_suffix('*')
                    .is_some_and(|p| path.starts_with(p.trim_end_matches('*')))
        })
    })
}

/// Whether `owner` (any rule) covers `sub` (one broken-down rule): `ruleCovers`.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs
        && groups
        && resources_cover(&owner.resources, &sub.resources)
        && names
        && non_resource_urls_cover(&owner.non_resource_urls, &sub.non_resource_urls)
}

/// `Covers`: whether `owner` rules cover every `servant` rule, and the broken-down rules they
/// do not cover.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let missing: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (missing.is_empty(), missing)
}

/// `CompactRules`: rules of one group and one resource with nothing but verbs are merged into one
/// rule per group and resource.
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut compacted = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            compacted.push(rule.clone());
            continue;
        }
        match simple
            .iter_mut()
            .find(|s| s.api_groups == rule.api_groups && s.resources == rule.resources)
        {
            Some(existing) => existing.verbs.extend(rule.verbs.iter().cloned()),
            None => simple.push(rule.clone()),
        }
    }
    compacted.extend(simple);
    compacted
}

/// A grant of rules the granting user does not hold, in the words of Kubernetes'
/// `ConfirmNoEscalation`: the rules not held (sorted, one a line), with any errors met while
/// resolving the user's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}{}",
    go_quote(.user),
    go_quote_list(.groups),
    .missing.join("\n"),
    resolution(.resolution_errors)
)]
pub struct Escalation {
    /// The granting user's name.
    pub user: String,
    /// Their groups.
    pub groups: Vec<String>,
    /// The rules granted and not held, compact.
    pub missing: Vec<String>,
    /// Errors met resolving the rules the user holds.
    pub resolution_errors: Vec<String>,
}

fn resolution(errors: &[String]) -> String {
    match errors {
        [] => String::new(),
        errors => format!("; resolution errors: [{}]", errors.join(" ")),
    }
}

/// `ConfirmNoEscalation`: `Ok` when `held` covers `granted`, else Kubernetes' message naming
/// the rules not held (sorted, one a line), with any errors met while resolving `held`.
///
/// # Errors
/// The escalation, for a 403 Forbidden.
pub fn confirm_no_escalation(
    user: &UserInfo,
    held: &[PolicyRule],
    resolution_errors: &[String],
    granted: &[PolicyRule],
) -> Result<(), Escalation> {
    let (covered, missing) = covers(held, granted);
    if covered {
        return Ok(());
    }
    let descriptions: BTreeSet<String> = compact_rules(&missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    Err(Escalation {
        user: user.username.clone(),
        groups: user.groups.clone(),
        missing: descriptions.into_iter().collect(),
        resolution_errors: resolution_errors.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::policy::tests::rule;

    #[test]
    fn stars_cover_everything() {
        let (ok, missing) = covers(
            &full_authority(),
            &[
                rule(&["get"], &[""], &["secrets"], &["a"]),
                PolicyRule {
                    verbs: vec!["get".into()],
                    non_resource_urls: vec!["/healthz".into()],
                    ..PolicyRule::default()
                },
            ],
        );
        assert!(ok, "{missing:?}");
    }

    #[test]
    fn subresources_and_names_are_covered_as_kubernetes_does() {
        let owner = [
            rule(&["get", "list"], &[""], &["configmaps", "*/status"], &[]),
            rule(&["get"], &[""], &["secrets"], &["a", "b"]),
        ];
        assert!(covers(&owner, &[rule(&["get"], &[""], &["pods/status"], &[])]).0);
        assert!(covers(&owner, &[rule(&["get"], &[""], &["secrets"], &["a"])]).0);
        // A rule limited to names never covers the unlimited one.
        let (ok, missing) = covers(&owner, &[rule(&["get"], &[""], &["secrets"], &[])]);
        assert!(!ok);
        assert_eq!(missing, [rule(&["get"], &[""], &["secrets"], &[])]);
        let (ok, missing) = covers(
            &owner,
            &[rule(&["get", "delete"], &[""], &["configmaps"], &[])],
        );
        assert!(!ok);
        assert_eq!(missing, [rule(&["delete"], &[""], &["configmaps"], &[])]);
    }

    #[test]
    fn the_refusal_lists_missing_rules_compacted_and_sorted() {
        let user = UserInfo {
            username: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        };
        let held = [rule(&["get"], &[""], &["configmaps"], &[])];
        let granted = [
            rule(&["get", "list"], &[""], &["secrets"], &[]),
            rule(&["get"], &[""], &["configmaps"], &[]),
            rule(&["create"], &["apps"], &["deployments"], &[]),
        ];
        let err = confirm_no_escalation(&user, &held, &[], &granted)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}\n\
             {APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"create\"]}"
        );
        assert!(confirm_no_escalation(&user, &held, &[], &held).is_ok());
        assert!(confirm_no_escalation(&user, &held, &[], &[]).is_ok());
    }
}
