//! Admission webhooks (`admissionregistration.k8s.io/v1`): the configurations followed through
//! the informer, and the two registry plugins that call them — mutating webhooks in order
//! (configurations by name), each answer's JSONPatch applied before the next; validating
//! webhooks concurrently. Denials and failures are worded as Kubernetes words them.

pub mod configuration;
pub mod metrics;

use std::sync::{Arc, RwLock, Weak};

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{json, Value};

use self::configuration::Webhook;
use self::metrics::{CallLabels, RejectionLabels, WebhookCall, WebhookMetrics};
use strategy_host_registry::admission::{
    AdmissionRequest, MutatingAdmission, Operation, Rejection, ValidatingAdmission, Verdict,
};
use strategy_host_registry::labels::labels_of;
use strategy_host_registry::system_fields::new_uid;
use strategy_host_registry::Registry;

/// Which configurations a plugin follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mutating,
    Validating,
}

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Self::Mutating => "mutatingwebhookconfigurations",
            Self::Validating => "validatingwebhookconfigurations",
        }
    }
}

/// The webhooks of one kind of configuration, kept current from the informer.
pub struct Webhooks {
    kind: Kind,
    registry: Weak<Registry>,
    current: Arc<RwLock<Arc<Vec<Webhook>>>>,
    metrics: WebhookMetrics,
}

/// Starts following both kinds of configuration; answers the mutating and validating plugins
/// (for the registry's admission chain), recording into `metrics`.
pub fn start(registry: &Arc<Registry>, metrics: &WebhookMetrics) -> (Arc<Webhooks>, Arc<Webhooks>) {
    let plugin = |kind| {
        let webhooks = Arc::new(Webhooks {
            kind,
            registry: Arc::downgrade(registry),
            current: Arc::default(),
            metrics: metrics.clone(),
        });
        webhooks.follow(registry);
        webhooks
    };
    (plugin(Kind::Mutating), plugin(Kind::Validating))
}

impl Webhooks {
    fn follow(self: &Arc<Self>, registry: &Registry) {
        // Configurations in name order, as Kubernetes calls them.
        let plural = self.kind.plural();
        crate::followed::follow_into(
            registry,
            ("admissionregistration.k8s.io", "v1", plural),
            &self.current,
            |configurations| {
                Arc::new(
                    configurations
                        .iter()
                        .flat_map(|c| Webhook::of_configuration(c))
                        .collect(),
                )
            },
        );
    }

    fn webhooks(&self) -> Arc<Vec<Webhook>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Calls `webhook`, recording the call's duration and any rejection.
    async fn call(
        &self,
        webhook: &Webhook,
        request: &AdmissionRequest<'_>,
        object: &Value,
    ) -> Answer {
        // A webhook whose matchConditions do not hold is not called (nor counted).
        match conditions_hold(webhook, request) {
            Ok(true) => {}
            Ok(false) => return Answer::Allowed(Vec::new(), None),
            Err(why) if webhook.fail_closed => {
                return Answer::Rejected(Rejection::Failed(format!(
                    "failed calling webhook {:?}: failed to evaluate match conditions: {why}",
                    webhook.name
                )))
            }
            Err(_) => return Answer::Allowed(Vec::new(), None),
        }
        let began = std::time::Instant::now();
        let answer = call_webhook(webhook, request, object).await;
        let r#type = match self.kind {
            Kind::Mutating => "admit",
            Kind::Validating => "validating",
        };
        let call = WebhookCall {
            name: webhook.name.clone(),
            r#type,
            operation: request.operation.as_str(),
        };
        let rejected = matches!(answer, Answer::Rejected(_));
        self.metrics
            .duration
            .get_or_create(&CallLabels {
                call: call.clone(),
                rejected: if rejected { "true" } else { "false" },
            })
            .observe(began.elapsed().as_secs_f64());
        if let Answer::Rejected(rejection) = &answer {
            let (error_type, code) = match rejection {
                Rejection::Denied { code, .. } => ("no_error", *code),
                _ => ("calling_webhook_error", 500),
            };
            self.metrics
                .rejections
                .get_or_create(&RejectionLabels {
                    call,
                    error_type,
                    rejection_code: code.to_string(),
                })
                .inc();
        }
        answer
    }

    /// The webhooks this request is for.
    async fn matching(&self, request: &AdmissionRequest<'_>) -> Vec<Webhook> {
        let all = self.webhooks();
        let candidates: Vec<&Webhook> = all.iter().filter(|w| w.rules_match(request)).collect();
        if candidates.is_empty() {
            return Vec::new();
        }
        let labels = crate::followed::namespace_object(&self.registry, request.namespace)
            .await
            .map(|ns| labels_of(&ns));
        candidates
            .into_iter()
            .filter(|w| w.selectors_match(request, labels.as_ref()))
            .cloned()
            .collect()
    }
}

