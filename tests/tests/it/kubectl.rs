//! End-to-end with kubectl, unmodified, against the real binary on the embedded store:
//! api-resources, create -f, get (table and -o yaml), apply twice, patch (merge and json),
//! get -w, delete with its default --wait, explain; the example manifests from `examples/`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use strategy_host_e2e::{kubectl, kubectl_path, KubeFixture};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

type Kube = KubeFixture;

fn kube() -> Kube {
    KubeFixture::start(kubectl_path().unwrap())
}

#[test]
fn kubectl_drives_custom_resources_end_to_end() {
    let k = kube();
    let crd = examples().join("crds/widgets.yaml").display().to_string();
    let out = k.ok(&["apply", "-f", &crd]);
    assert!(out.contains("widgets.example.com created"), "{out}");
    k.ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ]);

    let out = k.ok(&["api-resources"]);
    let line = out
        .lines()
        .find(|l| l.starts_with("widgets"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("wd")
            && line.contains("example.com/v1")
            && line.contains("true")
            && line.contains("Widget"),
        "{line}"
    );
    assert!(out.contains("namespaces"), "{out}");

    let small = examples().join("widgets/small.yaml").display().to_string();
    let out = k.ok(&["create", "-f", &small]);
    assert!(out.contains("widget.example.com/small created"), "{out}");
    let (ok, _, err) = k.run(&["create", "-f", &small]);
    assert!(
        !ok && err.contains("AlreadyExists") || err.contains("already exists"),
        "{err}"
    );

    let out = k.ok(&["get", "widgets"]);
    let header = out.lines().next().unwrap_or_default();
    for col in ["NAME", "SIZE", "COLOR", "AGE"] {
        assert!(header.contains(col), "{out}");
    }
    assert!(
        out.lines()
            .any(|l| l.starts_with("small") && l.contains(" 2 ") && l.contains("red")),
        "{out}"
    );
    let yaml = k.ok(&["get", "wd", "small", "-o", "yaml"]);
    for needle in [
        "apiVersion: example.com/v1",
        "kind: Widget",
        "uid:",
        "resourceVersion:",
        "generation: 1",
        "creationTimestamp:",
    ] {
        assert!(yaml.contains(needle), "{needle} missing:\n{yaml}");
    }

    // apply twice: the second changes a field; last-applied-configuration follows.
    let large = std::fs::read_to_string(examples().join("widgets/large.yaml")).unwrap();
    assert!(k
        .ok_with(&["apply", "-f", "-"], Some(&large))
        .contains("created"));
    let changed = large.replace("size: 50", "size: 60");
    assert!(k
        .ok_with(&["apply", "-f", "-"], Some(&changed))
        .contains("configured"));
    let got = k.ok(&["get", "wd", "large", "-o", "jsonpath={.spec.size} {.metadata.generation} {.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}"]);
    assert!(got.starts_with("60 2 "), "{got}");
    assert!(got.contains("\"size\":60"), "{got}");

    // get -w sees ADDED, MODIFIED and DELETED.
    let mut watch = Command::new(kubectl_path().unwrap())
        .args(["--server", &k.host.base_url, "--cache-dir"])
        .arg(k.dir.path().join("cache"))
        .args([
            "get",
            "widgets",
            "-w",
            "--output-watch-events",
            "--request-timeout=0",
        ])
        .env("KUBECONFIG", k.dir.path().join("kubeconfig"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    k.ok(&[
        "patch",
        "wd",
        "small",
        "--type=merge",
        "-p",
        r#"{"spec":{"color":"green"}}"#,
    ]);
    k.ok(&[
        "patch",
        "wd",
        "small",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/size","value":7}]"#,
    ]);
    let got = k.ok(&[
        "get",
        "wd",
        "small",
        "-o",
        "jsonpath={.spec.color} {.spec.size}",
    ]);
    assert_eq!(got, "green 7");
    let (ok, _, err) = k.run(&[
        "patch",
        "wd",
        "small",
        "--type=strategic",
        "-p",
        r#"{"spec":{"size":8}}"#,
    ]);
    assert!(!ok && err.contains("not supported"), "{err}");

    // delete waits for the object to be gone.
    let out = k.ok(&["delete", "wd", "large"]);
    assert!(out.contains("deleted"), "{out}");
    let (ok, _, err) = k.run(&["get", "wd", "large"]);
    assert!(!ok && err.contains("NotFound"), "{err}");
    std::thread::sleep(Duration::from_secs(1));
    let _ = watch.kill();
    let out = watch.wait_with_output().unwrap();
    let events = String::from_utf8_lossy(&out.stdout);
    for kind in ["ADDED", "MODIFIED", "DELETED"] {
        assert!(
            events.contains(kind),
            "{kind} missing from the watch:\n{events}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // explain reads the CRD schema from /openapi/v3.
    let out = k.ok(&["explain", "widgets.spec.size"]);
    assert!(out.contains("How big the widget is"), "{out}");

    // Schema validation through kubectl: one cause per field.
    let bad = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: bad}\nspec: {size: 500, color: pink}\n";
    let (ok, _, err) = kubectl(
        &k.host.base_url,
        k.dir.path(),
        &["create", "-f", "-"],
        Some(bad),
    )
    .unwrap();
    assert!(
        !ok && err.contains("spec.size") && err.contains("spec.color"),
        "{err}"
    );
    // Strict validation (kubectl's default) refuses unknown fields.
    let unknown = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: unknown}\nspec: {size: 5, bogus: 1}\n";
    let (ok, _, err) = kubectl(
        &k.host.base_url,
        k.dir.path(),
        &["create", "-f", "-"],
        Some(unknown),
    )
    .unwrap();
    assert!(
        !ok && err.contains("unknown field") && err.contains("bogus"),
        "{err}"
    );

    // Deleting the definition stops serving it.
    k.ok(&["delete", "crd", "widgets.example.com"]);
    let (ok, _, err) = k.run(&["get", "widgets"]);
    assert!(!ok, "{err}");
}
