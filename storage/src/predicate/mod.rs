//! Selection predicates: label and field selectors parsed from Kubernetes' query syntax and
//! matched against JSON objects.
//!
//! Label selectors take `=`, `==`, `!=`, `in (...)`, `notin (...)`, `key` (exists) and `!key`
//! (does not exist), joined by commas. Field selectors take `=`, `==` and `!=` on the fields a
//! resource supports (`metadata.name` and `metadata.namespace` for every resource).
//!
//! Label selectors are in `labels.rs` (they also read `metav1.LabelSelector` JSON), field
//! selectors in `fields.rs`.

mod fields;
mod labels;

use serde_json::Value;

pub use fields::FieldSelector;
pub use labels::LabelSelector;

use super::object::SharedObject;

/// The fields every resource can be selected by.
pub const DEFAULT_SELECTABLE_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];
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

    /// True when a shared object is selected (see [`FieldSelector::matches_object`]).
    pub fn matches_object(&self, obj: &SharedObject) -> bool {
        self.is_everything() || (self.label.matches_object(obj) && self.field.matches_object(obj))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            let err = LabelSelector::parse(s).unwrap_err();
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
        assert!(FieldSelector::parse("spec.x=1", DEFAULT_SELECTABLE_FIELDS)
            .unwrap_err()
            .is_bad_request());
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
