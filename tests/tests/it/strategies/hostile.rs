//! Hostile modules contained: modules that loop, exhaust memory, trap or answer garbage fail
//! only their own request with a 500 naming them, modules refused at load leave the previous
//! version in force, non-wasm through the API is Rejected, and the server serves on throughout.

use serde_json::Value;
use strategy_host_e2e::{call, get, widget, widget_crd};

use super::{
    create, eventually, host_with_strategy_dir, install, strategy_module, CRDS, MODULES, WIDGETS,
};

#[test]
fn hostile_modules_are_contained() {
    let (host, dir) = host_with_strategy_dir(&[]);
    let strategies = dir.path().join("strategies");
    create(&host, CRDS, &widget_crd());
    eventually("widgets served", || {
        get(&host.url(WIDGETS)).unwrap().0 == 200
    });
    let source_state = || -> Option<(String, String)> {
        let (_, body) = get(&host.url("/debug/strategies")).unwrap();
        let doc: Value = serde_json::from_str(&body).unwrap();
        doc["sources"].as_array()?.iter().find_map(|s| {
            (s["source"] == "dir:widgets.wasm").then(|| {
                (
                    s["state"].as_str().unwrap_or("").to_owned(),
                    s["digest"].as_str().unwrap_or("").to_owned(),
                )
            })
        })
    };
    let healthy = || {
        assert_eq!(get(&host.url("/healthz")).unwrap().0, 200);
        assert_eq!(get(&host.url("/api/v1/namespaces")).unwrap().0, 200);
    };

    // Modules that load but misbehave per call: each request fails alone with a 500 Status.
    for (i, (name, reason)) in [
        ("infinite_loop", "deadline"),
        ("memory_bomb", "memory"),
        ("trap", "trap"),
        ("garbage_output", "decode"),
        ("oversized_output", "output"),
    ]
    .into_iter()
    .enumerate()
    {
        let bytes = strategy_artifacts::hostile_widget_strategy(name);
        let digest = strategy_host::wasm_runtime::digest(&bytes);
        install(&strategies, "widgets.wasm", &bytes);
        eventually(&format!("{name} active"), || {
            source_state() == Some(("Active".into(), digest.clone()))
        });
        let r = call(
            "POST",
            &host.url(WIDGETS),
            Some(&widget(&format!("w{i}"), 3)),
        )
        .unwrap();
        assert_eq!(r.code, 500, "{name}: {}", r.body);
        let status = r.json();
        assert_eq!(status["kind"], "Status", "{name}: {}", r.body);
        let message = status["message"].as_str().unwrap_or("").to_lowercase();
        assert!(
            message.contains("hostile"),
            "{name}: names the module: {message}"
        );
        assert!(
            message.contains(reason),
            "{name}: says why ({reason}): {message}"
        );
        healthy();
        // Nothing was stored for the failed request.
        let (code, _) = get(&host.url(&format!("{WIDGETS}/w{i}"))).unwrap();
        assert_eq!(code, 404, "{name}");
    }

    // Modules refused at load: the previous version (oversized_output) keeps its slot.
    let in_force = strategy_host::wasm_runtime::digest(
        &strategy_artifacts::hostile_widget_strategy("oversized_output"),
    );
    for name in [
        "missing_exports",
        "wrong_abi_version",
        "ungranted_import",
        "unknown_import",
    ] {
        let bytes = strategy_artifacts::hostile_widget_strategy(name);
        let digest = strategy_host::wasm_runtime::digest(&bytes);
        install(&strategies, "widgets.wasm", &bytes);
        eventually(&format!("{name} rejected"), || {
            source_state() == Some(("Rejected".into(), digest.clone()))
        });
        let (_, body) = get(&host.url("/debug/strategies")).unwrap();
        assert!(
            body.contains(&in_force),
            "{name}: the previous version stays in force: {body}"
        );
        healthy();
    }
    // Garbage that is not wasm at all, through the API: Rejected with a reason.
    create(
        &host,
        MODULES,
        &strategy_module("junk", "example.com", "Widget", b"not a wasm module"),
    );
    eventually("junk rejected", || {
        let (_, body) = get(&host.url(&format!("{MODULES}/junk"))).unwrap();
        serde_json::from_str::<Value>(&body).unwrap()["status"]["phase"] == "Rejected"
    });
    // The fallback still works once the hostile file is gone.
    std::fs::remove_file(strategies.join("widgets.wasm")).unwrap();
    eventually("widgets back on the default strategy", || {
        call("POST", &host.url(WIDGETS), Some(&widget("calm", 3)))
            .unwrap()
            .code
            == 201
    });
    healthy();
}
