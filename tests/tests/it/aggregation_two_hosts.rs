//! Strategy Host as an extension API server under another, both ways at once, with kubectl
//! 1.35: host A aggregates `example.com/v1` Projects served by host B, whose wasm strategy
//! (`strategies/project`) stamps who created each project. B trusts A's front proxy
//! (`--requestheader-client-ca-file`) and delegates to A (`--authentication-kubeconfig`,
//! `--authorization-kubeconfig`, as the bootstrap ClusterRole `system:auth-delegator`): a
//! project created through A records the user A authenticated, and kubectl explains it from B's
//! OpenAPI; a token only A knows works on B
//! for a user A's RBAC allows and is refused for one it does not; identity headers count only
//! from A's front proxy; watches through A see B's events.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use strategy_host_e2e::secure::{serving_certificate, Credential, SecureFixture};
use strategy_host_e2e::{eventually, HostProcess};

const WAIT: Duration = Duration::from_secs(30);
const CREATED_BY: &str = "example.com/created-by";

/// kubectl 1.35 against host B as its admin, trusting `ca`.
fn kubectl_b(
    a: &SecureFixture,
    b: &HostProcess,
    b_data: &Path,
    ca: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> (bool, String, String) {
    use std::io::Write as _;
    let mut cmd = std::process::Command::new(&a.kubectl);
    cmd.env("KUBECONFIG", b_data.join("admin.kubeconfig"))
        .arg("--server")
        .arg(&b.base_url)
        .arg("--certificate-authority")
        .arg(ca)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn apply(a: &SecureFixture, manifests: &str) {
    let (ok, out, err) = a.kubectl_with(&Credential::Admin, &["apply", "-f", "-"], Some(manifests));
    assert!(ok, "kubectl apply failed:\n{out}\n{err}");
}

fn project(name: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Project\nmetadata: {{name: {name}}}\nspec: {{owner: team-{name}}}\n")
}

#[test]
fn a_strategy_host_serves_a_group_under_another_with_delegated_authentication_and_authorization() {
    let (a, _tokens) = SecureFixture::start_with_tokens(
        "bob-token,bob,1001,\"developers\"\ncarol-token,carol,1002,\"\"\n",
        &[],
    );
    let files = tempfile::tempdir().unwrap();
    let (ca, tls_crt, tls_key) =
        serving_certificate(files.path(), &["project-api.default.svc", "127.0.0.1"]);

    // B's identity at A, allowed to review tokens and access there.
    let Credential::Certificate(b_cert, b_key) =
        a.client_certificate("project-apiserver", "apiservers", true)
    else {
        unreachable!()
    };
    let kubeconfig = files.path().join("parent.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: a, cluster: {{server: \"{}\", certificate-authority: \"{}\"}}}}]\nusers: [{{name: b, user: {{client-certificate: \"{}\", client-key: \"{}\"}}}}]\ncontexts: [{{name: a, context: {{cluster: a, user: b}}}}]\ncurrent-context: a\n",
            a.host.base_url,
            a.ca_file().display(),
            b_cert.display(),
            b_key.display()
        ),
    )
    .unwrap();
    apply(
        &a,
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: project-apiserver:system:auth-delegator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects: [{kind: User, name: project-apiserver}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: project-editor}
rules: [{apiGroups: [example.com], resources: [projects], verbs: [get, list, watch, create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-edits-projects}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: project-editor}
subjects: [{kind: User, name: bob}]
"#,
    );

    // B: the Project strategy, A's front proxy trusted, A asked about tokens and access.
    let strategies = files.path().join("strategies");
    std::fs::create_dir(&strategies).unwrap();
    std::fs::copy(strategy_artifacts::PROJECT, strategies.join("project.wasm")).unwrap();
    let b_data = files.path().join("b-data");
    let path = |p: &Path| p.display().to_string();
    let b = HostProcess::start_secure(&[
        "--data-dir",
        &path(&b_data),
        "--strategy-dir",
        &path(&strategies),
        "--tls-cert-file",
        &path(&tls_crt),
        "--tls-private-key-file",
        &path(&tls_key),
        "--requestheader-client-ca-file",
        &path(&a.data().join("pki/front-proxy-ca.crt")),
        "--requestheader-allowed-names",
        "front-proxy-client",
        "--authentication-kubeconfig",
        &path(&kubeconfig),
        "--authorization-kubeconfig",
        &path(&kubeconfig),
    ])
    .expect("host B starts");
    let crds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/crds");
    for crd in ["projects.yaml", "quotas.yaml"] {
        let (ok, out, err) = kubectl_b(
            &a,
            &b,
            &b_data,
            &ca,
            &["apply", "-f", &path(&crds.join(crd))],
            None,
        );
        assert!(ok, "{out}\n{err}");
    }

    // A: the Service, its endpoint (B) and the APIService.
    let port = b
        .base_url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(std::fs::read(&ca).unwrap());
    apply(
        &a,
        &format!(
            r#"apiVersion: v1
kind: Service
metadata: {{name: project-api, namespace: default}}
spec: {{ports: [{{name: https, port: 443}}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: project-api-1, namespace: default, labels: {{kubernetes.io/service-name: project-api}}}}
addressType: IPv4
ports: [{{name: https, port: {port}}}]
endpoints: [{{addresses: ["127.0.0.1"]}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: v1.example.com}}
spec: {{group: example.com, version: v1, service: {{namespace: default, name: project-api}}, caBundle: {ca_bundle}, groupPriorityMinimum: 1000, versionPriority: 100}}
"#
        ),
    );
    eventually("v1.example.com available on A", WAIT, || {
        a.kubectl(&Credential::Admin, &["get", "apiservice", "v1.example.com"])
            .1
            .contains("True")
    });

    // Bob creates a project through A: B's module records bob, as A authenticated him.
    let bob = Credential::token("bob-token");
    eventually("projects in A's discovery", WAIT, || {
        a.kubectl(&bob, &["get", "projects"]).0
    });
    let (ok, out, err) = a.kubectl_with(&bob, &["create", "-f", "-"], Some(&project("alpha")));
    assert!(ok, "{out}\n{err}");
    let alpha: Value =
        serde_json::from_str(&a.ok(&bob, &["get", "project", "alpha", "-o", "json"])).unwrap();
    assert_eq!(
        alpha["metadata"]["annotations"][CREATED_BY], "bob",
        "{alpha}"
    );
    let (_, on_b, _) = kubectl_b(
        &a,
        &b,
        &b_data,
        &ca,
        &["get", "project", "alpha", "-o", "json"],
        None,
    );
    assert!(
        on_b.contains("\"example.com/created-by\": \"bob\""),
        "{on_b}"
    );

    // kubectl explains the kind from B's OpenAPI, proxied by A.
    let explained = a.ok(&bob, &["explain", "projects"]);
    assert!(
        explained.contains("KIND:")
            && explained.contains("Project")
            && explained.contains("example.com"),
        "{explained}"
    );

    // Carol may not, on A (RBAC first) nor on B with her token, which only A knows: B asks A
    // who she is and whether she may.
    let carol = Credential::token("carol-token");
    let refused = a.fails(&carol, &["get", "projects"]);
    assert!(
        refused.contains("User \"carol\" cannot list resource \"projects\""),
        "{refused}"
    );
    let direct = |token: &str| {
        kubectl_b(
            &a,
            &b,
            &b_data,
            &ca,
            &[
                "--kubeconfig",
                "/dev/null",
                "--token",
                token,
                "get",
                "projects",
            ],
            None,
        )
    };
    let (ok, _, err) = direct("carol-token");
    assert!(
        !ok && err.contains(
            "User \"carol\" cannot list resource \"projects\" in API group \"example.com\""
        ),
        "{err}"
    );
    let (ok, out, err) = direct("bob-token");
    assert!(ok && out.contains("alpha"), "{out}\n{err}");
    let (ok, _, err) = direct("nobody-token");
    assert!(!ok && err.contains("Unauthorized"), "{err}");

    // Identity headers count only from A's front proxy: carol sending them herself is carol.
    let agent = strategy_host_e2e::secure::https_agent(&ca, None).unwrap();
    let forged = agent
        .get(&format!("{}/apis/example.com/v1/projects", b.base_url))
        .set("Authorization", "Bearer carol-token")
        .set("X-Remote-User", "admin")
        .set("X-Remote-Group", "system:masters")
        .call();
    match forged {
        Err(ureq::Error::Status(code, r)) => {
            let body = r.into_string().unwrap();
            assert_eq!(code, 403, "{body}");
            let status: Value = serde_json::from_str(&body).unwrap();
            let message = status["message"].as_str().unwrap_or_default();
            assert!(message.contains("User \"carol\" cannot list"), "{body}");
        }
        other => panic!("carol's forged headers were honoured: {other:?}"),
    }

    // A watch through A sees what B serves.
    let watch = {
        let kubectl = a.kubectl.clone();
        let cache = a.dir.path().join("watch-cache");
        let server = a.host.base_url.clone();
        let ca_file = a.ca_file();
        std::thread::spawn(move || {
            std::process::Command::new(kubectl)
                .args(["--kubeconfig", "/dev/null", "--cache-dir"])
                .arg(cache)
                .args(["--server", &server, "--certificate-authority"])
                .arg(ca_file)
                .args([
                    "--token",
                    "bob-token",
                    "get",
                    "projects",
                    "--watch",
                    "--output-watch-events",
                    "-o",
                    "json",
                    "--request-timeout=6s",
                ])
                .output()
                .unwrap()
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    let (ok, out, err) = a.kubectl_with(&bob, &["create", "-f", "-"], Some(&project("beta")));
    assert!(ok, "{out}\n{err}");
    let seen = String::from_utf8_lossy(&watch.join().unwrap().stdout).into_owned();
    assert!(
        seen.contains("\"ADDED\"") && seen.contains("\"name\":\"beta\""),
        "{seen}"
    );
}
