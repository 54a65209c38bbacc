//! The checker against small histories: linearizable ones pass, each kind of violation is caught.

use super::*;

fn op(
    client: usize,
    request: Request,
    invoked: Micros,
    completed: Micros,
    outcome: Outcome,
) -> Operation {
    Operation {
        client,
        request,
        invoked,
        completed,
        outcome,
    }
}

fn create(key: &str, value: &str) -> Request {
    Request::Create {
        key: key.into(),
        value: value.into(),
    }
}

fn change(revision: u64, key: &str, value: Option<&str>) -> Change {
    Change {
        revision,
        key: key.into(),
        value: value.map(Into::into),
    }
}

fn get(key: &str) -> Request {
    Request::Get {
        key: key.into(),
        consistent: true,
    }
}

#[test]
fn a_linearizable_history_passes() {
    let watch = vec![
        change(2, "a", Some("a1")),
        change(3, "a", Some("a2")),
        change(4, "a", None),
    ];
    let ops = vec![
        op(0, create("a", "a1"), 0, 10, Outcome::Written(2)),
        op(1, get("a"), 11, 12, Outcome::Got(Some((2, "a1".into())))),
        op(
            0,
            Request::Update {
                key: "a".into(),
                value: "a2".into(),
                expected: 2,
            },
            13,
            20,
            Outcome::Written(3),
        ),
        op(
            1,
            Request::Delete {
                key: "a".into(),
                expected: 3,
            },
            21,
            30,
            Outcome::Deleted,
        ),
        op(0, get("a"), 31, 32, Outcome::Got(None)),
        op(
            1,
            Request::List,
            33,
            34,
            Outcome::Listed(4, BTreeMap::new()),
        ),
    ];
    assert_eq!(
        check(&ops, &[watch.clone().into(), watch.into()]),
        Vec::<String>::new()
    );
}

#[test]
fn stale_reads_lost_writes_and_diverging_watches_are_caught() {
    let watch = vec![change(2, "a", Some("a1")), change(3, "a", Some("a2"))];
    // A consistent read that began after a2 was acknowledged but saw a1.
    let stale = vec![
        op(0, create("a", "a1"), 0, 10, Outcome::Written(2)),
        op(
            0,
            Request::Update {
                key: "a".into(),
                value: "a2".into(),
                expected: 2,
            },
            11,
            20,
            Outcome::Written(3),
        ),
        op(1, get("a"), 21, 22, Outcome::Got(Some((2, "a1".into())))),
    ];
    assert_eq!(check(&stale, &[watch.clone().into()]).len(), 1);
    // An acknowledged write the watch never delivered.
    let lost = vec![op(0, create("b", "b1"), 0, 10, Outcome::Written(5))];
    assert_eq!(check(&lost, &[watch.clone().into()]).len(), 1);
    // A refused write that happened after all.
    let refused = vec![op(0, create("a", "a1"), 0, 10, Outcome::Refused)];
    assert_eq!(check(&refused, &[watch.clone().into()]).len(), 1);
    // Two watchers that disagree.
    let other = vec![change(2, "a", Some("a1"))];
    assert!(!check(&[], &[watch.clone().into(), other.into()]).is_empty());
    // Revisions against real time: the second write completed before the first began.
    let backwards = vec![
        op(0, create("a", "a1"), 30, 40, Outcome::Written(2)),
        op(
            1,
            Request::Update {
                key: "a".into(),
                value: "a2".into(),
                expected: 2,
            },
            0,
            10,
            Outcome::Written(3),
        ),
    ];
    assert!(!check(&backwards, &[watch.into()]).is_empty());
}

fn update(key: &str, value: &str, expected: u64) -> Request {
    Request::Update {
        key: key.into(),
        value: value.into(),
        expected,
    }
}

/// Both watchers lose their watch after revision 3 and relist (at 7 and 8); meanwhile a2 (4)
/// is replaced by a3 (7), b1 is created (5) and c deleted (6), none of it delivered.
fn relisted(a_in_list: (u64, &str)) -> Vec<Watched> {
    let before = [change(2, "a", Some("a1")), change(3, "c", Some("c1"))];
    let after = change(9, "a", Some("a4"));
    let state: BTreeMap<String, (u64, String)> = [
        ("a".to_string(), (a_in_list.0, a_in_list.1.to_string())),
        ("b".to_string(), (5, "b1".to_string())),
    ]
    .into();
    [7, 8]
        .into_iter()
        .map(|revision| Watched {
            changes: before.iter().cloned().chain([after.clone()]).collect(),
            relists: vec![Relist {
                after: 3,
                revision,
                state: state.clone(),
            }],
        })
        .collect()
}

fn across_the_gap() -> Vec<Operation> {
    vec![
        op(0, create("a", "a1"), 0, 10, Outcome::Written(2)),
        op(1, create("c", "c1"), 11, 12, Outcome::Written(3)),
        op(0, update("a", "a2", 2), 13, 14, Outcome::Written(4)),
        op(1, create("b", "b1"), 15, 16, Outcome::Written(5)),
        op(
            1,
            Request::Delete {
                key: "c".into(),
                expected: 3,
            },
            17,
            18,
            Outcome::Deleted,
        ),
        op(0, update("a", "a3", 4), 19, 20, Outcome::Written(7)),
        op(0, update("a", "a4", 7), 21, 22, Outcome::Written(9)),
        op(1, get("a"), 23, 24, Outcome::Got(Some((9, "a4".into())))),
        op(1, get("c"), 25, 26, Outcome::Got(None)),
    ]
}

#[test]
fn a_history_across_a_gap_both_watchers_relisted_over_passes() {
    let mut ops = across_the_gap();
    let listed = [
        ("a".to_string(), (9, "a4".to_string())),
        ("b".to_string(), (5, "b1".to_string())),
    ];
    ops.push(op(
        0,
        Request::List,
        27,
        28,
        Outcome::Listed(9, listed.into()),
    ));
    assert_eq!(check(&ops, &relisted((7, "a3"))), Vec::<String>::new());
}

#[test]
fn a_write_lost_in_a_gap_and_a_relist_that_contradicts_the_watches_are_caught() {
    // The relists show a2: a3, acknowledged at 7, is lost.
    let violations = check(&across_the_gap(), &relisted((4, "a2")));
    assert!(
        violations
            .iter()
            .any(|v| v.contains("acknowledged write of a3")),
        "{violations:?}"
    );
    // A relist that shows a version outside every gap no watch delivered.
    let mut watches = relisted((7, "a3"));
    watches[0].relists[0]
        .state
        .insert("d".into(), (2, "d1".into()));
    assert!(!check(&across_the_gap(), &watches).is_empty());
    // A watcher that skipped changes without relisting.
    let mut watches = relisted((7, "a3"));
    watches[1].changes.remove(1);
    assert!(!check(&across_the_gap(), &watches).is_empty());
}
