//! One page of a collection at the request's version: the `{Kind}List` a list returns, its
//! items shared as the cache holds them, so a list copies no object until it is written out.

use std::sync::Arc;

use serde_json::{json, Value};

use strategy_host_storage::SharedObject;

/// A `{Kind}List`: the list's type and metadata, and its items at the request's version.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The list's `apiVersion` (the request's group/version).
    pub api_version: String,
    /// The list's `kind` (`{Kind}List`).
    pub kind: String,
    /// The revision the list is consistent at.
    pub resource_version: u64,
    /// A token for the next page, when there is one.
    pub continue_token: Option<String>,
    /// How many matching objects remain after this page, when known.
    pub remaining_item_count: Option<u64>,
    /// The objects, in key order, each already at the request's version.
    pub items: Vec<Arc<SharedObject>>,
}

impl ListPage {
    /// The list's `metadata`.
    pub fn metadata(&self) -> Value {
        let mut metadata = json!({"resourceVersion": self.resource_version.to_string()});
        if let Some(c) = &self.continue_token {
            metadata["continue"] = Value::String(c.clone());
        }
        if let Some(n) = self.remaining_item_count {
            metadata["remainingItemCount"] = Value::from(n);
        }
        metadata
    }

    /// The items parsed into trees.
    pub fn item_values(&self) -> Vec<Value> {
        self.items.iter().map(|o| o.to_value()).collect()
    }

    /// The whole list as one tree (for tables, protobuf and audit, which need one).
    pub fn to_value(&self) -> Value {
        json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": self.metadata(),
            "items": self.item_values(),
        })
    }

    /// The list's JSON up to the opening of `items`: `{"apiVersion":…,"kind":…,"metadata":
    /// {…},"items":[`. The items follow, comma-separated, then [`ListPage::JSON_TAIL`].
    pub fn json_head(&self) -> Vec<u8> {
        let head = json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": self.metadata(),
        });
        let mut out = serde_json::to_vec(&head).unwrap_or_default();
        // Reopen the object to append `items` last, so it can be written item by item.
        out.pop();
        out.extend_from_slice(br#","items":["#);
        out
    }

    /// What closes a list's JSON after its items.
    pub const JSON_TAIL: &'static [u8] = b"]}";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_written_in_parts_is_the_list() {
        let page = ListPage {
            api_version: "v1".into(),
            kind: "ConfigMapList".into(),
            resource_version: 7,
            continue_token: Some("abc".into()),
            remaining_item_count: Some(3),
            items: ["a", "b"]
                .iter()
                .map(|n| Arc::new(SharedObject::new(json!({"metadata": {"name": n}}))))
                .collect(),
        };
        let mut bytes = page.json_head();
        for (i, item) in page.items.iter().enumerate() {
            if i > 0 {
                bytes.push(b',');
            }
            bytes.extend_from_slice(&item.json());
        }
        bytes.extend_from_slice(ListPage::JSON_TAIL);
        let parsed: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(parsed, page.to_value());
        assert_eq!(parsed["metadata"]["continue"], "abc");
        assert_eq!(parsed["metadata"]["remainingItemCount"], 3);
        assert_eq!(parsed["items"][1]["metadata"]["name"], "b");
    }
}
