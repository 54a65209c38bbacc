//! Selection predicates: a list's or watch's label and field selectors (apimachinery's, parsed
//! from Kubernetes' query syntax) matched against JSON objects and stored objects' heads.

use serde_json::Value;

pub use strategy_host_apimachinery::fields::DEFAULT_SELECTABLE_FIELDS;
pub use strategy_host_apimachinery::{FieldSelector, LabelSelector};

use super::object::SharedObject;

/// Which objects a list or watch wants: both selectors must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SelectionPredicate {
    /// The label selector.
    pub label: LabelSelector,
    /// The field selector.
    pub field: FieldSelector,
}

impl SelectionPredicate {
    /// True when the predicate selects every object.
    pub fn is_everything(&self) -> bool {
        self.label.is_empty() && self.field.is_empty()
    }

    /// True when `obj` is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        self.label.matches(obj) && self.field.matches(obj)
    }

    /// True when a shared object is selected: its labels, name and namespace are read from
    /// its head; any other field a selector names parses the object once.
    pub fn matches_object(&self, obj: &SharedObject) -> bool {
        self.is_everything()
            || (self.label.matches_with(|k| obj.label(k))
                && self.field.matches_with(
                    obj.name().unwrap_or_default(),
                    obj.namespace().unwrap_or_default(),
                    || obj.to_value(),
                ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StorageError;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "web", "tier": "front"}));
        let yes = [
            "",
            "app=web",
            "app==web",
            "app!=db",
            "tier in (front,back)",
            "tier notin (back)",
            "app",
            "!legacy",
            "app=web, tier in ( front )",
            "missing notin (x)",
        ];
        for s in yes {
            assert!(
                LabelSelector::parse(s).unwrap().matches(&o),
                "{s} should match"
            );
        }
        let no = [
            "app=db",
            "app!=web",
            "tier in (back)",
            "legacy",
            "!app",
            "tier notin (front)",
        ];
        for s in no {
            assert!(
                !LabelSelector::parse(s).unwrap().matches(&o),
                "{s} should not match"
            );
        }
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        for s in [
            "app in web",
            "tier in (a",
            "a=b)",
            "x y z",
            "=v",
            "a=b c",
            "k in",
        ] {
            let err = StorageError::from(LabelSelector::parse(s).unwrap_err());
            assert!(err.is_bad_request(), "{s}: {err}");
        }
    }

    #[test]
    fn exact_matches_are_read_whatever_else_the_selector_names() {
        let name = |s| FieldSelector::exact_match(s, "metadata.name");
        assert_eq!(name("metadata.name=a").as_deref(), Some("a"));
        assert_eq!(name("spec.x=1, metadata.name==b").as_deref(), Some("b"));
        assert_eq!(name("metadata.name!=a"), None);
        assert_eq!(name("metadata.namespace=a"), None);
        assert_eq!(name("metadata.name"), None, "not a selector");
        assert_eq!(name(""), None);
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        let f = |s| FieldSelector::parse(s, DEFAULT_SELECTABLE_FIELDS).unwrap();
        assert!(f("metadata.name=a").matches(&o));
        assert!(f("metadata.name==a,metadata.namespace=ns").matches(&o));
        assert!(!f("metadata.name!=a").matches(&o));
        let err = FieldSelector::parse("spec.x=1", DEFAULT_SELECTABLE_FIELDS).unwrap_err();
        assert!(StorageError::from(err).is_bad_request());
        assert!(FieldSelector::name_equals("a").matches(&o));
    }

    #[test]
    fn shared_objects_are_selected_as_their_trees_are() {
        let objects = [
            json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web", "tier": "b"}}, "spec": {"x": 1}}),
            json!({"metadata": {"name": "b", "labels": {"app": "db"}}, "spec": {"x": "1"}}),
            json!({"metadata": {"name": "c", "namespace": "other"}}),
        ];
        let selectable = ["metadata.name", "metadata.namespace", "spec.x"];
        let selectors = [
            ("", ""),
            ("app=web", ""),
            ("app in (web, db),!legacy", "metadata.namespace!=other"),
            ("tier notin (a)", "metadata.name=b"),
            ("", "spec.x=1"),
            ("", "metadata.namespace="),
        ];
        for (label, field) in selectors {
            let predicate = SelectionPredicate {
                label: LabelSelector::parse(label).unwrap(),
                field: FieldSelector::parse(field, &selectable).unwrap(),
            };
            for o in &objects {
                let shared = SharedObject::new(o.clone());
                assert_eq!(
                    predicate.matches_object(&shared),
                    predicate.matches(o),
                    "{label:?} {field:?} on {o}"
                );
            }
        }
    }
}
