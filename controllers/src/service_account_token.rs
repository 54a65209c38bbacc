//! The ServiceAccount token controller: a Secret of type `kubernetes.io/service-account-token`
//! naming an account (annotation `kubernetes.io/service-account.name`) gets its `token`,
//! `ca.crt` and `namespace` filled and the account's uid annotated; it is deleted when its
//! account does not exist (or is another incarnation), and with its account.

use std::sync::Arc;

use base64::Engine as _;
use futures::StreamExt as _;
use serde_json::Value;
use tokio::task::JoinSet;

use super::queue::WorkQueue;
use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::follow::Event;
use strategy_host_registry::system_fields::{annotation, is_being_deleted};
use strategy_host_registry::Preconditions;
use strategy_host_registry::{Registry, Result};

/// The Secret type this controller fills.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming the account.
pub const ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";
/// The annotation holding the account's uid.
pub const ACCOUNT_UID: &str = "kubernetes.io/service-account.uid";

/// Signs the tokens Secrets hold (the server's ServiceAccount token issuer).
pub trait TokenSigner: Send + Sync {
    /// A token for the account `(name, uid)` in `namespace`, bound to the Secret
    /// `(name, uid)`.
    ///
    /// # Errors
    /// Signing fails.
    fn secret_token(
        &self,
        namespace: &str,
        account: (&str, &str),
        secret: (&str, &str),
    ) -> std::result::Result<String, Box<dyn std::error::Error + Send + Sync>>;

    /// The CA bundle clients in the cluster trust the server with (PEM), if any.
    fn ca_bundle(&self) -> Option<String>;
}

/// What the controller looks at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Work {
    /// A token Secret (namespace, name).
    Secret(String, String),
    /// An account that was deleted (namespace, name): its Secrets go.
    AccountGone(String, String),
}

/// Runs the controller over `registry` until the returned set is dropped.
pub fn start(registry: &Arc<Registry>, signer: Arc<dyn TokenSigner>) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let (Some(secrets), Some(accounts)) = (
        registry.resolve("", "v1", "secrets"),
        registry.resolve("", "v1", "serviceaccounts"),
    ) else {
        return tasks;
    };
    let queue: Arc<WorkQueue<Work>> = WorkQueue::new();
    for (served, watching_secrets) in [(secrets, true), (accounts, false)] {
        let mut events = Box::pin(served.follow("v1"));
        let queue = queue.clone();
        tasks.spawn(async move {
            while let Some(event) = events.next().await {
                let work = match (&event, watching_secrets) {
                    (Event::InitApply(o) | Event::Apply(o), true) => {
                        needs_work(&o.to_value()).then(|| key(&o.to_value(), Work::Secret))
                    }
                    (Event::Delete(o), false) => Some(key(&o.to_value(), Work::AccountGone)),
                    _ => None,
                };
                if let Some(work) = work {
                    queue.add(work);
                }
            }
        });
    }
    const MANAGER: &str = "serviceaccount-token-controller";
    let client = Client::new(registry, MANAGER);
    tasks.spawn(queue.work(MANAGER, move |work| {
        let (client, signer) = (client.clone(), signer.clone());
        async move {
            match &work {
                Work::Secret(ns, name) => fill(&client, signer.as_ref(), ns, name).await,
                Work::AccountGone(ns, name) => {
                    delete_secrets_of(&client, signer.as_ref(), ns, name).await
                }
            }
            .map(|()| true)
        }
    }));
    tasks
}

fn key(obj: &Value, make: fn(String, String) -> Work) -> Work {
    let text = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    make(text("/metadata/namespace"), text("/metadata/name"))
}

/// A token Secret whose token is missing (or whose account check is due).
fn needs_work(secret: &Value) -> bool {
    secret["type"] == TOKEN_SECRET_TYPE
        && !is_being_deleted(secret)
        && (secret.pointer("/data/token").is_none() || annotation(secret, ACCOUNT_UID).is_none())
}

fn secret_ref(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef {
        group: String::new(),
        version: "v1".into(),
        plural: "secrets".into(),
        namespace: Some(namespace.into()),
        name: name.into(),
    }
}

/// Fills the Secret `namespace/name`, or deletes it when its account is missing.
async fn fill(
    client: &Client,
    signer: &dyn TokenSigner,
    namespace: &str,
    name: &str,
) -> Result<()> {
    let secret_object = secret_ref(namespace, name);
    let Some(secret) = client.get(&secret_object).await? else {
        return Ok(());
    };
    if secret["type"] != TOKEN_SECRET_TYPE || is_being_deleted(&secret) {
        return Ok(());
    }
    let secret_uid = secret["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let account_name = annotation(&secret, ACCOUNT_NAME)
        .unwrap_or_default()
        .to_string();
    let account_object = ObjectRef {
        plural: "serviceaccounts".into(),
        name: account_name.clone(),
        ..secret_object.clone()
    };
    let account = match account_name.is_empty() {
        true => None,
        false => client.get(&account_object).await?,
    };
    let account_uid = account
        .as_ref()
        .and_then(|a| a["metadata"]["uid"].as_str())
        .map(String::from);
    let wanted_uid = annotation(&secret, ACCOUNT_UID);
    let Some(account_uid) = account_uid.filter(|u| wanted_uid.is_none_or(|w| w == u)) else {
        tracing::info!(%namespace, secret = %name, account = %account_name, "deleting a token secret whose service account does not exist");
        return client
            .delete(
                &secret_object,
                Preconditions::uid(secret_uid),
                Some("Background"),
            )
            .await;
    };
    if !needs_work(&secret) {
        return Ok(());
    }
    let token = signer
        .secret_token(
            namespace,
            (&account_name, &account_uid),
            (name, &secret_uid),
        )
        .map_err(|e| strategy_host_registry::Error::Internal(e.to_string()))?;
    let b64 = |s: &str| Value::String(base64::engine::general_purpose::STANDARD.encode(s));
    let ca = signer.ca_bundle().unwrap_or_default();
    let ns = namespace.to_string();
    client
        .update(&secret_object, &secret_uid, None, move |secret| {
            if !secret.get("data").is_some_and(Value::is_object) {
                secret["data"] = serde_json::json!({});
            }
            secret["data"]["token"] = b64(&token);
            secret["data"]["ca.crt"] = b64(&ca);
            secret["data"]["namespace"] = b64(&ns);
            if !secret["metadata"]
                .get("annotations")
                .is_some_and(Value::is_object)
            {
                secret["metadata"]["annotations"] = serde_json::json!({});
            }
            secret["metadata"]["annotations"][ACCOUNT_UID] = Value::String(account_uid.clone());
            true
        })
        .await
}

/// Judges the token Secrets of the account `namespace/name`, which was deleted: those of the
/// gone account go.
async fn delete_secrets_of(
    client: &Client,
    signer: &dyn TokenSigner,
    namespace: &str,
    account: &str,
) -> Result<()> {
    for secret in client.list("", "v1", "secrets", Some(namespace)).await? {
        if secret["type"] != TOKEN_SECRET_TYPE || annotation(&secret, ACCOUNT_NAME) != Some(account)
        {
            continue;
        }
        // The account may be back under another uid: judged like any token Secret.
        let name = secret["metadata"]["name"].as_str().unwrap_or_default();
        fill(client, signer, namespace, name).await?;
    }
    Ok(())
}