/// The `AdmissionReview` a webhook is sent for `request` with `object`.
fn review(request: &AdmissionRequest<'_>, object: &Value) -> Value {
    let def = request.resource;
    let user = request.user;
    let operation = request.operation.as_str();
    let options_kind = match request.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let kind = json!({"group": def.group, "version": request.version, "kind": def.kind});
    let resource = json!({"group": def.group, "version": request.version, "resource": def.plural});
    let mut body = json!({
        "uid": new_uid(),
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": request.name,
        "operation": operation,
        "userInfo": {"username": user.username, "uid": user.uid, "groups": user.groups, "extra": user.extra},
        "object": object,
        "oldObject": request.old_object,
        "dryRun": request.dry_run,
        "options": {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"},
    });
    if let Some(ns) = request.namespace {
        body["namespace"] = json!(ns);
    }
    if let Some(sub) = request.subresource {
        body["subResource"] = json!(sub);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body})
}

/// Whether every `matchCondition` of `webhook` holds for the request.
///
/// # Errors
/// A condition that does not compile or evaluate.
fn conditions_hold(
    webhook: &Webhook,
    request: &AdmissionRequest<'_>,
) -> strategy_host_cel::expression::Result<bool> {
    if webhook.match_conditions.is_empty() {
        return Ok(true);
    }
    let old = request.old_object.cloned().unwrap_or(Value::Null);
    let asked = review(request, request.object);
    let activation = strategy_host_cel::expression::Activation::new(&[
        ("object", request.object),
        ("oldObject", &old),
        ("request", &asked["request"]),
    ]);
    for condition in &webhook.match_conditions {
        let condition = condition.as_ref().as_ref().map_err(Clone::clone)?;
        if !activation.truth(condition)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What one call decided.
enum Answer {
    /// Allowed, with warnings and, from a mutating webhook, a JSONPatch.
    Allowed(Vec<String>, Option<json_patch::Patch>),
    /// Stopped.
    Rejected(Rejection),
}

/// Calls `webhook` about `object`; a failure rejects or is ignored per its failure policy.
async fn call_webhook(webhook: &Webhook, request: &AdmissionRequest<'_>, object: &Value) -> Answer {
    if request.dry_run && !webhook.dry_run_safe {
        return Answer::Rejected(Rejection::Denied {
            code: 400,
            reason: "BadRequest".into(),
            message: format!(
                "admission webhook {:?} does not support dry run",
                webhook.name
            ),
        });
    }
    let sent = review(request, object);
    let called = webhook.client.post(&sent, webhook.timeout).await;
    let outcome = called
        .map_err(NotAnswered::from)
        .and_then(|answer| read_response(&sent, &answer));
    match outcome {
        Ok(answer) => {
            annotate(webhook, request, &answer);
            answer_for(webhook, answer)
        }
        Err(why) if webhook.fail_closed => Answer::Rejected(Rejection::Failed(format!(
            "failed calling webhook {:?}: failed to call webhook: {why}",
            webhook.name
        ))),
        Err(why) => {
            tracing::warn!(webhook = %webhook.name, error = %why, "webhook failed; ignored (failurePolicy: Ignore)");
            Answer::Allowed(Vec::new(), None)
        }
    }
}

/// Why a webhook's review has no answer to use, in kube-apiserver's words.
#[derive(Debug, thiserror::Error)]
enum NotAnswered {
    /// The call failed.
    #[error(transparent)]
    Call(#[from] strategy_host_https::webhook::CallError),
    /// The review came back without a `response`.
    #[error("expected response in AdmissionReview")]
    NoResponse,
    /// The response answers another request.
    #[error("expected response.uid={expected}, got {got}")]
    OtherUid { expected: Value, got: Value },
}

/// The `response` of an answered review, checked against the request sent.
fn read_response(sent: &Value, answer: &Value) -> Result<Value, NotAnswered> {
    let response = answer.get("response").ok_or(NotAnswered::NoResponse)?;
    if response.get("uid") != sent.pointer("/request/uid") {
        return Err(NotAnswered::OtherUid {
            expected: sent.pointer("/request/uid").cloned().unwrap_or_default(),
            got: response.get("uid").cloned().unwrap_or_default(),
        });
    }
    Ok(response.clone())
}

/// The response's `auditAnnotations`, on the request's audit events as `{webhook}/{key}`.
fn annotate(webhook: &Webhook, request: &AdmissionRequest<'_>, response: &Value) {
    let Some(annotations) = response.get("auditAnnotations").and_then(Value::as_object) else {
        return;
    };
    for (key, value) in annotations {
        if let Some(value) = value.as_str() {
            request.annotate(&format!("{}/{key}", webhook.name), value);
        }
    }
}

fn answer_for(webhook: &Webhook, response: Value) -> Answer {
    let warnings = strategy_host_registry::system_fields::strings_at(&response, "/warnings");
    if response.get("allowed") != Some(&Value::Bool(true)) {
        let status = response.get("status").cloned().unwrap_or(Value::Null);
        let code = status
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .filter(|c| *c >= 400)
            .unwrap_or(400);
        let text = |field: &str| {
            status
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (reason, message) = (text("reason"), text("message"));
        let denied_by = format!("admission webhook {:?} denied the request", webhook.name);
        let message = match (message, reason) {
            ("", "") => format!("{denied_by} without explanation"),
            ("", reason) => format!("{denied_by}: {reason}"),
            (message, _) => format!("{denied_by}: {message}"),
        };
        return Answer::Rejected(Rejection::Denied {
            code,
            reason: reason.to_string(),
            message,
        });
    }
    let patch = response
        .get("patch")
        .and_then(Value::as_str)
        .and_then(|p| base64::engine::general_purpose::STANDARD.decode(p).ok())
        .and_then(|bytes| serde_json::from_slice::<json_patch::Patch>(&bytes).ok());
    Answer::Allowed(warnings, patch)
}

#[async_trait]
impl MutatingAdmission for Webhooks {
    fn name(&self) -> &str {
        "MutatingAdmissionWebhook"
    }

    async fn admit(&self, request: &AdmissionRequest<'_>, object: &mut Value) -> Verdict {
        let webhooks = self.matching(request).await;
        let (mut warnings, last_change) = self.mutate_with(&webhooks, request, object).await?;
        // A webhook asking for it is called again when a later one changed the object.
        let again: Vec<Webhook> = webhooks[..last_change]
            .iter()
            .filter(|w| w.reinvoke_if_needed)
            .cloned()
            .collect();
        if !again.is_empty() {
            warnings.extend(self.mutate_with(&again, request, object).await?.0);
        }
        Ok(warnings)
    }

    async fn reinvoke(&self, request: &AdmissionRequest<'_>, object: &mut Value) -> Verdict {
        let again: Vec<Webhook> = self
            .matching(request)
            .await
            .into_iter()
            .filter(|w| w.reinvoke_if_needed)
            .collect();
        Ok(self.mutate_with(&again, request, object).await?.0)
    }
}

impl Webhooks {
    /// Calls each mutating webhook in turn on `object`, applying its patch; answers the
    /// warnings and the index of the last webhook that changed the object (0 when none did).
    async fn mutate_with(
        &self,
        webhooks: &[Webhook],
        request: &AdmissionRequest<'_>,
        object: &mut Value,
    ) -> Result<(Vec<String>, usize), Rejection> {
        let mut warnings = Vec::new();
        let mut last_change = 0;
        for (i, webhook) in webhooks.iter().enumerate() {
            let asked = AdmissionRequest {
                object: &*object,
                ..*request
            };
            let current = object.clone();
            match self.call(webhook, &asked, &current).await {
                Answer::Rejected(r) => return Err(r),
                Answer::Allowed(w, patch) => {
                    warnings.extend(w);
                    if let Some(patch) = patch {
                        let mut patched = current;
                        json_patch::patch(&mut patched, &patch).map_err(|e| {
                            Rejection::Failed(format!(
                                "failed calling webhook {:?}: the JSONPatch does not apply: {e}",
                                webhook.name
                            ))
                        })?;
                        if patched != *object {
                            last_change = i;
                        }
                        *object = patched;
                    }
                }
            }
        }
        Ok((warnings, last_change))
    }
}

#[async_trait]
impl ValidatingAdmission for Webhooks {
    fn name(&self) -> &str {
        "ValidatingAdmissionWebhook"
    }

    async fn validate(&self, request: &AdmissionRequest<'_>) -> Verdict {
        let webhooks = self.matching(request).await;
        let calls = webhooks
            .iter()
            .map(|w| self.call(w, request, request.object));
        let mut warnings = Vec::new();
        for answer in futures::future::join_all(calls).await {
            match answer {
                Answer::Rejected(r) => return Err(r),
                Answer::Allowed(w, _) => warnings.extend(w),
            }
        }
        Ok(warnings)
    }
}
