//! Kubernetes request paths and query parameters: which resource, namespace, name and
//! subresource a request is about, and the list, watch and write options it carries.

use std::collections::HashMap;

use super::status::Status;
use crate::registry::FieldValidation;
use crate::storage::{
    FieldSelector, LabelSelector, ListOptions, ResourceVersionMatch, SelectionPredicate,
};

/// A request for a resource (or collection) under `/api/v1` or `/apis/{group}/{version}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace, when the path has one.
    pub namespace: Option<String>,
    /// Plural resource.
    pub plural: String,
    /// Object name, for single-object requests.
    pub name: Option<String>,
    /// `status`, for the status subresource.
    pub subresource: Option<String>,
    /// Came through the legacy `/watch/` prefix.
    pub legacy_watch: bool,
}

/// What a path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`.
    GroupVersion(String, String),
    /// A resource request.
    Resource(ResourcePath),
}

/// Parses a path under `/api` or `/apis`; `None` for anything else.
pub fn parse_path(path: &str) -> Option<Route> {
    let parts: Vec<&str> = path
        .trim_end_matches('/')
        .trim_start_matches('/')
        .split('/')
        .collect();
    if parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let (group, version, rest) = match parts.as_slice() {
        ["api"] => return Some(Route::CoreVersions),
        ["apis"] => return Some(Route::Groups),
        ["apis", g] => return Some(Route::Group(g.to_string())),
        ["api", v] => return Some(Route::GroupVersion(String::new(), v.to_string())),
        ["apis", g, v] => return Some(Route::GroupVersion(g.to_string(), v.to_string())),
        ["api", v, rest @ ..] => (String::new(), v.to_string(), rest),
        ["apis", g, v, rest @ ..] => (g.to_string(), v.to_string(), rest),
        _ => return None,
    };
    let mut rest: Vec<&str> = rest.to_vec();
    let mut legacy_watch = false;
    if rest.first() == Some(&"watch") {
        legacy_watch = true;
        rest.remove(0);
    }
    if rest.iter().any(|p| p.is_empty()) || rest.is_empty() {
        return None;
    }
    let mut namespace = None;
    if rest[0] == "namespaces" && rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
        namespace = Some(rest[1].to_string());
        rest.drain(..2);
    }
    let (plural, name, subresource) = match rest.as_slice() {
        [p] => (p.to_string(), None, None),
        [p, n] => (p.to_string(), Some(n.to_string()), None),
        [p, n, s] => (p.to_string(), Some(n.to_string()), Some(s.to_string())),
        _ => return None,
    };
    Some(Route::Resource(ResourcePath {
        group,
        version,
        namespace,
        plural,
        name,
        subresource,
        legacy_watch,
    }))
}

