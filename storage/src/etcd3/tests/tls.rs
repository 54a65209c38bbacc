//! etcd over TLS with client certificates (made with `openssl`; skipped without it).

use super::{config, widget};
use crate::etcd3::testing::EtcdServer;
use crate::etcd3::Etcd3Store;
use crate::Storage;

/// Writes a CA, a serving certificate for 127.0.0.1 and a client certificate with `openssl`;
/// `None` when `openssl` is not installed.
fn make_certificates(dir: &std::path::Path) -> Option<()> {
    let run = |args: &[&str]| {
        let status = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        status.map(|s| s.success())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca = [
        &["req", "-x509"][..],
        &ec,
        &["-keyout", "ca.key", "-out", "ca.pem"],
    ]
    .concat();
    if !run(&[&ca[..], &["-days", "1", "-subj", "/CN=test-ca"]].concat()).ok()? {
        panic!("openssl could not make a CA");
    }
    for (name, usage) in [("server", "serverAuth"), ("client", "clientAuth")] {
        let ext = format!("{name}.ext");
        std::fs::write(
            dir.join(&ext),
            format!("subjectAltName=IP:127.0.0.1\nextendedKeyUsage={usage}\n"),
        )
        .unwrap();
        let (key, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        let req = [&["req"][..], &ec, &["-keyout", &key, "-out", &csr, "-subj"]].concat();
        assert!(run(&[&req[..], &[&format!("/CN={name}")]].concat()).unwrap());
        let sign = [
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "1",
            "-extfile",
            &ext,
        ];
        assert!(run(&sign).unwrap(), "openssl could not sign {name}");
    }
    Some(())
}

#[tokio::test]
async fn tls_with_client_certificates() {
    let dir = tempfile::tempdir().unwrap();
    if make_certificates(dir.path()).is_none() {
        eprintln!("openssl not installed: skipping the TLS test");
        return;
    }
    let path = |name: &str| dir.path().join(name);
    let etcd = EtcdServer::start_tls(crate::etcd3::testing::ServerTls {
        cert_file: path("server.pem"),
        key_file: path("server.key"),
        ca_file: path("ca.pem"),
    })
    .expect("start etcd with TLS");
    assert!(etcd.endpoint().starts_with("https://"));
    let mut config = config(&etcd);
    config.tls = Some(crate::etcd3::TlsFiles {
        ca_file: Some(path("ca.pem")),
        cert_file: Some(path("client.pem")),
        key_file: Some(path("client.key")),
    });
    let store = Etcd3Store::connect(config.clone())
        .await
        .expect("connect over TLS");
    store.create("/w/ns/a", widget("a", "x")).await.unwrap();
    assert_eq!(store.count("/w").await.unwrap(), 1);
    // Without a client certificate etcd refuses the connection: an error, not a panic.
    config.tls = Some(crate::etcd3::TlsFiles {
        ca_file: Some(path("ca.pem")),
        ..Default::default()
    });
    let err = Etcd3Store::connect(config).await.unwrap_err();
    assert!(err.is_unavailable(), "{err}");
}
