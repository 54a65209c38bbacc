//! API Priority and Fairness end to end: on a secure server, one user flooding it with full
//! lists fills only their own queue (the overflow answered 429 with `Retry-After`), while
//! another user of the same priority level has every small write served, and an admin
//! (exempt) is not queued at all; Kubernetes' bootstrap FlowSchemas and
//! PriorityLevelConfigurations are served and classify requests, and an operator's own take a
//! user's requests to a level of theirs (named in each response), until they are deleted.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use strategy_host_e2e::secure::{https_agent, Credential, SecureFixture};
use strategy_host_e2e::Reply;

const TOKENS: &str = "noisy-token,noisy,uid-noisy,tenants\nlight-token,light,uid-light,tenants\n";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn a_user_flooding_with_lists_fills_only_their_own_queue() {
    // 12 seats in all: the global-default level, where both users land, gets 1 of them.
    let (f, _files) = SecureFixture::start_with_tokens(
        TOKENS,
        &[
            "--max-requests-inflight",
            "8",
            "--max-mutating-requests-inflight",
            "4",
        ],
    );
    let admin = Credential::Admin;
    f.ok(
        &admin,
        &[
            "create",
            "clusterrolebinding",
            "tenants-edit",
            "--clusterrole=edit",
            "--group=tenants",
        ],
    );
    let payload = "x".repeat(4_000);
    for i in 0..150 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("seed-{i}")}, "data": {"payload": payload}});
        let reply = f.call(&admin, "POST", CONFIGMAPS, Some(&cm)).unwrap();
        assert_eq!(reply.code, 201, "{}", reply.body);
    }
    f.eventually("the light user may create configmaps", || {
        let probe = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "probe"}});
        let reply = f.call(
            &Credential::token("light-token"),
            "POST",
            CONFIGMAPS,
            Some(&probe),
        );
        reply.is_ok_and(|r| r.code == 201)
    });

    // The noisy user: more concurrent full lists than their queue holds.
    let stop = Arc::new(AtomicBool::new(false));
    let (served, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let list = f.host.url(CONFIGMAPS);
    let flood: Vec<_> = (0..64)
        .map(|_| {
            let agent = https_agent(&f.ca_file(), None).unwrap();
            let (list, stop) = (list.clone(), stop.clone());
            let (served, refused) = (served.clone(), refused.clone());
            std::thread::spawn(move || {
                let mut refusal = None;
                while !stop.load(Ordering::Relaxed) {
                    let reply = match agent
                        .get(&list)
                        .set("Authorization", "Bearer noisy-token")
                        .call()
                    {
                        Ok(r) | Err(ureq::Error::Status(_, r)) => Reply::read(r).unwrap(),
                        Err(e) => panic!("a noisy list failed: {e}"),
                    };
                    match reply.code {
                        200 => served.fetch_add(1, Ordering::Relaxed),
                        429 => {
                            refusal.get_or_insert(reply);
                            std::thread::sleep(Duration::from_millis(50));
                            refused.fetch_add(1, Ordering::Relaxed)
                        }
                        _ => panic!("a noisy list answered {}: {}", reply.code, reply.body),
                    };
                }
                refusal
            })
        })
        .collect();
    let flooding = Instant::now();
    while refused.load(Ordering::Relaxed) == 0 && flooding.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }

    // The light user, in the same priority level, meanwhile: every create served.
    for i in 0..20 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("light-{i}")}, "data": {"n": i.to_string()}});
        let reply = f
            .call(
                &Credential::token("light-token"),
                "POST",
                CONFIGMAPS,
                Some(&cm),
            )
            .unwrap();
        assert_eq!(
            reply.code, 201,
            "the light user's create {i}: {}",
            reply.body
        );
    }
    // The admin is exempt: not queued behind anyone.
    let reply = f.call(&admin, "GET", "/api/v1/namespaces", None).unwrap();
    assert_eq!(reply.code, 200, "{}", reply.body);
    let metrics = f.call(&admin, "GET", "/metrics", None).unwrap().body;

    stop.store(true, Ordering::Relaxed);
    let refusals: Vec<_> = flood
        .into_iter()
        .filter_map(|t| t.join().unwrap())
        .collect();
    assert!(
        served.load(Ordering::Relaxed) > 0,
        "the noisy user was not served at all"
    );
    let refusal = refusals.first().expect("the flood was never refused");
    let status = refusal.json();
    assert_eq!(status["kind"], "Status", "{}", refusal.body);
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["code"], 429);
    assert_eq!(
        status["message"],
        "Too many requests, please try again later."
    );
    assert_eq!(refusal.retry_after.as_deref(), Some("1"));

    let rejected = metrics
        .lines()
        .find(|l| {
            l.starts_with("apiserver_flowcontrol_rejected_requests_total{")
                && l.contains("priority_level=\"global-default\"")
                && l.contains("reason=\"queue-full\"")
        })
        .unwrap_or_else(|| panic!("no queue-full rejections in the metrics:\n{metrics}"));
    let count: f64 = rejected.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(count >= 1.0, "{rejected}");
    assert!(
        metrics.contains(
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"global-default\"} 1"
        ),
        "{metrics}"
    );
}

const APF: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

