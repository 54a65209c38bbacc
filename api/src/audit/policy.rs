//! The audit policy (`audit.k8s.io/v1` `Policy`): read from `--audit-policy-file` (YAML or
//! JSON) and validated as kube-apiserver does, then asked for each request's level; rules are
//! tried in order and the first that matches decides (none matching: `None`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::event::{Level, Stage, StageSet};
use super::{Error, Result};
use strategy_host_authorization::Attributes;

/// What the policy decides for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestAuditConfig {
    /// The level the request is recorded at.
    pub level: Level,
    /// The stages not written.
    pub omit_stages: StageSet,
    /// Whether request and response objects are written without `metadata.managedFields`.
    pub omit_managed_fields: bool,
}

/// A validated policy, ready to match requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: StageSet,
    omit_managed_fields: bool,
}

/// One rule; empty lists match anything.
#[derive(Debug, Clone, PartialEq)]
struct Rule {
    level: Level,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    namespaces: Vec<String>,
    resources: Vec<GroupResources>,
    non_resource_urls: Vec<String>,
    /// The rule's stages joined with the policy's.
    omit_stages: StageSet,
    omit_managed_fields: Option<bool>,
}

/// Resources of one API group a rule names.
#[derive(Debug, Clone, PartialEq)]
struct GroupResources {
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

impl Policy {
    /// A policy recording every request at `level` (`--audit-level` without a policy file).
    pub fn single(level: Level) -> Self {
        Self {
            rules: vec![Rule {
                level,
                users: Vec::new(),
                user_groups: Vec::new(),
                verbs: Vec::new(),
                namespaces: Vec::new(),
                resources: Vec::new(),
                non_resource_urls: Vec::new(),
                omit_stages: StageSet::default(),
                omit_managed_fields: None,
            }],
            omit_stages: StageSet::default(),
            omit_managed_fields: false,
        }
    }

    /// Reads and validates the policy file at `path`.
    ///
    /// # Errors
    /// [`Error::ReadPolicy`] when the file cannot be read, [`Error::InvalidPolicy`] (naming the
    /// file and every problem) when it is not a valid `audit.k8s.io/v1` `Policy`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadPolicy {
            path: path.to_path_buf(),
            source,
        })?;
        let (policy, ignored) = Self::parse(&text).map_err(|problem| Error::InvalidPolicy {
            path: path.to_path_buf(),
            problem,
        })?;
        if !ignored.is_empty() {
            tracing::warn!(
                file = %path.display(),
                ignored = %ignored.join("; "),
                "the audit policy has fields it does not know; they are ignored"
            );
        }
        Ok(policy)
    }

    /// Parses and validates a policy document (YAML, or JSON); answers the policy and the
    /// unknown fields it ignored (as Kubernetes' lenient decoding does, with a warning).
    ///
    /// # Errors
    /// What is wrong, in Kubernetes' field-error words (`rules[0].level: Unsupported value ...`).
    pub fn parse(text: &str) -> Result<(Self, Vec<String>), PolicyError> {
        let doc: Doc<PolicyDoc> = if text.trim_start().starts_with('{') {
            serde_json::from_str(text)?
        } else {
            serde_yaml::from_str(text)?
        };
        let mut p = Problems::default();
        p.known("", doc).validate(p)
    }

    /// The level, omitted stages and managed-fields choice for a request.
    pub fn evaluate(&self, attrs: &Attributes) -> RequestAuditConfig {
        match self.rules.iter().find(|r| r.matches(attrs)) {
            Some(rule) => RequestAuditConfig {
                level: rule.level,
                omit_stages: rule.omit_stages,
                omit_managed_fields: rule.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            },
            None => RequestAuditConfig {
                level: Level::None,
                omit_stages: self.omit_stages,
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

impl Rule {
    fn matches(&self, attrs: &Attributes) -> bool {
        if !self.users.is_empty() && !has(&self.users, &attrs.user.username) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !attrs.user.groups.iter().any(|g| has(&self.user_groups, g))
        {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, &attrs.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(attrs);
        }
        if !self.non_resource_urls.is_empty() {
            return !attrs.resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&attrs.path, spec));
        }
        true
    }

    fn matches_resource(&self, attrs: &Attributes) -> bool {
        if !attrs.resource_request {
            return false;
        }
        // Cluster-scoped requests have the empty namespace, which `""` in a rule names.
        if !self.namespaces.is_empty() && !has(&self.namespaces, &attrs.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        self.resources
            .iter()
            .filter(|gr| gr.group == attrs.api_group)
            .any(|gr| gr.matches(attrs))
    }
}

impl GroupResources {
    fn matches(&self, attrs: &Attributes) -> bool {
        if self.resources.is_empty() {
            return true;
        }
        if !self.resource_names.is_empty() && !has(&self.resource_names, &attrs.name) {
            return false;
        }
        let (resource, sub) = (attrs.resource.as_str(), attrs.subresource.as_str());
        self.resources.iter().any(|spec| {
            if spec == "*" {
                return true;
            }
            // `pods` names the resource alone, `pods/log` one subresource.
            let exact = match spec.split_once('/') {
                Some((r, s)) => r == resource && s == sub,
                None => sub.is_empty() && spec == resource,
            };
            // `*/status`: that subresource of any resource.
            let any_resource = !sub.is_empty() && spec.strip_prefix("*/") == Some(sub);
            // `pods/*`: the resource and every subresource of it.
            let any_sub = spec.strip_suffix("/*") == Some(resource);
            exact || any_resource || any_sub
        })
    }
}

/// A non-resource URL rule: `*`, an exact path, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || (spec.ends_with('*') && path.starts_with(spec.trim_end_matches('*')))
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|s| s == value)
}

