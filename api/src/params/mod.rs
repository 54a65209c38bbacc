//! Typed parameters per verb (kube-core's `params.rs` is the model): each verb's query string
//! is parsed once into its own struct here, and a bad value answers 400 before any handler runs.

use serde::Deserialize;

use super::query::Query;
use super::status::Status;
use strategy_host_apimachinery::{FieldSelector, LabelSelector};
use strategy_host_registry::{DeleteOptions, FieldValidation};

use strategy_host_storage::{
    GetOptions, ListOptions, Preconditions, ResourceVersionMatch, SelectionPredicate,
};

/// `?dryRun=All` (any other value is refused, as Kubernetes does).
fn dry_run(query: &Query) -> Result<bool, Status> {
    match query.non_empty("dryRun") {
        None => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(Status::bad_request(format!(
            "Invalid dryRun value: {other:?}: supported values: \"All\""
        ))),
    }
}

/// The longest field manager name Kubernetes accepts.
const MAX_FIELD_MANAGER_LENGTH: usize = 128;

/// `?fieldManager=` (empty when not given; the caller falls back to the User-Agent).
fn field_manager(query: &Query) -> Result<String, Status> {
    let name = query.non_empty("fieldManager").unwrap_or("").to_string();
    if name.chars().count() > MAX_FIELD_MANAGER_LENGTH {
        return Err(Status::invalid_options(
            "fieldManager",
            format!("Invalid value: {name:?}: must be no more than {MAX_FIELD_MANAGER_LENGTH} characters"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(Status::invalid_options(
            "fieldManager",
            format!("Invalid value: {name:?}: must only contain printable characters"),
        ));
    }
    Ok(name)
}

/// The field manager Kubernetes derives from a `User-Agent` when the request names none: the
/// part before the first `/` (`kubectl/v1.35.2 (linux/amd64)` → `kubectl`).
pub(crate) fn manager_from_user_agent(user_agent: Option<&str>) -> String {
    user_agent
        .unwrap_or("")
        .split('/')
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(MAX_FIELD_MANAGER_LENGTH)
        .collect()
}

/// `?fieldValidation=` (default Warn).
fn field_validation(query: &Query) -> Result<FieldValidation, Status> {
    match query.non_empty("fieldValidation") {
        None | Some("Warn") => Ok(FieldValidation::Warn),
        Some("Strict") => Ok(FieldValidation::Strict),
        Some("Ignore") => Ok(FieldValidation::Ignore),
        Some(other) => Err(Status::bad_request(format!(
            "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
        ))),
    }
}

/// How a read is rendered: the object itself, or a `meta.k8s.io/v1` Table (from `Accept`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Format {
    /// The client asked for a Table.
    pub as_table: bool,
    /// `?includeObject=` of a Table.
    pub include_object: IncludeObject,
    /// The client prefers Kubernetes protobuf (served for the kinds that have it).
    pub protobuf: bool,
}

/// What each Table row carries of its object (`?includeObject=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// Nothing.
    None,
    /// A `PartialObjectMetadata` (the default; also for unknown values, as before).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// The parameter's wire value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::Metadata => "Metadata",
            Self::Object => "Object",
        }
    }
}

impl Format {
    /// Reads the `Accept` header and `?includeObject=`.
    pub(crate) fn parse(accept: Option<&str>, query: &Query) -> Self {
        let include_object = match query.get("includeObject") {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        };
        Self {
            as_table: super::table::wants_table(accept),
            include_object,
            protobuf: super::media::prefers_protobuf(accept),
        }
    }
}

/// Parameters of a get.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GetParams {
    /// `?resourceVersion=`: `""` most recent, `"0"` any cached state, `N` at least N.
    pub resource_version: String,
}

impl GetParams {
    /// Parses a get's query.
    ///
    /// # Errors
    /// None today; the signature matches the other verbs.
    pub(crate) fn from_query(query: &Query) -> Result<Self, Status> {
        Ok(Self {
            resource_version: query.get("resourceVersion").unwrap_or("").to_string(),
        })
    }

    /// The storage read options.
    pub(crate) fn options(&self) -> GetOptions {
        GetOptions {
            resource_version: self.resource_version.clone(),
            ignore_not_found: false,
        }
    }
}

/// Parameters of a list (and the selection part of a watch or deletecollection).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListParams {
    /// `?labelSelector=`.
    pub label_selector: LabelSelector,
    /// `?fieldSelector=` (`metadata.name`, `metadata.namespace`, the resource's selectable
    /// fields).
    pub field_selector: FieldSelector,
    /// `?resourceVersion=`.
    pub resource_version: String,
    /// `?resourceVersionMatch=`.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// `?limit=` (0 = no limit).
    pub limit: u64,
    /// `?continue=`: the token of the previous page.
    pub continue_token: Option<String>,
}

