//! After hooks end to end: a hook applying its own kind stops at the depth limit, a hook may
//! apply only what its manifest declares, the README's Project walk-through makes its Quota, and
//! a failed hook reaches the client as a `Warning` while the write stands.

use super::*;

const REPLICATORS: &str = "/apis/test.example.com/v1/replicators";
const PROJECTS: &str = "/apis/example.com/v1/projects";

/// A host serving Replicators with the self-replicating test program.
fn replicator_host() -> (HostProcess, tempfile::TempDir) {
    let (host, dir) =
        host_with_strategy_dir(&[("strategy-replicator", strategy_artifacts::REPLICATOR)]);
    eventually("replicators served", || {
        get(&host.url(REPLICATORS)).unwrap().0 == 200
    });
    (host, dir)
}

fn names(host: &HostProcess, path: &str) -> Vec<String> {
    let (code, body) = get(&host.url(path)).unwrap();
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The value of one sample of `/metrics`, by its full name and labels.
fn metric(host: &HostProcess, sample: &str) -> Option<u64> {
    let (_, body) = get(&host.url("/metrics")).unwrap();
    body.lines()
        .find_map(|l| l.strip_prefix(sample)?.trim().parse().ok())
}

/// The `Warning` headers of a reply as their text, unescaped.
fn warning_texts(reply: &strategy_host_e2e::Reply) -> Vec<String> {
    reply
        .warnings
        .iter()
        .map(|w| w.replace("\\\"", "\""))
        .collect()
}

#[test]
fn a_self_replicating_hook_stops_at_the_depth_limit() {
    let limit = strategy_host::wasm_runtime::RuntimeConfig::default().max_apply_depth;
    let (mut host, _dir) = replicator_host();
    let first = json!({"apiVersion": "test.example.com/v1", "kind": "Replicator",
                       "metadata": {"name": "r"}, "spec": {}});
    create(&host, REPLICATORS, &first);

    // The client's object and one per nesting level the limit allows; the hook at the limit is
    // refused (hooks finish before the response; the refusal is the chain's end).
    let refused = r#"strategy_apply_refused_total{module="replicators",reason="depth"}"#;
    eventually("the hook at the depth limit refused", || {
        metric(&host, refused) == Some(1)
    });
    let want: Vec<String> = std::iter::once("r".to_owned())
        .chain((1..=limit).map(|hop| format!("r-{hop}")))
        .collect();
    assert_eq!(names(&host, REPLICATORS), want);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(names(&host, REPLICATORS), want, "and it stays there");
    assert_eq!(metric(&host, refused), Some(1));
    let log = host.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("apply refused: hooks nested"))
        .unwrap_or_else(|| panic!("no refusal logged:\n{log}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("replicators"), "names the module: {line}");
    assert!(line.contains(&format!("depth={limit}")), "{line}");
}

#[test]
fn a_hook_may_apply_only_what_its_manifest_declares() {
    let (mut host, _dir) = replicator_host();
    let sneaky = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sneaky"}});
    let obj = json!({"apiVersion": "test.example.com/v1", "kind": "Replicator",
                     "metadata": {"name": "ns-writer"}, "spec": {"apply": sneaky}});
    let r = call("POST", &host.url(REPLICATORS), Some(&obj)).unwrap();
    assert_eq!(r.code, 201, "the write stands: {}", r.body);
    let warnings = warning_texts(&r);
    let reason = "apply refused: module \"replicators\" does not declare v1/Namespace among the resources its hooks apply";
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("after_create hook failed") && w.contains(reason)),
        "{warnings:?}"
    );
    assert_eq!(get(&host.url("/api/v1/namespaces/sneaky")).unwrap().0, 404);
    let refused = r#"strategy_apply_refused_total{module="replicators",reason="undeclared"}"#;
    assert_eq!(metric(&host, refused), Some(1));
    assert!(host.log_text().contains(reason), "refusal logged");

    // The declared kind (its own) still goes through.
    let own = json!({"apiVersion": "test.example.com/v1", "kind": "Replicator",
                     "metadata": {"name": "own"}, "spec": {"hop": 2}});
    let obj = json!({"apiVersion": "test.example.com/v1", "kind": "Replicator",
                     "metadata": {"name": "writer"}, "spec": {"apply": own}});
    let r = call("POST", &host.url(REPLICATORS), Some(&obj)).unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        get(&host.url(&format!("{REPLICATORS}/own"))).unwrap().0,
        200
    );
}