/// A part of the policy document as written, and the fields it does not know (reported, as
/// Kubernetes' lenient decoding does).
#[derive(Debug, Deserialize)]
struct Doc<T> {
    #[serde(flatten)]
    known: T,
    #[serde(flatten)]
    unknown: BTreeMap<String, Value>,
}

/// The policy document as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyDoc {
    api_version: Option<String>,
    kind: Option<String>,
    rules: Option<Vec<Doc<RuleDoc>>>,
    omit_stages: Option<Vec<String>>,
    omit_managed_fields: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleDoc {
    level: Option<String>,
    users: Option<Vec<String>>,
    user_groups: Option<Vec<String>>,
    verbs: Option<Vec<String>>,
    resources: Option<Vec<Doc<GroupResourcesDoc>>>,
    namespaces: Option<Vec<String>>,
    #[serde(rename = "nonResourceURLs")]
    non_resource_urls: Option<Vec<String>>,
    omit_stages: Option<Vec<String>>,
    omit_managed_fields: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupResourcesDoc {
    group: Option<String>,
    resources: Option<Vec<String>>,
    resource_names: Option<Vec<String>>,
}

/// Field errors gathered while validating, reported together, and the unknown fields (which
/// Kubernetes' lenient decoding ignores with a warning).
#[derive(Default)]
struct Problems {
    errors: Vec<String>,
    unknown: Vec<String>,
}

impl Problems {
    fn push(&mut self, field: &str, what: impl Into<String>) {
        self.errors.push(format!("{field}: {}", what.into()));
    }

    /// Checks a field that must hold exactly `supported`.
    fn require(&mut self, field: &str, value: Option<&str>, supported: &str) {
        match value {
            Some(v) if v == supported => {}
            Some(other) => self.push(
                field,
                format!("Unsupported value: {other:?}: supported values: {supported:?}"),
            ),
            None => self.push(field, "Required value"),
        }
    }

    /// The known part of `doc` at `at`, recording its unknown fields.
    fn known<T>(&mut self, at: &str, doc: Doc<T>) -> T {
        for key in doc.unknown.keys() {
            if at.is_empty() && key == "metadata" {
                continue;
            }
            let field = if at.is_empty() {
                key.clone()
            } else {
                format!("{at}.{key}")
            };
            self.unknown.push(format!("unknown field \"{field}\""));
        }
        doc.known
    }

    fn stages(&mut self, field: &str, names: &[String]) -> StageSet {
        let mut set = StageSet::default();
        for (i, name) in names.iter().enumerate() {
            match Stage::parse(name) {
                Some(s) => set.insert(s),
                None => self.push(
                    &format!("{field}[{i}]"),
                    format!(
                        "Invalid value: {name:?}: allowed stages are {}",
                        Stage::NAMES.join(",")
                    ),
                ),
            }
        }
        set
    }
}

/// Why a document is not a valid audit `Policy`.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// Not JSON.
    #[error("failed decoding: {0}")]
    Json(#[from] serde_json::Error),
    /// Not YAML.
    #[error("failed decoding: {0}")]
    Yaml(#[from] serde_yaml::Error),
    /// Decoded, with these field errors (`rules[0].level: Unsupported value ...`).
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
}

impl PolicyDoc {
    /// The policy and the unknown fields ignored (`p`'s, with those found here).
    fn validate(self, mut p: Problems) -> Result<(Policy, Vec<String>), PolicyError> {
        p.require("apiVersion", self.api_version.as_deref(), "audit.k8s.io/v1");
        p.require("kind", self.kind.as_deref(), "Policy");
        let omit_stages = p.stages("omitStages", &self.omit_stages.unwrap_or_default());
        let docs = self.rules.unwrap_or_default();
        if docs.is_empty() {
            p.push("rules", "Required value: a policy needs at least one rule");
        }
        let rules: Vec<Rule> = docs
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let at = format!("rules[{i}]");
                p.known(&at, r).validate(&at, omit_stages, &mut p)
            })
            .collect();
        if !p.errors.is_empty() {
            return Err(PolicyError::Invalid(p.errors));
        }
        let policy = Policy {
            rules,
            omit_stages,
            omit_managed_fields: self.omit_managed_fields.unwrap_or(false),
        };
        Ok((policy, p.unknown))
    }
}