impl ListParams {
    /// Parses a list's query.
    ///
    /// # Errors
    /// 400 for bad selectors, numbers, resource versions or resourceVersionMatch values, and
    /// for a resourceVersion beside a continue token.
    pub(crate) fn from_query(query: &Query, selectable: &[&str]) -> Result<Self, Status> {
        let label_selector = LabelSelector::parse(query.get("labelSelector").unwrap_or(""))
            .map_err(|e| Status::bad_request(e.0))?;
        let field_selector =
            FieldSelector::parse(query.get("fieldSelector").unwrap_or(""), selectable)
                .map_err(|e| Status::bad_request(e.0))?;
        let resource_version_match = match query.non_empty("resourceVersionMatch") {
            None => None,
            Some("NotOlderThan") => Some(ResourceVersionMatch::NotOlderThan),
            Some("Exact") => Some(ResourceVersionMatch::Exact),
            Some(other) => {
                return Err(Status::bad_request(format!(
                    "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
                )))
            }
        };
        let resource_version = query.get("resourceVersion").unwrap_or("").to_string();
        strategy_host_storage::versioner::parse_resource_version(&resource_version)
            .map_err(|e| Status::from(&e))?;
        let continue_token = query.non_empty("continue").map(String::from);
        if continue_token.is_some() && !matches!(resource_version.as_str(), "" | "0") {
            return Err(Status::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        Ok(Self {
            label_selector,
            field_selector,
            resource_version,
            resource_version_match,
            limit: query.number("limit")?.unwrap_or(0),
            continue_token,
        })
    }

    /// The storage list options.
    pub(crate) fn options(&self) -> ListOptions {
        ListOptions {
            resource_version: self.resource_version.clone(),
            resource_version_match: self.resource_version_match,
            predicate: SelectionPredicate {
                label: self.label_selector.clone(),
                field: self.field_selector.clone(),
            },
            recursive: true,
            limit: self.limit,
            continue_token: self.continue_token.clone(),
            allow_bookmarks: false,
            send_initial_events: false,
            skip_remaining_count: false,
        }
    }
}

/// Parameters of a watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WatchParams {
    /// Selectors and the resourceVersion to start after.
    pub list: ListParams,
    /// `?timeoutSeconds=`: the stream ends then.
    pub timeout_seconds: Option<u64>,
    /// `?allowWatchBookmarks=`.
    pub allow_bookmarks: bool,
    /// `?sendInitialEvents=`: the current state first, then a BOOKMARK.
    pub send_initial_events: bool,
}

impl WatchParams {
    /// Parses a watch's query.
    ///
    /// # Errors
    /// As `ListParams`, and 400 for bad booleans or timeouts.
    pub(crate) fn from_query(query: &Query, selectable: &[&str]) -> Result<Self, Status> {
        Ok(Self {
            list: ListParams::from_query(query, selectable)?,
            timeout_seconds: query.number("timeoutSeconds")?,
            allow_bookmarks: query.flag("allowWatchBookmarks")?,
            send_initial_events: query.flag("sendInitialEvents")?,
        })
    }

    /// The storage watch options; a single-object watch narrows them to its name.
    ///
    /// # Errors
    /// 400 for a single-object watch that also has a field selector.
    pub(crate) fn options(&self, name: Option<&str>) -> Result<ListOptions, Status> {
        let mut opts = self.list.options();
        opts.allow_bookmarks = self.allow_bookmarks;
        opts.send_initial_events = self.send_initial_events;
        if let Some(name) = name {
            if !opts.predicate.field.is_empty() {
                return Err(Status::bad_request(
                    "a single-object watch may not have a field selector",
                ));
            }
            opts.predicate.field = FieldSelector::name_equals(name);
        }
        Ok(opts)
    }
}

/// Parameters of a create or an update (kube-core's `PostParams`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PostParams {
    /// `?dryRun=All`.
    pub dry_run: bool,
    /// `?fieldValidation=`.
    pub field_validation: FieldValidation,
    /// `?fieldManager=` (empty: derived from the User-Agent).
    pub field_manager: String,
}

impl PostParams {
    /// Parses a create's or an update's query.
    ///
    /// # Errors
    /// 400 for an unknown dryRun or fieldValidation value.
    pub(crate) fn from_query(query: &Query) -> Result<Self, Status> {
        Ok(Self {
            dry_run: dry_run(query)?,
            field_validation: field_validation(query)?,
            field_manager: field_manager(query)?,
        })
    }
}

/// Parameters of a patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PatchParams {
    /// `?dryRun=All`.
    pub dry_run: bool,
    /// `?fieldValidation=` (applies to the patch body's duplicate fields and to the result).
    pub field_validation: FieldValidation,
    /// `?fieldManager=` (empty: derived from the User-Agent, except for apply, which needs it).
    pub field_manager: String,
    /// `?force=true`: an apply takes the fields it conflicts on.
    pub force: bool,
}

