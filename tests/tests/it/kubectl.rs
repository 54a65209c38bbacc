//! End-to-end with kubectl, unmodified, against the real binary on the embedded store:
//! api-resources, create -f, get (table and -o yaml), apply twice, patch (merge and json),
//! get -w, delete with its default --wait, explain; the example manifests from `examples/`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use strategy_host_e2e::{kubectl, kubectl_path, KubeFixture};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

type Kube = KubeFixture;

/// The lines a process prints, read as they come.
struct WatchedLines {
    lines: mpsc::Receiver<String>,
    seen: std::cell::RefCell<Vec<String>>,
}

impl WatchedLines {
    fn read(out: impl std::io::Read + Send + 'static) -> Self {
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            lines,
            seen: Default::default(),
        }
    }

    /// Waits up to 20 s until a line printed so far or from now on matches.
    fn wait_for(&self, what: &str, matches: impl Fn(&str) -> bool) {
        if self.seen.borrow().iter().any(|l| matches(l)) {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = matches(&line);
                    self.seen.borrow_mut().push(line);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!("no {what}; the watch printed: {:#?}", self.seen.borrow()),
            }
        }
    }
}

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
    let watched = WatchedLines::read(watch.stdout.take().unwrap());
    // The watch lists what is there first: once "small" is printed, it is watching.
    watched.wait_for("the watch's initial ADDED event", |l| {
        l.starts_with("ADDED") && l.contains("small")
    });
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
    watched.wait_for("the watch's MODIFIED event", |l| l.starts_with("MODIFIED"));
    watched.wait_for("the watch's DELETED event for large", |l| {
        l.starts_with("DELETED") && l.contains("large")
    });
    let _ = watch.kill();
    let _ = watch.wait();

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