/// The Project manifest of the README's walk-through (the heredoc naming `kind: Project`), so
/// the test follows what a reader types.
fn readme_project() -> String {
    let readme = std::fs::read_to_string(examples().join("../README.md")).unwrap();
    let mut blocks = readme.split("<<'Y'\n").skip(1);
    blocks
        .find_map(|b| {
            let yaml = b.split("\nY\n").next()?;
            yaml.contains("kind: Project").then(|| format!("{yaml}\n"))
        })
        .expect("the README creates a Project")
}

#[test]
fn the_readme_project_walkthrough_makes_a_quota() {
    // A fresh server with the example strategies, as examples/run.sh starts it.
    let (host, dir) = host_with_strategy_dir(strategy_artifacts::ALL);
    eventually("projects served", || {
        get(&host.url(PROJECTS)).unwrap().0 == 200
    });
    let kubectl = |args: &[&str], stdin: Option<&str>| {
        let (ok, out, err) = kubectl(&host.base_url, dir.path(), args, stdin).unwrap();
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        (out, err)
    };
    let crds = examples().join("crds").display().to_string();
    kubectl(&["apply", "-f", &crds], None);
    let project = readme_project();
    let (_, err) = kubectl(&["apply", "-f", "-"], Some(&project));
    assert!(!err.contains("hook failed"), "the hook succeeded: {err}");
    let name = project
        .lines()
        .find_map(|l| l.trim().strip_prefix("metadata: {name: "))
        .and_then(|rest| rest.strip_suffix('}'))
        .expect("the README's Project has a name");

    // The hook ran before the response: the namespace and the Quota are there at once.
    let (out, _) = kubectl(&["get", "namespace", name, "-o", "json"], None);
    let ns: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ns["metadata"]["labels"]["example.com/project"], name);
    let (out, _) = kubectl(&["get", "quotas", "-n", name, "-o", "json"], None);
    let quotas: Value = serde_json::from_str(&out).unwrap();
    let items = quotas["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{quotas}");
    assert_eq!(items[0]["metadata"]["name"], "default");
    assert_eq!(items[0]["spec"]["pods"], 10);
}

#[test]
fn a_failed_after_hook_is_a_warning_and_the_write_stands() {
    // The Project module alone: its Quota resource is not served, so its hook fails.
    let (host, _dir) = host_with_strategy_dir(&[("strategy-project", strategy_artifacts::PROJECT)]);
    eventually("projects served", || {
        get(&host.url(PROJECTS)).unwrap().0 == 200
    });
    let project = json!({"apiVersion": "example.com/v1", "kind": "Project",
                         "metadata": {"name": "team-y"}});
    let r = call("POST", &host.url(PROJECTS), Some(&project)).unwrap();
    assert_eq!(r.code, 201, "{}", r.body);
    let warnings = warning_texts(&r);
    assert!(
        warnings.iter().any(
            |w| w.contains("after_create hook failed (the write stands)")
                && w.contains("\"projects\"")
                && w.contains("applying the default Quota")
        ),
        "the Warning names the hook's failure: {warnings:?}"
    );
    assert_eq!(r.json()["metadata"]["name"], "team-y");
    let (code, body) = get(&host.url(&format!("{PROJECTS}/team-y"))).unwrap();
    assert_eq!(code, 200, "the Project is stored: {body}");
    // The hook got as far as the namespace before the Quota failed.
    assert_eq!(get(&host.url("/api/v1/namespaces/team-y")).unwrap().0, 200);
}