impl PatchParams {
    /// Parses a patch's query.
    ///
    /// # Errors
    /// 400 for an unknown dryRun or fieldValidation value.
    pub(crate) fn from_query(query: &Query) -> Result<Self, Status> {
        let force = match query.non_empty("force") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(Status::bad_request(format!(
                    "invalid boolean value for force: {other:?}"
                )))
            }
        };
        Ok(Self {
            dry_run: dry_run(query)?,
            field_validation: field_validation(query)?,
            field_manager: field_manager(query)?,
            force,
        })
    }
}

/// A `DeleteOptions` request body as Kubernetes defines it; unknown fields are ignored, as
/// Kubernetes' non-strict decoding does, but every known field must have its type.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename = "DeleteOptions", rename_all = "camelCase")]
pub struct DeleteOptionsBody {
    /// Must be `DeleteOptions` when present.
    pub kind: Option<String>,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `preconditions`.
    pub preconditions: Option<PreconditionsBody>,
    /// `propagationPolicy`.
    pub propagation_policy: Option<String>,
    /// `orphanDependents` (deprecated): `true` means `Orphan`, `false` `Background`, when no
    /// `propagationPolicy` is given.
    pub orphan_dependents: Option<bool>,
    /// `dryRun`: `["All"]` or empty.
    pub dry_run: Option<Vec<String>>,
}

/// `DeleteOptions.preconditions`.
#[derive(Debug, Clone, Default, Deserialize)]
// The Kubernetes name, which serde's type errors quote.
#[serde(rename = "Preconditions", rename_all = "camelCase")]
pub struct PreconditionsBody {
    /// The object's uid must equal this.
    pub uid: Option<String>,
    /// The object's resourceVersion must equal this.
    pub resource_version: Option<String>,
}

/// Parameters of a delete (kube-core's `DeleteParams`): the query and the `DeleteOptions` body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeleteParams {
    /// `?dryRun=All` (or `dryRun: ["All"]` in the body).
    pub dry_run: bool,
    /// `gracePeriodSeconds` (recorded; custom resources go at once).
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy`: `Orphan`, `Background` or `Foreground`.
    pub propagation_policy: Option<String>,
    /// `preconditions.uid` and `preconditions.resourceVersion`.
    pub preconditions: Preconditions,
}

fn propagation_policy(p: &str) -> Result<String, Status> {
    match p {
        "Orphan" | "Background" | "Foreground" => Ok(p.to_string()),
        other => Err(Status::bad_request(format!(
            "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
        ))),
    }
}

impl DeleteParams {
    /// Combines a delete's query with its decoded body; the query's values win, as they
    /// always have here.
    ///
    /// # Errors
    /// 400 for an unknown dryRun value or propagation policy, or a non-integer grace period.
    pub(crate) fn new(query: &Query, body: DeleteOptionsBody) -> Result<Self, Status> {
        let body_dry_run = match body.dry_run.as_deref() {
            None | Some([]) => false,
            Some([all]) if all == "All" => true,
            Some(other) => {
                return Err(Status::bad_request(format!(
                    "Invalid dryRun value: {other:?}: supported values: \"All\""
                )))
            }
        };
        let grace_period_seconds = match query.get("gracePeriodSeconds") {
            Some(g) => Some(
                g.parse()
                    .map_err(|_| Status::bad_request("gracePeriodSeconds must be an integer"))?,
            ),
            None => body.grace_period_seconds,
        };
        let propagation_policy = query
            .get("propagationPolicy")
            .map(String::from)
            .or(body.propagation_policy)
            .map(|p| propagation_policy(&p))
            .transpose()?
            .or(body
                .orphan_dependents
                .map(|orphan| if orphan { "Orphan" } else { "Background" }.to_string()));
        let preconditions = body.preconditions.unwrap_or_default();
        Ok(Self {
            dry_run: dry_run(query)? || body_dry_run,
            grace_period_seconds,
            propagation_policy,
            preconditions: Preconditions {
                uid: preconditions.uid,
                resource_version: preconditions.resource_version,
            },
        })
    }

    /// The registry's delete options.
    pub(crate) fn options(&self) -> DeleteOptions {
        DeleteOptions {
            preconditions: self.preconditions.clone(),
            grace_period_seconds: self.grace_period_seconds,
            propagation_policy: self.propagation_policy.clone(),
        }
    }
}

/// Parameters of a deletecollection: what to select and how to delete each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeleteCollectionParams {
    /// The selection.
    pub list: ListParams,
    /// The delete options applied to every selected object.
    pub delete: DeleteParams,
}

#[cfg(test)]
mod tests;
