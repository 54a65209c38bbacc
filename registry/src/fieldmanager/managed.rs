//! `metadata.managedFields`: reading and writing the entries (manager, operation, apiVersion,
//! time, subresource, FieldsV1) and keeping the number of Update managers within Kubernetes' cap.

use serde_json::{json, Map, Value};

use super::fieldset::{FieldSet, NotFieldsV1};

/// Kubernetes keeps at most this many Update managers; older ones merge into one entry.
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager the oldest Update entries merge into beyond the cap.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// `Apply` or `Update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The field manager.
    pub manager: String,
    /// How it wrote.
    pub operation: Operation,
    /// The API version it wrote with.
    pub api_version: String,
    /// When its set last changed (RFC 3339).
    pub time: String,
    /// `""` or `status`.
    pub subresource: String,
    /// The fields it owns.
    pub fields: FieldSet,
}

impl Entry {
    /// Whether this entry is the one `manager` writes with `operation` on `subresource`.
    pub fn is(&self, manager: &str, operation: Operation, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }
}

/// A `metadata.managedFields` Kubernetes would refuse, with the path below it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagedFieldsError {
    /// Not a list.
    #[error("must be a list")]
    NotAList,
    /// An entry's operation is neither `Apply` nor `Update`.
    #[error("[{index}].operation: {operation:?}: must be Apply or Update")]
    Operation {
        /// The entry's index.
        index: usize,
        /// What it says.
        operation: Option<String>,
    },
    /// An entry's fieldsType is not `FieldsV1`.
    #[error("[{index}].fieldsType: {fields_type:?}: must be FieldsV1")]
    FieldsType {
        /// The entry's index.
        index: usize,
        /// What it says.
        fields_type: String,
    },
    /// An entry's fieldsV1 is not FieldsV1.
    #[error("[{index}].fieldsV1: {source}")]
    FieldsV1 {
        /// The entry's index.
        index: usize,
        /// Why.
        source: NotFieldsV1,
    },
}

/// Reads `metadata.managedFields` (absent → none).
///
/// # Errors
/// An entry Kubernetes would refuse: not an object, an unknown operation or fieldsType, bad FieldsV1.
pub fn read(obj: &Value) -> Result<Vec<Entry>, ManagedFieldsError> {
    let Some(list) = obj.pointer("/metadata/managedFields") else {
        return Ok(Vec::new());
    };
    let Some(list) = list.as_array() else {
        return Err(ManagedFieldsError::NotAList);
    };
    list.iter()
        .enumerate()
        .map(|(i, e)| {
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let operation = match e.get("operation").and_then(Value::as_str) {
                Some("Apply") => Operation::Apply,
                Some("Update") => Operation::Update,
                other => {
                    return Err(ManagedFieldsError::Operation {
                        index: i,
                        operation: other.map(str::to_owned),
                    })
                }
            };
            match e.get("fieldsType").and_then(Value::as_str) {
                None | Some("FieldsV1") => {}
                Some(other) => {
                    return Err(ManagedFieldsError::FieldsType {
                        index: i,
                        fields_type: other.to_owned(),
                    })
                }
            }
            let fields = match e.get("fieldsV1") {
                Some(v) => FieldSet::from_fields_v1(v)
                    .map_err(|source| ManagedFieldsError::FieldsV1 { index: i, source })?,
                None => FieldSet::new(),
            };
            Ok(Entry {
                manager: s("manager"),
                operation,
                api_version: s("apiVersion"),
                time: s("time"),
                subresource: s("subresource"),
                fields,
            })
        })
        .collect()
}

/// Writes `entries` (without empty ones) as `metadata.managedFields`, or removes it when none.
pub fn write(obj: &mut Value, entries: &[Entry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut m = Map::new();
            m.insert("manager".into(), json!(e.manager));
            m.insert("operation".into(), json!(e.operation.as_str()));
            m.insert("apiVersion".into(), json!(e.api_version));
            if !e.time.is_empty() {
                m.insert("time".into(), json!(e.time));
            }
            m.insert("fieldsType".into(), json!("FieldsV1"));
            m.insert("fieldsV1".into(), e.fields.to_fields_v1());
            if !e.subresource.is_empty() {
                m.insert("subresource".into(), json!(e.subresource));
            }
            Value::Object(m)
        })
        .collect();
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if list.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(list));
    }
}

/// Merges the oldest Update entries into one `ancient-changes` entry while there are more than
/// [`MAX_UPDATE_MANAGERS`], as Kubernetes does.
pub fn cap_update_managers(entries: &mut Vec<Entry>) {
    loop {
        let updates: Vec<usize> = (0..entries.len())
            .filter(|&i| {
                entries[i].operation == Operation::Update && entries[i].manager != ANCIENT_CHANGES
            })
            .collect();
        let ancient = entries
            .iter()
            .position(|e| e.operation == Operation::Update && e.manager == ANCIENT_CHANGES);
        let count = updates.len() + usize::from(ancient.is_some());
        if count <= MAX_UPDATE_MANAGERS {
            return;
        }
        let Some(&oldest) = updates
            .iter()
            .min_by(|a, b| entries[**a].time.cmp(&entries[**b].time))
        else {
            return;
        };
        let removed = entries.remove(oldest);
        match entries
            .iter_mut()
            .find(|e| e.operation == Operation::Update && e.manager == ANCIENT_CHANGES)
        {
            Some(a) => a.fields = a.fields.union(&removed.fields),
            None => entries.push(Entry {
                manager: ANCIENT_CHANGES.into(),
                ..removed
            }),
        }
    }
}
