//! Routing: every path the server answers, parsed once (with the method and the `watch` flag)
//! into one `Route`, so the server only dispatches on it.

use hyper::Method;

use super::query::Query;
use super::status::Status;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/healthz` or `/livez`: the process answers.
    Live,
    /// `/readyz`: the store answers and the definitions are synced.
    Ready,
    /// `/version`.
    Version,
    /// `/metrics` (Prometheus text; served when the module table is).
    Metrics,
    /// `/debug/strategies` (every module source; served when the module table is).
    DebugStrategies,
    /// `/storage/snapshot`: the whole store, streamed.
    StorageSnapshot,
    /// `/.well-known/openid-configuration`: the ServiceAccount issuer's OpenID configuration.
    OpenIdConfiguration,
    /// `/openid/v1/jwks`: the keys ServiceAccount tokens verify with.
    OpenIdKeySet,
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`: the index of group-versions.
    OpenApiV3,
    /// `/openapi/v3/api/{version}` or `/openapi/v3/apis/{group}/{version}`.
    OpenApiV3GroupVersion {
        /// API group (`""` for core).
        group: String,
        /// API version.
        version: String,
    },
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`.
    GroupVersion(String, String),
    /// A resource request and the verb its method selects.
    Resource(ResourcePath, Verb),
    /// A resource path whose method selects no verb (405 once the resource is known to exist).
    ResourceMethodNotAllowed(ResourcePath),
    /// A document path (everything above but `Resource`) with a method other than GET.
    MethodNotAllowed,
    /// Nothing is served here.
    NotFound,
}

/// The Kubernetes verbs on resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET with `?watch=true` or under `/watch/`, of a collection or one object.
    Watch,
    /// POST to a collection.
    Create,
    /// PUT of one object (or its status).
    Update,
    /// PATCH of one object (or its status).
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

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

impl Route {
    /// The group and version a request under `/apis/{group}/{version}` (or `/api/v1`), or for
    /// its OpenAPI v3 document, is for: what an APIService may serve elsewhere.
    pub fn group_version(&self) -> Option<(&str, &str)> {
        match self {
            Route::GroupVersion(group, version)
            | Route::OpenApiV3GroupVersion { group, version } => Some((group, version)),
            Route::Resource(p, _) | Route::ResourceMethodNotAllowed(p) => {
                Some((&p.group, &p.version))
            }
            _ => None,
        }
    }
}

impl Verb {
    /// The verb's name in Kubernetes' authorization attributes (`get`, `deletecollection`).
    pub fn name(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

impl Route {
    /// Routes a request.
    ///
    /// # Errors
    /// 400 when the `watch` parameter of a resource request is not a boolean.
    pub fn parse(method: &Method, path: &str, query: &Query) -> Result<Self, Status> {
        let route = match document(path) {
            Some(route) => route,
            None => match resource_path(path) {
                Some(p) => {
                    let watch = p.legacy_watch || query.flag("watch")?;
                    return Ok(match verb(method, &p, watch) {
                        Some(v) => Route::Resource(p, v),
                        None => Route::ResourceMethodNotAllowed(p),
                    });
                }
                None => Route::NotFound,
            },
        };
        // Documents are read-only; an unknown path stays a 404 whatever the method.
        Ok(match route {
            Route::NotFound => Route::NotFound,
            _ if method != Method::GET => Route::MethodNotAllowed,
            route => route,
        })
    }

    /// True for requests that stay open (watches) or stream for long (a snapshot of the
    /// store): they take no in-flight slot and have no request timeout.
    pub fn is_long_running(&self) -> bool {
        matches!(
            self,
            Route::Resource(_, Verb::Watch) | Route::StorageSnapshot
        )
    }
}

/// The fixed paths and the group/version documents; `None` for a resource path or nothing.
fn document(path: &str) -> Option<Route> {
    let fixed = match path {
        "/healthz" | "/livez" => Some(Route::Live),
        "/readyz" => Some(Route::Ready),
        // kube-apiserver serves both, and its OpenAPI names `/version/` (the Python client's
        // VersionApi and kr8s call that one).
        "/version" | "/version/" => Some(Route::Version),
        "/metrics" => Some(Route::Metrics),
        "/debug/strategies" => Some(Route::DebugStrategies),
        "/storage/snapshot" => Some(Route::StorageSnapshot),
        "/.well-known/openid-configuration" | "/.well-known/openid-configuration/" => {
            Some(Route::OpenIdConfiguration)
        }
        "/openid/v1/jwks" | "/openid/v1/jwks/" => Some(Route::OpenIdKeySet),
        _ => None,
    };
    if fixed.is_some() {
        return fixed;
    }
    if let Some(rest) = path.strip_prefix("/openapi/") {
        let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
        return Some(match parts.as_slice() {
            ["v2"] => Route::OpenApiV2,
            ["v3"] => Route::OpenApiV3,
            ["v3", "api", v] => Route::OpenApiV3GroupVersion {
                group: String::new(),
                version: v.to_string(),
            },
            ["v3", "apis", g, v] => Route::OpenApiV3GroupVersion {
                group: g.to_string(),
                version: v.to_string(),
            },
            _ => Route::NotFound,
        });
    }
    match segments(path)?.as_slice() {
        ["api"] => Some(Route::CoreVersions),
        ["apis"] => Some(Route::Groups),
        ["apis", g] => Some(Route::Group(g.to_string())),
        ["api", v] => Some(Route::GroupVersion(String::new(), v.to_string())),
        ["apis", g, v] => Some(Route::GroupVersion(g.to_string(), v.to_string())),
        _ => None,
    }
}

/// The path's segments, `None` when one is empty (`/apis//v1`).
fn segments(path: &str) -> Option<Vec<&str>> {
    let parts: Vec<&str> = path
        .trim_end_matches('/')
        .trim_start_matches('/')
        .split('/')
        .collect();
    (!parts.iter().any(|p| p.is_empty())).then_some(parts)
}

