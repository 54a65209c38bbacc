//! API priority and fairness' bootstrap configuration, Kubernetes' own
//! (`flowcontrol_bootstrap.json`): the mandatory FlowSchemas and PriorityLevelConfigurations
//! (`exempt` for `system:masters`, `catch-all` for the rest), which the server always keeps,
//! and the suggested ones (`system`, `leader-election`, `workload-high`, `global-default`, ...),
//! which it creates once. The api layer classifies by the objects; what it uses before they
//! are first listed is this.

use serde_json::Value;

/// The annotation that lets the server keep an object's spec as bootstrapped (`"true"`); an
/// operator sets it to `"false"` to keep their own.
pub const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

fn objects(which: &str) -> Vec<Value> {
    let all: Value = serde_json::from_str(include_str!("flowcontrol_bootstrap.json"))
        .expect("flowcontrol_bootstrap.json is JSON");
    all[which].as_array().cloned().unwrap_or_default()
}

/// The mandatory objects (PriorityLevelConfigurations first).
pub fn mandatory() -> Vec<Value> {
    objects("mandatory")
}

/// The suggested objects (PriorityLevelConfigurations first).
pub fn suggested() -> Vec<Value> {
    objects("suggested")
}

/// The resource of a bootstrap object's kind.
pub fn plural_of(object: &Value) -> &'static str {
    match object["kind"].as_str() {
        Some("FlowSchema") => "flowschemas",
        _ => "prioritylevelconfigurations",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_holds_kubernetes_levels_and_schemas() {
        let names = |objs: Vec<Value>, kind: &str| -> Vec<String> {
            objs.into_iter()
                .filter(|o| o["kind"] == kind)
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            names(mandatory(), "PriorityLevelConfiguration"),
            ["exempt", "catch-all"]
        );
        assert_eq!(names(mandatory(), "FlowSchema"), ["exempt", "catch-all"]);
        assert_eq!(names(suggested(), "PriorityLevelConfiguration").len(), 6);
        assert_eq!(names(suggested(), "FlowSchema").len(), 9);
        for o in mandatory().into_iter().chain(suggested()) {
            assert_eq!(o["metadata"]["annotations"][AUTOUPDATE], "true", "{o}");
        }
    }
}
