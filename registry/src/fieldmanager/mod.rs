//! Field ownership and server-side apply, as Kubernetes' fieldmanager and structured-merge-diff
//! define them (written here from their documented behaviour): every write records who owns
//! which fields in `metadata.managedFields`, and an apply merges a configuration into the live
//! object by the schema's structure, refusing to change fields other managers own unless forced.
//!
//! - [`fieldset`]: sets of field paths (FieldsV1);
//! - [`structure`]: objects walked by their schema (fields, merge, removal);
//! - [`managed`]: the `managedFields` entries and the Update-manager cap.
//!
//! Not covered yet (see the note): the last-applied annotation's server-side handling,
//! multi-version conversion of field sets, `x-kubernetes-list-type: map` items without their keys,
//! and `.status` defaulting interplay beyond resetting status on the main resource.

pub mod fieldset;
pub mod managed;
pub mod structure;

use serde_json::{json, Value};

use fieldset::{display_path, Element, FieldSet};
use managed::{Entry, Operation};

/// Who writes, and how the entry it gets is labelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manager {
    /// The field manager's name.
    pub name: String,
    /// The API version of the request (`v1`, `example.com/v1`).
    pub api_version: String,
    /// `""` for the main resource, `status` for the status subresource.
    pub subresource: String,
    /// The time of the write (RFC 3339).
    pub time: String,
    /// Whether the resource has a status subresource (then the main resource owns no status
    /// fields, and the status subresource only status fields).
    pub status_subresource: bool,
}

/// A field another manager owns that an apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The owner.
    pub manager: String,
    /// The API version the owner wrote with.
    pub api_version: String,
    /// The field, as Kubernetes prints it (`.spec.replicas`).
    pub field: String,
}

impl Conflict {
    /// The cause message Kubernetes gives (`conflict with "kubectl" using v1`).
    pub fn cause_message(&self) -> String {
        format!("conflict with {}", self.owner())
    }

    fn owner(&self) -> String {
        if self.api_version.is_empty() {
            format!("{:?}", self.manager)
        } else {
            format!("{:?} using {}", self.manager, self.api_version)
        }
    }
}

/// The message of a 409 for `conflicts`, in Kubernetes' words.
pub fn conflicts_message(conflicts: &[Conflict]) -> String {
    let n = conflicts.len();
    let plural = if n == 1 { "" } else { "s" };
    let detail = if let [one] = conflicts {
        format!("conflict with {}: {}", one.owner(), one.field)
    } else {
        let mut owners: Vec<String> = conflicts.iter().map(Conflict::owner).collect();
        owners.dedup();
        let mut text = String::from("conflicts with");
        for owner in &owners {
            if owners.len() == 1 {
                text.push_str(&format!(" {owner}:"));
            } else {
                text.push_str(&format!("\n{owner}:"));
            }
            for c in conflicts.iter().filter(|c| &c.owner() == owner) {
                text.push_str(&format!("\n- {}", c.field));
            }
        }
        text
    };
    format!("Apply failed with {n} conflict{plural}: {detail}")
}

/// Why an apply or a write's managed fields were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Fields other managers own would change (409 Conflict).
    Conflicts(Vec<Conflict>),
    /// The request's `metadata.managedFields` (or apply configuration) is not acceptable (422,
    /// on this field of `metadata`, with this detail).
    Invalid(String, String),
}

