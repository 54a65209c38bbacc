//! The garbage collector's picture of ownership: every object of every served resource that
//! owns or is owned (by uid), kept from the informers' events, and which objects each event
//! makes worth looking at again. Deciding what to do is the collector's (`mod.rs`); this file
//! only remembers.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use strategy_host_registry::system_fields::{finalizers, is_being_deleted};
use strategy_host_registry::{FOREGROUND_DELETION, ORPHAN};

/// An object's uid: the graph's key.
pub type Uid = String;

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerReference {
    /// `group/version` (or `version` for core).
    pub api_version: String,
    /// The owner's kind.
    pub kind: String,
    /// The owner's name (in the dependent's namespace when the owner is namespaced).
    pub name: String,
    /// The owner's uid: a reference names one incarnation of the owner.
    pub uid: Uid,
    /// Whether a foreground deletion of the owner waits for this dependent.
    pub block_owner_deletion: bool,
}

impl OwnerReference {
    /// The group and version of `api_version`.
    pub fn group_version(&self) -> (&str, &str) {
        strategy_host_apimachinery::group_version(&self.api_version)
    }

    fn parse(value: &Value) -> Option<Self> {
        let text = |field: &str| value.get(field).and_then(Value::as_str).map(String::from);
        Some(Self {
            api_version: text("apiVersion")?,
            kind: text("kind")?,
            name: text("name")?,
            uid: text("uid")?,
            block_owner_deletion: value["blockOwnerDeletion"] == true,
        })
    }
}

/// What the graph knows of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The object's group.
    pub group: String,
    /// The version it is stored at.
    pub version: String,
    /// Its kind.
    pub kind: String,
    /// Its resource's plural.
    pub plural: String,
    /// Its namespace (none for a cluster-scoped object).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its owners.
    pub owners: Vec<OwnerReference>,
    /// It has a deletionTimestamp.
    pub deleting: bool,
    /// It waits for its dependents (`foregroundDeletion`).
    pub deleting_dependents: bool,
    /// It waits for its dependents to be orphaned (`orphan`).
    pub orphaning: bool,
}

impl Node {
    /// The node for `obj`, an object of the resource `group`/`plural`; `None` for an object
    /// without uid.
    pub fn of(group: &str, plural: &str, obj: &Value) -> Option<(Uid, Self)> {
        let meta = obj.get("metadata")?;
        let uid = meta.get("uid")?.as_str()?.to_string();
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        let api_version = text(obj.get("apiVersion"));
        let version = strategy_host_apimachinery::group_version(&api_version)
            .1
            .to_owned();
        let owners = meta
            .get("ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| refs.iter().filter_map(OwnerReference::parse).collect())
            .unwrap_or_default();
        let gc_finalizers = finalizers(obj);
        let deleting = is_being_deleted(obj);
        Some((
            uid,
            Self {
                group: group.to_string(),
                version,
                kind: text(obj.get("kind")),
                plural: plural.to_string(),
                namespace: meta
                    .get("namespace")
                    .and_then(Value::as_str)
                    .map(String::from),
                name: text(meta.get("name")),
                owners,
                deleting,
                deleting_dependents: deleting
                    && gc_finalizers.iter().any(|f| f == FOREGROUND_DELETION),
                orphaning: deleting && gc_finalizers.iter().any(|f| f == ORPHAN),
            },
        ))
    }

    /// Whether the collector has work on this node as an owner being deleted.
    fn owner_work(&self) -> bool {
        self.deleting_dependents || self.orphaning
    }
}

/// Every object that owns or is owned, and the reverse index from owner uid to dependents.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<Uid, Node>,
    /// Owner uid → the uids of the objects that reference it (the owner may be unknown).
    dependents: HashMap<Uid, HashSet<Uid>>,
}