/// Decoded query parameters (the last value wins).
#[derive(Debug, Clone, Default)]
pub struct Query(HashMap<String, String>);

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(
                    std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                    16,
                ) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Query {
    /// Parses a raw query string.
    pub fn parse(raw: Option<&str>) -> Self {
        let mut map = HashMap::new();
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            map.insert(percent_decode(k), percent_decode(v));
        }
        Self(map)
    }

    /// One parameter.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A boolean parameter (`true`/`1`).
    ///
    /// # Errors
    /// 400 for anything but a boolean.
    pub fn flag(&self, key: &str) -> Result<bool, Status> {
        match self.get(key) {
            None | Some("") | Some("false") | Some("0") => Ok(false),
            Some("true") | Some("1") => Ok(true),
            Some(other) => Err(Status::bad_request(format!(
                "invalid value {other:?} for {key}: must be a boolean"
            ))),
        }
    }

    /// A non-negative integer parameter.
    ///
    /// # Errors
    /// 400 for anything but a non-negative integer.
    pub fn number(&self, key: &str) -> Result<Option<u64>, Status> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                Status::bad_request(format!(
                    "invalid value {v:?} for {key}: must be a non-negative integer"
                ))
            }),
        }
    }

    /// `?dryRun=All` (any other value is refused, as Kubernetes does).
    ///
    /// # Errors
    /// 400 for an unknown dry-run value.
    pub fn dry_run(&self) -> Result<bool, Status> {
        match self.get("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(Status::bad_request(format!(
                "Invalid dryRun value: {other:?}: supported values: \"All\""
            ))),
        }
    }

    /// `?fieldValidation=` (default Warn).
    ///
    /// # Errors
    /// 400 for an unknown value.
    pub fn field_validation(&self) -> Result<FieldValidation, Status> {
        match self.get("fieldValidation") {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(Status::bad_request(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
            ))),
        }
    }

    /// The list or watch options.
    ///
    /// # Errors
    /// 400 for bad selectors, numbers or resourceVersionMatch values.
    pub fn list_options(&self) -> Result<ListOptions, Status> {
        let label = LabelSelector::parse(self.get("labelSelector").unwrap_or(""))
            .map_err(|e| Status::from(&e))?;
        let field = FieldSelector::parse(
            self.get("fieldSelector").unwrap_or(""),
            crate::storage::predicate::DEFAULT_SELECTABLE_FIELDS,
        )
        .map_err(|e| Status::from(&e))?;
        let resource_version_match = match self.get("resourceVersionMatch") {
            None | Some("") => None,
            Some("NotOlderThan") => Some(ResourceVersionMatch::NotOlderThan),
            Some("Exact") => Some(ResourceVersionMatch::Exact),
            Some(other) => {
                return Err(Status::bad_request(format!(
                    "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
                )))
            }
        };
        let resource_version = self.get("resourceVersion").unwrap_or("").to_string();
        crate::storage::versioner::parse_resource_version(&resource_version)
            .map_err(|e| Status::from(&e))?;
        let continue_token = self
            .get("continue")
            .filter(|c| !c.is_empty())
            .map(String::from);
        if continue_token.is_some() && !matches!(resource_version.as_str(), "" | "0") {
            return Err(Status::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        Ok(ListOptions {
            resource_version,
            resource_version_match,
            predicate: SelectionPredicate { label, field },
            recursive: true,
            limit: self.number("limit")?.unwrap_or(0),
            continue_token,
            allow_bookmarks: self.flag("allowWatchBookmarks")?,
            send_initial_events: self.flag("sendInitialEvents")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let r = |p| parse_path(p).unwrap();
        assert_eq!(r("/api"), Route::CoreVersions);
        assert_eq!(r("/apis/example.com"), Route::Group("example.com".into()));
        let Route::Resource(p) = r("/apis/example.com/v1/namespaces/ns/widgets/x/status") else {
            panic!()
        };
        assert_eq!(
            (
                p.namespace.as_deref(),
                p.plural.as_str(),
                p.name.as_deref(),
                p.subresource.as_deref()
            ),
            (Some("ns"), "widgets", Some("x"), Some("status"))
        );
        let Route::Resource(p) = r("/api/v1/namespaces/ns") else {
            panic!()
        };
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref(), p.namespace),
            ("namespaces", Some("ns"), None)
        );
        let Route::Resource(p) = r("/api/v1/namespaces/ns/status") else {
            panic!()
        };
        assert_eq!(p.subresource.as_deref(), Some("status"));
        let Route::Resource(p) = r("/apis/g.io/v1/watch/namespaces/ns/widgets") else {
            panic!()
        };
        assert!(p.legacy_watch);
        assert_eq!(p.namespace.as_deref(), Some("ns"));
        assert!(parse_path("/apis/g/v1/a/b/c/d").is_none());
        assert!(parse_path("/other").is_none());
        assert!(parse_path("/apis//v1").is_none());
        assert!(parse_path("/apis/g/v1/namespaces//w").is_none());
    }

    #[test]
    fn queries() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb%2Ctier+in+(a)&limit=5&watch=true",
        ));
        let o = q.list_options().unwrap();
        assert_eq!(o.limit, 5);
        assert!(q.flag("watch").unwrap());
        assert!(Query::parse(Some("labelSelector=a+in+b"))
            .list_options()
            .is_err());
        assert!(Query::parse(Some("continue=x&resourceVersion=5"))
            .list_options()
            .is_err());
        assert!(Query::parse(Some("limit=-1")).list_options().is_err());
    }
}