/// The part of `obj` a manager can own: no apiVersion/kind, only the user-set metadata
/// (labels, annotations, finalizers, ownerReferences), and status only where it belongs.
fn owned_view(obj: &Value, m: &Manager) -> Value {
    let Some(map) = obj.as_object() else {
        return json!({});
    };
    let mut out = serde_json::Map::new();
    for (k, v) in map {
        let keep = match k.as_str() {
            "apiVersion" | "kind" => false,
            "status" => !m.status_subresource || m.subresource == "status",
            _ => !m.status_subresource || m.subresource != "status",
        };
        if !keep {
            continue;
        }
        if k == "metadata" {
            let meta: serde_json::Map<String, Value> = v
                .as_object()
                .map(|meta| {
                    meta.iter()
                        .filter(|(f, _)| {
                            matches!(
                                f.as_str(),
                                "labels" | "annotations" | "finalizers" | "ownerReferences"
                            )
                        })
                        .map(|(f, v)| (f.clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            if !meta.is_empty() {
                out.insert(k.clone(), Value::Object(meta));
            }
            continue;
        }
        out.insert(k.clone(), v.clone());
    }
    Value::Object(out)
}

fn set_of(obj: &Value, m: &Manager, schema: Option<&Value>) -> FieldSet {
    structure::fields_of(&owned_view(obj, m), schema)
}

fn single(path: &[Element]) -> FieldSet {
    let mut s = FieldSet::new();
    s.insert(path);
    s
}

/// The request's own `managedFields`, when it sets them (Kubernetes takes them as given; `[]`
/// clears them). `None` when it leaves them as they are.
fn sent_entries(old: Option<&Value>, new: &Value) -> Result<Option<Vec<Entry>>, Refusal> {
    let sent = new.pointer("/metadata/managedFields");
    let live = old.and_then(|o| o.pointer("/metadata/managedFields"));
    match sent {
        None => Ok(None),
        Some(s) if Some(s) == live => Ok(None),
        Some(_) => managed::read(new)
            .map(Some)
            .map_err(|why| Refusal::Invalid("managedFields".into(), why.to_string())),
    }
}

/// Records `fields` as what `m` owns by `operation`. An entry whose set and version are unchanged
/// keeps its time, so re-applying the same configuration writes nothing.
fn record(entries: &mut Vec<Entry>, m: &Manager, operation: Operation, fields: FieldSet) {
    match entries
        .iter_mut()
        .find(|e| e.is(&m.name, operation, &m.subresource))
    {
        Some(e) if e.fields == fields && e.api_version == m.api_version => {}
        Some(e) => {
            e.fields = fields;
            e.api_version = m.api_version.clone();
            e.time = m.time.clone();
        }
        None => entries.push(Entry {
            manager: m.name.clone(),
            operation,
            api_version: m.api_version.clone(),
            time: m.time.clone(),
            subresource: m.subresource.clone(),
            fields,
        }),
    }
}

/// Records a create: the creator owns every field it set (unless the request sets
/// `managedFields` itself).
///
/// # Errors
/// The request's `managedFields` are malformed.
pub fn on_create(obj: &mut Value, schema: Option<&Value>, m: &Manager) -> Result<(), Refusal> {
    if let Some(entries) = sent_entries(None, obj)? {
        managed::write(obj, &entries);
        return Ok(());
    }
    let entries = vec![Entry {
        manager: m.name.clone(),
        operation: Operation::Update,
        api_version: m.api_version.clone(),
        time: m.time.clone(),
        subresource: m.subresource.clone(),
        fields: set_of(obj, m, schema),
    }];
    managed::write(obj, &entries);
    Ok(())
}

/// Records an update (PUT, PATCH): the writer owns the fields it changed or added, which other
/// managers lose; removed fields leave every manager. A request setting `managedFields` itself
/// gets them as given (`[]` clears them).
///
/// # Errors
/// The request's `managedFields` are malformed.
pub fn on_update(
    old: &Value,
    new: &mut Value,
    schema: Option<&Value>,
    m: &Manager,
) -> Result<(), Refusal> {
    if let Some(entries) = sent_entries(Some(old), new)? {
        managed::write(new, &entries);
        return Ok(());
    }
    let mut entries = managed::read(old).unwrap_or_default();
    let (old_view, new_view) = (owned_view(old, m), owned_view(new, m));
    let old_set = structure::fields_of(&old_view, schema);
    let new_set = structure::fields_of(&new_view, schema);
    let mut changed = FieldSet::new();
    for p in new_set.paths() {
        let before = structure::value_at(&old_view, &p);
        let differs = if structure::is_container(&new_set, &p) {
            before.is_none()
        } else {
            before != structure::value_at(&new_view, &p)
        };
        if differs {
            changed.insert(&p);
        }
    }
    let removed = old_set.difference(&new_set);
    for e in &mut entries {
        e.fields = e.fields.difference(&removed).difference(&changed);
    }
    if !changed.is_empty() {
        let owned = entries
            .iter()
            .find(|e| e.is(&m.name, Operation::Update, &m.subresource))
            .map(|e| e.fields.union(&changed))
            .unwrap_or(changed);
        record(&mut entries, m, Operation::Update, owned);
    }
    entries.retain(|e| !e.fields.is_empty());
    managed::cap_update_managers(&mut entries);
    managed::write(new, &entries);
    Ok(())
}

/// Server-side apply of `config` by `m` onto `live` (`None`: the object is created): the merged
/// object, with `managedFields` recording the applier's set. Fields the applier applied before and
/// no longer applies are removed unless another manager owns them.
///
/// # Errors
/// [`Refusal::Conflicts`] when another manager owns a field the configuration changes (and not
/// `force`); [`Refusal::Invalid`] when the configuration sets `managedFields`.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    schema: Option<&Value>,
    m: &Manager,
    force: bool,
) -> Result<Value, Refusal> {
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(Refusal::Invalid(
            "managedFields".into(),
            "must be nil in an apply configuration".into(),
        ));
    }
    let mut entries = live
        .map(managed::read)
        .transpose()
        .unwrap_or_default()
        .unwrap_or_default();
    let applied = set_of(config, m, schema);
    let mut merged = match live {
        Some(live) => structure::merge(Some(live), config, schema),
        None => structure::merge(None, config, schema),
    };
    let empty = json!({});
    let live_view = owned_view(live.unwrap_or(&empty), m);
    let merged_view = owned_view(&merged, m);
    let mut conflicts = Vec::new();
    let mut forced: Vec<(usize, Vec<Element>)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if e.is(&m.name, Operation::Apply, &m.subresource) {
            continue;
        }
        for p in applied.intersection(&e.fields).paths() {
            if structure::is_container(&applied, &p) {
                continue;
            }
            if structure::value_at(&live_view, &p) != structure::value_at(&merged_view, &p) {
                conflicts.push(Conflict {
                    manager: e.manager.clone(),
                    api_version: e.api_version.clone(),
                    field: display_path(&p),
                });
                forced.push((i, p));
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(Refusal::Conflicts(conflicts));
    }
    for (i, p) in forced {
        entries[i].fields = entries[i].fields.difference(&single(&p));
    }
    let previous = entries
        .iter()
        .find(|e| e.is(&m.name, Operation::Apply, &m.subresource))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    // Deepest first, so a map or item goes only once nothing anyone owns is left in it.
    let mut dropped = previous.difference(&applied).paths();
    dropped.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in dropped {
        // A list item's key fields go with the item, never alone.
        if structure::is_key_field(&p) {
            continue;
        }
        let owned_elsewhere = entries.iter().any(|e| {
            !e.is(&m.name, Operation::Apply, &m.subresource)
                && (e.fields.contains(&p) || e.fields.has_children(&p))
        });
        let keys = structure::item_keys(&p);
        let emptied = structure::value_at(&merged, &p).is_none_or(|v| match v {
            Value::Object(map) => {
                !previous.has_children(&p) || map.keys().all(|k| keys.contains(k))
            }
            _ => true,
        });
        if !owned_elsewhere && emptied {
            structure::remove(&mut merged, &p);
        }
    }
    record(&mut entries, m, Operation::Apply, applied);
    entries.retain(|e| !e.fields.is_empty());
    managed::write(&mut merged, &entries);
    Ok(merged)
}

#[cfg(test)]
mod tests;
