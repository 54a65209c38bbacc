//! Health and version endpoints: `/healthz`, `/livez`, `/readyz` and `/version`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::status::Status;
use strategy_host_storage::Storage;

/// How long `/readyz` waits for the store before reporting it unready.
const READY_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What a handler answers: a status code and a body (JSON or plain text).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// `200 OK` with a plain-text body, as Kubernetes' health checks answer.
    Text(u16, String),
    /// A JSON body with a status code.
    Json(u16, Value),
}

impl From<Status> for Reply {
    fn from(s: Status) -> Self {
        Reply::Json(s.code, s.to_json())
    }
}

/// `/healthz` and `/livez`: the process answers.
pub(crate) fn live() -> Reply {
    Reply::Text(200, "ok".into())
}

/// `/readyz`: the store answers within the probe timeout, the served definitions are synced
/// (`definitions_synced`), the KMS plugins of encryption at rest are healthy (`kms_failure`
/// says why one is not), and the strategy directory's first load is done (`modules_loading`
/// says what it is still compiling).
pub(crate) async fn ready(
    storage: &Arc<dyn Storage>,
    definitions_synced: bool,
    kms_failure: Option<String>,
    modules_loading: Option<String>,
) -> Reply {
    if let Some(loading) = modules_loading {
        return Reply::Text(
            503,
            format!("[-]strategy-modules failed: {loading}\nreadyz check failed"),
        );
    }
    let probe = tokio::time::timeout(READY_PROBE_TIMEOUT, storage.current_revision());
    match probe.await {
        Ok(Ok(_)) if !definitions_synced => Reply::Text(
            503,
            "[-]resource definitions not synced\nreadyz check failed".into(),
        ),
        Ok(Ok(_)) => match kms_failure {
            None => Reply::Text(200, "ok".into()),
            Some(why) => Reply::Text(
                503,
                format!("[-]kms-providers failed: {why}\nreadyz check failed"),
            ),
        },
        Ok(Err(e)) => Reply::Text(503, format!("[-]storage failed: {e}\nreadyz check failed")),
        Err(_) => Reply::Text(
            503,
            "[-]storage failed: no answer within 2s\nreadyz check failed".into(),
        ),
    }
}

/// The Kubernetes API version this server serves: what `/version` reports, so kubectl 1.35-1.37
/// see no version skew and programs of 1.36 expect 1.36's APIs (v1 MutatingAdmissionPolicies
/// among them). The kinds it does not serve yet are listed in docs/api.md.
pub(crate) const KUBERNETES_VERSION: (u32, u32, u32) = (1, 36, 0);

/// The `/version` document, in the shape `kubectl version` reads: the Kubernetes version served,
/// with this server's own in `gitVersion`'s build metadata (as k3s writes `v1.35.1+k3s1`) and
/// in `strategyHost`.
pub(crate) fn version() -> Value {
    let v = env!("CARGO_PKG_VERSION");
    let (major, minor, patch) = KUBERNETES_VERSION;
    json!({
        "major": major.to_string(),
        "minor": minor.to_string(),
        "gitVersion": format!("v{major}.{minor}.{patch}+strategyhost.{v}"),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        "strategyHost": {"version": v},
    })
}