impl RuleDoc {
    fn validate(self, at: &str, policy_stages: StageSet, p: &mut Problems) -> Rule {
        let level = match self.level.as_deref() {
            None | Some("") => {
                p.push(&format!("{at}.level"), "Required value");
                Level::None
            }
            Some(name) => name.parse().unwrap_or_else(|()| {
                let supported: Vec<String> =
                    Level::NAMES.iter().map(|n| format!("{n:?}")).collect();
                p.push(
                    &format!("{at}.level"),
                    format!(
                        "Unsupported value: {name:?}: supported values: {}",
                        supported.join(", ")
                    ),
                );
                Level::None
            }),
        };
        let urls = self.non_resource_urls.unwrap_or_default();
        for (i, url) in urls.iter().enumerate() {
            if url == "*" {
                continue;
            }
            let field = format!("{at}.nonResourceURLs[{i}]");
            if !url.starts_with('/') {
                p.push(
                    &field,
                    format!("Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"),
                );
            }
            if url[..url.len().saturating_sub(1)].contains('*') {
                p.push(
                    &field,
                    format!("Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"),
                );
            }
        }
        let namespaces = self.namespaces.unwrap_or_default();
        let resources: Vec<GroupResources> = self
            .resources
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, gr)| {
                let at = format!("{at}.resources[{i}]");
                p.known(&at, gr).validate(&at, p)
            })
            .collect();
        if !urls.is_empty() && (!resources.is_empty() || !namespaces.is_empty()) {
            p.push(
                &format!("{at}.nonResourceURLs"),
                "Invalid value: rules cannot apply to both regular resources and non-resource URLs",
            );
        }
        let rule_stages = p.stages(
            &format!("{at}.omitStages"),
            &self.omit_stages.unwrap_or_default(),
        );
        Rule {
            level,
            users: self.users.unwrap_or_default(),
            user_groups: self.user_groups.unwrap_or_default(),
            verbs: self.verbs.unwrap_or_default(),
            namespaces,
            resources,
            non_resource_urls: urls,
            omit_stages: rule_stages.union(policy_stages),
            omit_managed_fields: self.omit_managed_fields,
        }
    }
}

impl GroupResourcesDoc {
    fn validate(self, at: &str, p: &mut Problems) -> GroupResources {
        let group = self.group.unwrap_or_default();
        if !group.is_empty() && !is_dns_subdomain(&group) {
            p.push(
                &format!("{at}.group"),
                format!("Invalid value: {group:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"),
            );
        }
        let resources = self.resources.unwrap_or_default();
        let resource_names = self.resource_names.unwrap_or_default();
        if !resource_names.is_empty() && resources.is_empty() {
            p.push(
                &format!("{at}.resourceNames"),
                "Invalid value: using resourceNames requires at least one resource",
            );
        }
        GroupResources {
            group,
            resources,
            resource_names,
        }
    }
}

/// An RFC 1123 subdomain (what an API group name must be).
fn is_dns_subdomain(s: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && edge(label.chars().next())
                && edge(label.chars().last())
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}
