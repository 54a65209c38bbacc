//! The shared object's tests: heads read without a tree, stamping, retyping, conversion answers.

use super::*;
use serde_json::json;

#[test]
fn a_new_type_keeps_everything_else() {
    let obj = SharedObject::new(json!({"apiVersion": "g/v1", "kind": "K",
        "metadata": {"name": "a", "resourceVersion": "9", "labels": {"x": "y"}}, "spec": {"n": 1}}));
    let v2 = obj.with_type("g/v2", "K");
    assert_eq!(v2.api_version(), Some("g/v2"));
    assert_eq!(
        (v2.revision(), v2.name(), v2.label("x")),
        (9, Some("a"), Some("y"))
    );
    assert_eq!(
        v2.to_value(),
        json!({"apiVersion": "g/v2", "kind": "K",
               "metadata": {"name": "a", "resourceVersion": "9", "labels": {"x": "y"}}, "spec": {"n": 1}})
    );
}

#[test]
fn a_conversion_that_kept_the_metadata_is_taken_as_it_is() {
    let obj = SharedObject::new(json!({"apiVersion": "g/v2", "kind": "K",
        "metadata": {"name": "a", "resourceVersion": "9", "labels": {"x": "y"}}, "spec": {"n": 1}}));
    let answer = |v: Value| serde_json::to_vec(&v).unwrap();
    let metadata = json!({"name": "a", "resourceVersion": "9", "labels": {"x": "y"}});
    let good = json!({"apiVersion": "g/v1", "kind": "K", "metadata": metadata, "spec": {"m": 1}});
    let v1 = obj.converted(answer(good.clone()), "g/v1").expect("taken");
    assert_eq!(v1.to_value(), good);
    assert_eq!(
        (v1.api_version(), v1.revision(), v1.name(), v1.label("x")),
        (Some("g/v1"), 9, Some("a"), Some("y"))
    );
    let mut relabelled = good.clone();
    relabelled["metadata"]["labels"]["x"] = json!("z");
    let mut retyped = good.clone();
    retyped["kind"] = json!("Other");
    for looked_at in [relabelled, retyped, json!([1])] {
        let given = answer(looked_at.clone());
        assert_eq!(obj.converted(given.clone(), "g/v1").unwrap_err(), given);
    }
    assert!(obj.converted(answer(good.clone()), "g/v3").is_err());
    assert!(obj.converted(b"{".to_vec(), "g/v1").is_err());
    // Answers that open as the object does are still checked after the metadata.
    let opening = br#"{"apiVersion":"g/v1","kind":"K","metadata":{"labels":{"x":"y"},"name":"a","resourceVersion":"9"}"#;
    let taken = |rest: &[u8]| obj.converted([&opening[..], rest].concat(), "g/v1").is_ok();
    assert!(taken(br#"}"#) && taken(br#","spec":{"m":1}} "#));
    let compared = |rest: &[u8]| obj.answer_keeps_head(&[&opening[..], rest].concat(), "g/v1");
    assert_eq!(compared(br#","spec":{}}"#), Some((43, 43 + 53)));
    assert!(compared(b"}").is_some() && compared(br#","metadata":{}}"#).is_none());
    for rest in [
        &br#",}"#[..],
        br#","spec":{]}"#,
        br#","metadata":{"name":"b"}}"#,
        b"} x",
        b"",
    ] {
        assert!(!taken(rest), "{}", String::from_utf8_lossy(rest));
    }
    // The converted object knows where its metadata lies: converting it back compares with it.
    let back = json!({"apiVersion": "g/v2", "kind": "K", "metadata": good["metadata"].clone(), "spec": {"n": 1}});
    assert_eq!(
        v1.converted(answer(back.clone()), "g/v2")
            .unwrap()
            .to_value(),
        back
    );
    let mut renamed = back;
    renamed["metadata"]["name"] = json!("b");
    assert!(v1.converted(answer(renamed), "g/v2").is_err());
}

#[test]
fn stored_bytes_are_stamped_and_read_without_a_tree() {
    let stored = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web", "a\"b": "x"}},
        "data": {"k": "v\u{e9}\n"},
    });
    let bytes = serde_json::to_vec(&stored).unwrap();
    let obj = SharedObject::from_stored("/k", &bytes, 42).unwrap();
    assert_eq!(obj.revision(), 42);
    assert_eq!(obj.name(), Some("a"));
    assert_eq!(obj.namespace(), Some("ns"));
    assert_eq!(obj.kind(), Some("ConfigMap"));
    assert_eq!(obj.api_version(), Some("v1"));
    assert_eq!(obj.label("app"), Some("web"));
    assert_eq!(obj.label("a\"b"), Some("x"));
    assert_eq!(obj.label("nope"), None);
    let mut expected = stored.clone();
    expected["metadata"]["resourceVersion"] = json!("42");
    assert_eq!(obj.to_value(), expected);
    // The bytes are what serde_json would write for the stamped tree.
    assert_eq!(obj.json(), serde_json::to_vec(&expected).unwrap());

    let gone = obj.at_revision(50);
    assert_eq!(gone.revision(), 50);
    assert_eq!(gone.to_value()["metadata"]["resourceVersion"], "50");
    assert_eq!(gone.label("app"), Some("web"));
}

#[test]
fn stamping_writes_the_one_member_whatever_the_metadata_holds() {
    let stored = [
        r#"{"metadata":{}}"#,
        r#"{"metadata":{"uid":"u"}}"#,
        r#"{"metadata":{"name":"a","uid":"u"},"spec":{"resourceVersion":"x"}}"#,
        r#"{"apiVersion":"v1","metadata":{"annotations":{"resourceVersion":"1"},"name":"a"}}"#,
        r#"{"metadata":{"name":"a","resourceVersion":"5","uid":"u"}}"#,
        r#"{"metadata":{"resource\u0056ersion":"5"}}"#,
        // Written by hand: spaced and out of order. Any place in metadata is valid JSON.
        "{ \"metadata\" : { \"uid\" : \"u\" , \"name\" : \"a\" } , \"kind\":\"K\" }",
        "{\"metadata\": {\n}}",
    ];
    for text in stored {
        let obj = SharedObject::from_stored("/k", text.as_bytes(), 42).unwrap();
        let mut expected: Value = serde_json::from_str(text).unwrap();
        expected["metadata"]["resourceVersion"] = json!("42");
        assert_eq!(obj.to_value(), expected, "{text}");
        assert_eq!(obj.revision(), 42);
        let sorted_and_compact =
            serde_json::to_string(&serde_json::from_str::<Value>(text).unwrap()).unwrap() == text;
        if sorted_and_compact {
            assert_eq!(obj.json(), serde_json::to_vec(&expected).unwrap(), "{text}");
        }
        let later = obj.at_revision(43);
        expected["metadata"]["resourceVersion"] = json!("43");
        assert_eq!(later.to_value(), expected, "{text}");
    }
    for corrupt in [
        r#"{"metadata":5}"#,
        r#"{"metadata":null}"#,
        r#"{"metadata":[]}"#,
    ] {
        let err = SharedObject::from_stored("/k", corrupt.as_bytes(), 1).unwrap_err();
        assert!(
            err.to_string().contains("corrupt object at /k"),
            "{corrupt}: {err}"
        );
    }
}

#[test]
fn objects_without_metadata_get_one_and_garbage_is_refused() {
    let obj = SharedObject::from_stored("/k", br#"{"spec":{}}"#, 3).unwrap();
    assert_eq!(
        obj.to_value(),
        json!({"metadata": {"resourceVersion": "3"}, "spec": {}})
    );
    let err = SharedObject::from_stored("/bad", b"[1]", 3).unwrap_err();
    assert!(err.to_string().contains("corrupt object at /bad"), "{err}");
    assert!(SharedObject::from_stored("/bad", b"{", 3).is_err());
    let new = SharedObject::new(json!({"metadata": {"resourceVersion": "7"}}));
    assert_eq!(new.revision(), 7);
}
