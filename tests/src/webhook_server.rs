//! The test webhook server (`tests/python/webhook.py`: admission and conversion webhooks on the
//! Python standard library, over HTTPS with a certificate from a CA made here).

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// A CA and a serving certificate for 127.0.0.1, written into `dir` (`webhook.crt`,
/// `webhook.key`, `webhook-ca.crt`); answers the CA's PEM.
///
/// # Panics
/// When the certificates cannot be made or written.
pub fn certificates(dir: &Path) -> String {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "webhook test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("webhook.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("webhook.key"), key.serialize_pem()).unwrap();
    std::fs::write(dir.join("webhook-ca.crt"), ca_cert.pem()).unwrap();
    ca_cert.pem()
}

/// The webhook server, killed when dropped.
pub struct WebhookServer {
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// Trusts the webhook's CA (`certificates` wrote it), for `/stats`.
    agent: ureq::Agent,
}

impl WebhookServer {
    /// Starts the server with the certificates [`certificates`] wrote into `dir`.
    ///
    /// # Panics
    /// When it does not start.
    pub fn start(dir: &Path) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/webhook.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(dir.join("webhook.crt"))
            .arg(dir.join("webhook.key"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("ready ").unwrap().parse().unwrap();
        let agent = crate::secure::https_agent(&dir.join("webhook-ca.crt"), None).unwrap();
        Self { child, port, agent }
    }

    /// The URL of `path` on the server.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// `GET /stats`: the connections and requests it has served.
    ///
    /// # Panics
    /// When the server does not answer.
    pub fn stats(&self) -> Value {
        let reply = self.agent.get(&self.url("/stats")).call().unwrap();
        reply.into_json().unwrap()
    }

    /// Kills the server (a webhook gone down).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.kill();
    }
}