impl Graph {
    /// The node of `uid`.
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    /// The objects that reference `owner`.
    pub fn dependents(&self, owner: &str) -> Vec<Uid> {
        self.dependents
            .get(owner)
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// How many objects the graph holds (for metrics).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Records `node` as `uid`'s current state; answers the uids worth looking at again.
    pub fn observe(&mut self, uid: Uid, node: Node) -> Vec<Uid> {
        let mut wake = Vec::new();
        let old = self.nodes.get(&uid).cloned();
        let owners_changed = old.as_ref().is_none_or(|o| o.owners != node.owners);
        if owners_changed {
            if let Some(old) = &old {
                for owner in &old.owners {
                    self.unlink(&owner.uid, &uid);
                    // A blocking dependent may have let go of a foreground owner.
                    wake.push(owner.uid.clone());
                }
            }
            for owner in &node.owners {
                self.dependents
                    .entry(owner.uid.clone())
                    .or_default()
                    .insert(uid.clone());
            }
        }
        let has_dependents = self.dependents.contains_key(&uid);
        let became_owner_work = node.owner_work() && old.is_none_or(|o| o != node);
        if (owners_changed && !node.owners.is_empty()) || became_owner_work {
            wake.push(uid.clone());
        }
        // A dependent of an owner that began a foreground deletion is looked at by the owner's
        // own work; an owner that went away is `forget`.
        if has_dependents && node.deleting_dependents {
            wake.extend(self.dependents(&uid));
        }
        // Every object is kept, as Kubernetes' collector keeps it: any may become an owner,
        // and a reference to it from another namespace is told apart by where it lives.
        self.nodes.insert(uid, node);
        wake.retain(|u| self.nodes.contains_key(u));
        wake
    }

    /// Forgets `uid` (deleted); answers its dependents (their owner is gone) and the owners
    /// waiting on it.
    pub fn forget(&mut self, uid: &str) -> Vec<Uid> {
        let mut wake = self.dependents(uid);
        if let Some(node) = self.nodes.remove(uid) {
            for owner in &node.owners {
                self.unlink(&owner.uid, uid);
                wake.push(owner.uid.clone());
            }
        }
        wake.retain(|u| self.nodes.contains_key(u));
        wake
    }

    /// The uids of the objects of the resource `group`/`plural`.
    pub fn uids_of(&self, group: &str, plural: &str) -> Vec<Uid> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.group == group && n.plural == plural)
            .map(|(u, _)| u.clone())
            .collect()
    }

    fn unlink(&mut self, owner: &str, dependent: &str) {
        if let Some(set) = self.dependents.get_mut(owner) {
            set.remove(dependent);
            if set.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(uid: &str, owners: &[&str], finalizers: &[&str], deleting: bool) -> (Uid, Node) {
        let refs: Vec<Value> = owners
            .iter()
            .map(|o| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o, "uid": o, "blockOwnerDeletion": true}))
            .collect();
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": uid, "namespace": "ns", "uid": uid, "ownerReferences": refs, "finalizers": finalizers}});
        if deleting {
            obj["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        Node::of("", "configmaps", &obj).unwrap()
    }

    #[test]
    fn dependents_follow_owner_references() {
        let mut g = Graph::default();
        let (u, n) = node("owner", &[], &[], false);
        assert!(
            g.observe(u, n).is_empty(),
            "nothing to do for a plain object"
        );
        assert_eq!(g.len(), 1);
        let (u, n) = node("child", &["owner"], &[], false);
        assert_eq!(g.observe(u, n), vec!["child".to_string()]);
        assert_eq!(g.dependents("owner"), vec!["child".to_string()]);
        let (u, n) = node("child", &["owner"], &[], false);
        assert!(
            g.observe(u, n).is_empty(),
            "an unchanged object is not looked at again"
        );
        assert_eq!(g.forget("owner"), vec!["child".to_string()]);
        let (u, n) = node("child", &[], &[], false);
        g.observe(u, n);
        assert!(g.dependents("owner").is_empty());
    }

    #[test]
    fn a_foreground_deletion_wakes_the_owner_and_its_dependents() {
        let mut g = Graph::default();
        let (u, n) = node("owner", &[], &[], false);
        g.observe(u, n);
        let (u, n) = node("child", &["owner"], &[], false);
        g.observe(u, n);
        let (u, n) = node("owner", &[], &[FOREGROUND_DELETION], true);
        let mut woken = g.observe(u, n);
        woken.sort();
        assert_eq!(woken, ["child", "owner"]);
        assert_eq!(g.forget("child"), vec!["owner".to_string()]);
    }
}
