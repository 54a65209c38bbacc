//! Tests of the StrategyModule object source.

use serde_json::{json, Value};

use super::replica_id;
use super::status::merge_replicas;

fn entry(rejects: u64, replay: &str) -> Value {
    json!({"requests": {"evaluated": rejects * 2, "differences": {"rejects": rejects}},
           "replay": {"state": replay, "objects": 3},
           "samples": [{"object": format!("o{rejects}")}]})
}

#[test]
fn replicas_are_summed_and_a_rollback_sticks() {
    let stored = json!({"rollout": {
        "candidateDigest": "sha256:1", "state": "RolledBack", "reason": "too slow",
        "replicas": {"other-1": entry(7, "Done")}
    }});
    let mut mine = json!({"rollout": {
        "candidateDigest": "sha256:1", "state": "Canary",
        "replicas": {replica_id(): entry(10, "Running")}
    }});
    merge_replicas(Some(&stored), &mut mine);
    let r = &mine["rollout"];
    assert_eq!(r["requests"]["differences"]["rejects"], 17);
    assert_eq!(r["requests"]["evaluated"], 34);
    assert_eq!(r["replicas"].as_object().unwrap().len(), 2);
    assert_eq!(r["replay"]["state"], "Done");
    assert_eq!(r["samples"].as_array().unwrap().len(), 2);
    assert_eq!(
        (r["state"].as_str(), r["reason"].as_str()),
        (Some("RolledBack"), Some("too slow"))
    );
    // Merging the result again changes nothing: replicas agreeing do not write.
    let again = mine.clone();
    merge_replicas(Some(&again), &mut mine);
    assert_eq!(mine, again);
}

#[test]
fn another_candidates_entries_are_not_merged() {
    let stored = json!({"rollout": {"candidateDigest": "sha256:old",
        "replicas": {"other-1": entry(7, "Done")}}});
    let mut mine = json!({"rollout": {"candidateDigest": "sha256:new",
        "replicas": {replica_id(): entry(1, "Done")}}});
    merge_replicas(Some(&stored), &mut mine);
    assert_eq!(mine["rollout"]["requests"]["differences"]["rejects"], 1);
}