/// The uid of the flowcontrol object `plural`/`name`.
fn uid(f: &SecureFixture, plural: &str, name: &str) -> String {
    let reply = f
        .call(
            &Credential::Admin,
            "GET",
            &format!("{APF}/{plural}/{name}"),
            None,
        )
        .unwrap();
    assert_eq!(reply.code, 200, "{}", reply.body);
    reply.json()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The (flow schema, priority level) uids a response names.
fn served_by(reply: &Reply) -> (String, String) {
    let header = |name: &str| reply.headers.get(name).cloned().unwrap_or_default();
    (
        header("x-kubernetes-pf-flowschema-uid"),
        header("x-kubernetes-pf-prioritylevel-uid"),
    )
}

#[test]
fn an_operators_flow_schema_and_level_take_a_users_requests_until_deleted() {
    let (f, _files) = SecureFixture::start_with_tokens(
        "bob-token,bob,uid-bob,tenants\n",
        &[
            "--max-requests-inflight",
            "8",
            "--max-mutating-requests-inflight",
            "4",
        ],
    );
    let admin = Credential::Admin;
    let bob = Credential::token("bob-token");
    f.ok(
        &admin,
        &[
            "create",
            "clusterrolebinding",
            "tenants-view",
            "--clusterrole=view",
            "--group=tenants",
        ],
    );
    // Kubernetes' bootstrap objects are served, mandatory and suggested.
    let listed = f
        .call(&admin, "GET", &format!("{APF}/flowschemas"), None)
        .unwrap()
        .json();
    let names: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    for name in [
        "exempt",
        "catch-all",
        "probes",
        "system-leader-election",
        "kube-system-service-accounts",
        "service-accounts",
        "global-default",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let list = |who: &Credential| f.call(who, "GET", CONFIGMAPS, None).unwrap();
    let default = (
        uid(&f, "flowschemas", "global-default"),
        uid(&f, "prioritylevelconfigurations", "global-default"),
    );
    f.eventually("bob to be served by global-default", || {
        let reply = list(&bob);
        reply.code == 200 && served_by(&reply) == default
    });
    let exempt = (
        uid(&f, "flowschemas", "exempt"),
        uid(&f, "prioritylevelconfigurations", "exempt"),
    );
    assert_eq!(served_by(&list(&admin)), exempt, "system:masters is exempt");

    // The operator's level rejects what its one seat cannot start at once.
    let level = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "tight"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}});
    let schema = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "bob"}, "spec": {"priorityLevelConfiguration": {"name": "tight"},
            "matchingPrecedence": 500, "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "bob"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}]}]}});
    for (plural, obj) in [
        ("prioritylevelconfigurations", &level),
        ("flowschemas", &schema),
    ] {
        let reply = f
            .call(&admin, "POST", &format!("{APF}/{plural}"), Some(obj))
            .unwrap();
        assert_eq!(reply.code, 201, "{}", reply.body);
    }
    f.eventually("the schema to report its level found", || {
        let fs = f
            .call(&admin, "GET", &format!("{APF}/flowschemas/bob"), None)
            .unwrap()
            .json();
        fs["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| {
                c["type"] == "Dangling" && c["status"] == "False" && c["reason"] == "Found"
            })
        })
    });
    // kubectl shows Kubernetes' columns: the level, precedence, distinguisher, missing level.
    let shown = f.ok(&admin, &["get", "flowschemas", "bob", "--no-headers"]);
    let columns: Vec<&str> = shown.split_whitespace().collect();
    assert_eq!(
        [columns[0], columns[1], columns[2], columns[3], columns[5]],
        ["bob", "tight", "500", "ByUser", "False"],
        "{shown}"
    );
    let shown = f.ok(
        &admin,
        &[
            "get",
            "prioritylevelconfigurations",
            "tight",
            "--no-headers",
        ],
    );
    assert!(
        shown.starts_with("tight") && shown.contains("Limited"),
        "{shown}"
    );
    let tight = (
        uid(&f, "flowschemas", "bob"),
        uid(&f, "prioritylevelconfigurations", "tight"),
    );
    f.eventually(
        "bob to be served by the operator's schema and level",
        || served_by(&list(&bob)) == tight,
    );
    // Full lists of a few hundred kilobytes, eight at once, on one seat.
    let payload = "x".repeat(4_000);
    for i in 0..150 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("seed-{i}")}, "data": {"payload": payload}});
        assert_eq!(
            f.call(&admin, "POST", CONFIGMAPS, Some(&cm)).unwrap().code,
            201
        );
    }
    let refused = Arc::new(AtomicUsize::new(0));
    let url = f.host.url(CONFIGMAPS);
    let lists: Vec<_> = (0..8)
        .map(|_| {
            let agent = https_agent(&f.ca_file(), None).unwrap();
            let (url, refused) = (url.clone(), refused.clone());
            std::thread::spawn(move || {
                for _ in 0..20 {
                    let code = match agent
                        .get(&url)
                        .set("Authorization", "Bearer bob-token")
                        .call()
                    {
                        Ok(r) | Err(ureq::Error::Status(_, r)) => r.status(),
                        Err(e) => panic!("a list failed: {e}"),
                    };
                    assert!(code == 200 || code == 429, "{code}");
                    if code == 429 {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for t in lists {
        t.join().unwrap();
    }
    assert!(
        refused.load(Ordering::Relaxed) > 0,
        "the rejecting level never refused"
    );
    let metrics = f.call(&admin, "GET", "/metrics", None).unwrap().body;
    assert!(
        metrics.lines().any(|l| l.starts_with(r#"apiserver_flowcontrol_rejected_requests_total{flow_schema="bob",priority_level="tight",reason="concurrency-limit"}"#)),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"apiserver_flowcontrol_nominal_limit_seats{priority_level="tight"} 1"#),
        "{metrics}"
    );

    // Deleted, bob is back where Kubernetes' own schemas put him.
    let reply = f
        .call(&admin, "DELETE", &format!("{APF}/flowschemas/bob"), None)
        .unwrap();
    assert_eq!(reply.code, 200, "{}", reply.body);
    f.eventually("bob to be served by global-default again", || {
        served_by(&list(&bob)) == default
    });
}