/// Parses a resource path under `/api/{version}` or `/apis/{group}/{version}`.
fn resource_path(path: &str) -> Option<ResourcePath> {
    let parts = segments(path)?;
    let (group, version, rest) = match parts.as_slice() {
        ["api", v, rest @ ..] if !rest.is_empty() => (String::new(), v.to_string(), rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => (g.to_string(), v.to_string(), rest),
        _ => return None,
    };
    let mut rest: Vec<&str> = rest.to_vec();
    let mut legacy_watch = false;
    if rest.first() == Some(&"watch") {
        legacy_watch = true;
        rest.remove(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut namespace = None;
    // `/api/v1/namespaces/{name}/status` is the namespace's own subresource, not a namespace
    // segment in front of a resource.
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
    Some(ResourcePath {
        group,
        version,
        namespace,
        plural,
        name,
        subresource,
        legacy_watch,
    })
}

/// The verb a method selects on `path`; `None` when it selects none.
fn verb(method: &Method, path: &ResourcePath, watch: bool) -> Option<Verb> {
    let named = path.name.is_some();
    let sub = path.subresource.is_some();
    if path.legacy_watch && method != Method::GET {
        return None;
    }
    Some(match *method {
        Method::GET if watch => Verb::Watch,
        Method::GET if named => Verb::Get,
        Method::GET => Verb::List,
        Method::POST if !named && !sub => Verb::Create,
        // A subresource that makes something (`serviceaccounts/{name}/token`).
        Method::POST if named && sub => Verb::Create,
        Method::PUT if named => Verb::Update,
        Method::PATCH if named => Verb::Patch,
        Method::DELETE if named && !sub => Verb::Delete,
        Method::DELETE if !sub => Verb::DeleteCollection,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str) -> Route {
        Route::parse(&Method::GET, path, &Query::default()).unwrap()
    }

    fn resource(route: Route) -> (ResourcePath, Verb) {
        match route {
            Route::Resource(p, v) => (p, v),
            other => panic!("not a resource route: {other:?}"),
        }
    }

    #[test]
    fn documents() {
        assert_eq!(get("/api"), Route::CoreVersions);
        assert_eq!(get("/apis/example.com"), Route::Group("example.com".into()));
        assert_eq!(
            get("/apis/example.com/v1/"),
            Route::GroupVersion("example.com".into(), "v1".into())
        );
        assert_eq!(get("/readyz"), Route::Ready);
        assert_eq!(get("/version"), Route::Version);
        assert_eq!(get("/version/"), Route::Version);
        assert_eq!(get("/openapi/v3/"), Route::OpenApiV3);
        assert_eq!(
            get("/openapi/v3/apis/g.io/v1"),
            Route::OpenApiV3GroupVersion {
                group: "g.io".into(),
                version: "v1".into()
            }
        );
        assert_eq!(get("/openapi/v4"), Route::NotFound);
        assert_eq!(
            get("/.well-known/openid-configuration"),
            Route::OpenIdConfiguration
        );
        assert_eq!(get("/openid/v1/jwks/"), Route::OpenIdKeySet);
        assert_eq!(get("/other"), Route::NotFound);
        assert_eq!(get("/apis//v1"), Route::NotFound);
        assert_eq!(get("/apis/g/v1/namespaces//w"), Route::NotFound);
        assert_eq!(get("/apis/g/v1/a/b/c/d"), Route::NotFound);
        let post = |p| Route::parse(&Method::POST, p, &Query::default()).unwrap();
        assert_eq!(post("/healthz"), Route::MethodNotAllowed);
        assert_eq!(post("/openid/v1/jwks"), Route::MethodNotAllowed);
        assert_eq!(post("/nothing"), Route::NotFound);
    }

    #[test]
    fn resources_and_verbs() {
        let (p, v) = resource(get("/apis/example.com/v1/namespaces/ns/widgets/x/status"));
        assert_eq!(
            (
                p.namespace.as_deref(),
                p.plural.as_str(),
                p.name.as_deref(),
                p.subresource.as_deref(),
                v
            ),
            (Some("ns"), "widgets", Some("x"), Some("status"), Verb::Get)
        );
        let (p, v) = resource(get("/api/v1/namespaces/ns"));
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref(), p.namespace, v),
            ("namespaces", Some("ns"), None, Verb::Get)
        );
        let (p, _) = resource(get("/api/v1/namespaces/ns/status"));
        assert_eq!(p.subresource.as_deref(), Some("status"));
        let (p, v) = resource(get("/apis/g.io/v1/watch/namespaces/ns/widgets"));
        assert!(p.legacy_watch);
        assert_eq!((p.namespace.as_deref(), v), (Some("ns"), Verb::Watch));
        let q = Query::parse(Some("watch=1"));
        let watch = Route::parse(&Method::GET, "/apis/g/v1/widgets", &q).unwrap();
        assert!(watch.is_long_running());
        let bad = Query::parse(Some("watch=maybe"));
        assert_eq!(
            Route::parse(&Method::GET, "/apis/g/v1/widgets", &bad)
                .unwrap_err()
                .code,
            400
        );
        let at = |m: Method, p: &str| Route::parse(&m, p, &Query::default()).unwrap();
        let w = "/apis/g/v1/widgets";
        assert_eq!(resource(at(Method::POST, w)).1, Verb::Create);
        assert_eq!(resource(at(Method::DELETE, w)).1, Verb::DeleteCollection);
        assert_eq!(
            resource(at(Method::DELETE, "/apis/g/v1/widgets/a")).1,
            Verb::Delete
        );
        assert_eq!(
            resource(at(Method::PUT, "/apis/g/v1/widgets/a/status")).1,
            Verb::Update
        );
        assert_eq!(
            resource(at(Method::PATCH, "/apis/g/v1/widgets/a")).1,
            Verb::Patch
        );
        for (m, p) in [
            (Method::PUT, w),
            (Method::POST, "/apis/g/v1/widgets/a"),
            (Method::DELETE, "/apis/g/v1/widgets/a/status"),
            (Method::POST, "/apis/g/v1/watch/widgets"),
        ] {
            assert!(
                matches!(at(m.clone(), p), Route::ResourceMethodNotAllowed(_)),
                "{m} {p}"
            );
        }
    }
}
