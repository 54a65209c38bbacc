//! End-to-end: `/metrics` of the real binary carries what operators of kube-apiserver scrape,
//! under its names, in the OpenMetrics text format.

use strategy_host_e2e::{call, get, widget, widget_crd, HostProcess};

/// The value of the first sample whose line starts with `prefix`.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn metrics_count_requests_storage_caches_and_modules() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let host = HostProcess::start(&["--data-dir", data.as_str()]).unwrap();
    let crds = host.url("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    assert_eq!(call("POST", &crds, Some(&widget_crd())).unwrap().code, 201);
    let widgets = host.url("/apis/example.com/v1/namespaces/default/widgets");
    for i in 0..3 {
        let r = call("POST", &widgets, Some(&widget(&format!("w{i}"), 1))).unwrap();
        assert_eq!(r.code, 201, "{}", r.body);
    }
    assert_eq!(call("GET", &widgets, None).unwrap().code, 200);
    assert_eq!(
        call("GET", &format!("{widgets}/nope"), None).unwrap().code,
        404
    );

    let (code, text) = get(&host.url("/metrics")).unwrap();
    assert_eq!(code, 200);
    let created = r#"apiserver_request_total{verb="POST",group="example.com",version="v1",resource="widgets",subresource="",code="201"}"#;
    assert_eq!(sample(&text, created), Some(3.0), "{text}");
    let listed = r#"apiserver_request_total{verb="LIST",group="example.com",version="v1",resource="widgets",subresource="",code="200"}"#;
    assert_eq!(sample(&text, listed), Some(1.0), "{text}");
    let missing = r#"apiserver_request_total{verb="GET",group="example.com",version="v1",resource="widgets",subresource="",code="404"}"#;
    assert_eq!(sample(&text, missing), Some(1.0), "{text}");
    let latency = r#"apiserver_request_duration_seconds_count{verb="POST",group="example.com",version="v1",resource="widgets",subresource=""}"#;
    assert_eq!(sample(&text, latency), Some(3.0), "{text}");
    assert!(
        text.contains("# TYPE apiserver_current_inflight_requests gauge"),
        "{text}"
    );
    let stored =
        r#"etcd_request_duration_seconds_count{operation="create",type="widgets.example.com"}"#;
    assert_eq!(sample(&text, stored), Some(3.0), "{text}");
    // The watch cache holds the three widgets (the reflector applies writes asynchronously).
    let objects = r#"apiserver_storage_objects{resource="widgets.example.com"}"#;
    let mut seen = sample(&text, objects);
    for _ in 0..50 {
        if seen == Some(3.0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        seen = sample(&get(&host.url("/metrics")).unwrap().1, objects);
    }
    assert_eq!(seen, Some(3.0), "{text}");
    assert!(
        text.contains(r#"apiserver_registered_watchers{resource="widgets.example.com"}"#),
        "{text}"
    );
    // The module table's states are there with or without a module loaded.
    assert!(
        text.contains("# TYPE strategy_module_state gauge"),
        "{text}"
    );
    // The allocator's figures: what objects take, within what it keeps resident.
    let allocated = sample(&text, "strategy_host_allocator_allocated_bytes ").unwrap_or(0.0);
    let resident = sample(&text, "strategy_host_allocator_resident_bytes ").unwrap_or(0.0);
    assert!(allocated > 1e6 && resident >= allocated, "{text}");
    assert!(text.trim_end().ends_with("# EOF"), "OpenMetrics: {text}");
}
