//! API Priority and Fairness end to end: on a secure server, one user flooding it with full
//! lists fills only their own queue (the overflow answered 429 with `Retry-After`), while
//! another user of the same priority level has every small write served, and an admin
//! (exempt) is not queued at all.

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
    // 12 seats in all: the global-default level, where both users land, gets 2 of them.
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
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"global-default\"} 2"
        ),
        "{metrics}"
    );
}
