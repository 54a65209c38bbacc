//! Tests of the typed query parameters of each verb.

use super::*;
use strategy_host_apimachinery::fields::DEFAULT_SELECTABLE_FIELDS;

fn q(s: &str) -> Query {
    Query::parse(Some(s))
}

#[test]
fn list_and_watch() {
    let l = ListParams::from_query(
        &q("labelSelector=app%3Dweb&limit=5"),
        DEFAULT_SELECTABLE_FIELDS,
    )
    .unwrap();
    assert_eq!(l.limit, 5);
    assert!(ListParams::from_query(&q("labelSelector=a+in+b"), DEFAULT_SELECTABLE_FIELDS).is_err());
    assert!(ListParams::from_query(
        &q("continue=x&resourceVersion=5"),
        DEFAULT_SELECTABLE_FIELDS
    )
    .is_err());
    assert!(ListParams::from_query(&q("limit=-1"), DEFAULT_SELECTABLE_FIELDS).is_err());
    assert!(
        ListParams::from_query(&q("resourceVersionMatch=Newest"), DEFAULT_SELECTABLE_FIELDS)
            .is_err()
    );
    let w = WatchParams::from_query(
        &q("timeoutSeconds=3&allowWatchBookmarks=true"),
        DEFAULT_SELECTABLE_FIELDS,
    )
    .unwrap();
    let opts = w.options(Some("one")).unwrap();
    assert!(opts.allow_bookmarks && !opts.predicate.field.is_empty());
    let named = WatchParams::from_query(
        &q("fieldSelector=metadata.name%3Dx"),
        DEFAULT_SELECTABLE_FIELDS,
    )
    .unwrap();
    assert_eq!(named.options(Some("one")).unwrap_err().code, 400);
}

#[test]
fn writes() {
    let p = PostParams::from_query(&q("dryRun=All&fieldValidation=Strict")).unwrap();
    assert!(p.dry_run && p.field_validation == FieldValidation::Strict);
    assert_eq!(
        PostParams::from_query(&q("dryRun=Some")).unwrap_err().code,
        400
    );
    assert_eq!(
        PatchParams::from_query(&q("fieldValidation=Loud"))
            .unwrap_err()
            .code,
        400
    );
}

#[test]
fn deletes() {
    let body = DeleteOptionsBody {
        grace_period_seconds: Some(5),
        propagation_policy: Some("Orphan".into()),
        preconditions: Some(PreconditionsBody {
            uid: Some("u".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let d = DeleteParams::new(&q("propagationPolicy=Foreground"), body).unwrap();
    assert_eq!(d.grace_period_seconds, Some(5));
    assert_eq!(d.propagation_policy.as_deref(), Some("Foreground"));
    assert_eq!(d.preconditions.uid.as_deref(), Some("u"));
    for bad in [
        "propagationPolicy=Sideways",
        "gracePeriodSeconds=abc",
        "dryRun=Some",
    ] {
        assert_eq!(
            DeleteParams::new(&q(bad), DeleteOptionsBody::default())
                .unwrap_err()
                .code,
            400,
            "{bad}"
        );
    }
    let dry = DeleteOptionsBody {
        dry_run: Some(vec!["All".into()]),
        ..Default::default()
    };
    assert!(DeleteParams::new(&q(""), dry).unwrap().dry_run);
    // The deprecated orphanDependents stands in for a missing propagationPolicy.
    let orphan = |o: bool| DeleteOptionsBody {
        orphan_dependents: Some(o),
        ..Default::default()
    };
    let d = DeleteParams::new(&q(""), orphan(true)).unwrap();
    assert_eq!(d.propagation_policy.as_deref(), Some("Orphan"));
    let d = DeleteParams::new(&q(""), orphan(false)).unwrap();
    assert_eq!(d.propagation_policy.as_deref(), Some("Background"));
    let d = DeleteParams::new(&q("propagationPolicy=Foreground"), orphan(true)).unwrap();
    assert_eq!(d.propagation_policy.as_deref(), Some("Foreground"));
}
