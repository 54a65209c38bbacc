//! What one version of a strategy did with one object in one phase (its admission, the object
//! after it, or its failure, and how long it took), and where two such outcomes differ — the
//! one comparison shadow evaluation, replay and `strategy-host module diff` all use.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::admission_policy::{AdmissionAttributes, AdmissionPolicy};
use crate::authorizer::AuthorizerModule;
use crate::strategy::{Answer, Refusal, Strategy, StrategyContext};

/// The write phase a version is asked about: `before_create`, `before_update` or
/// `before_delete` of a strategy, the same operation of a policy (one enum for both contracts).
pub use crate::admission_policy::Operation as Verb;

/// Which contract a phase asks a module version through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// As the strategy of the context's resource.
    Strategy,
    /// As an admission policy, about a write with these attributes (the operation is the
    /// phase's).
    Policy(AdmissionAttributes),
    /// As an authorizer, deciding the `SubjectAccessReview` it is given (its status is the
    /// object after the phase).
    Authorizer,
}

/// A module version (or a slot of them) as every contract asks it.
pub trait Version: Strategy + AdmissionPolicy + AuthorizerModule {}

impl<T: Strategy + AdmissionPolicy + AuthorizerModule> Version for T {}

/// One version's answer for one object in one phase.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The admission, or why the call failed.
    pub result: Answer,
    /// The object after the phase (create and update; what the strategy defaulted or rewrote).
    pub object: Option<Value>,
    /// Wall time of the call.
    pub latency: Duration,
}

impl Outcome {
    /// Whether the version refused the write (field errors or a refusal).
    pub fn rejects(&self) -> bool {
        matches!(&self.result, Ok(a) if !a.field_errors.is_empty() || a.refusal.is_some())
    }

    /// Why the version refused the write, one line per cause.
    pub fn causes(&self) -> Vec<String> {
        let Ok(a) = &self.result else {
            return Vec::new();
        };
        let mut causes: Vec<String> = a.field_errors.iter().map(ToString::to_string).collect();
        match &a.refusal {
            Some(Refusal::Forbidden(m)) => causes.push(format!("forbidden: {m}")),
            Some(Refusal::NotFound {
                group,
                plural,
                name,
            }) => causes.push(format!("not found: {plural}.{group} {name:?}")),
            None => {}
        }
        causes
    }

    /// The warnings the version returned.
    pub fn warnings(&self) -> &[String] {
        match &self.result {
            Ok(a) => &a.warnings,
            Err(_) => &[],
        }
    }
}

/// Runs one phase of `version` in `role` on its own copy of `object` (`old` for updates; for a
/// policy, the object deleted is `object`) and records the outcome. The call is the one a request
/// makes; nothing is written.
pub async fn evaluate(
    version: &dyn Version,
    role: &Role,
    ctx: &StrategyContext,
    verb: Verb,
    mut object: Value,
    old: Option<&Value>,
) -> Outcome {
    let started = Instant::now();
    // An update without an old object is one onto itself.
    let itself = (verb == Verb::Update && old.is_none()).then(|| object.clone());
    let old = old.or(itself.as_ref());
    let result = match (role, verb) {
        (Role::Strategy, Verb::Create) => version.before_create(ctx, &mut object).await,
        (Role::Strategy, Verb::Update) => {
            let old = old.unwrap_or(&Value::Null);
            version.before_update(ctx, &mut object, old).await
        }
        (Role::Strategy, Verb::Delete) => version.before_delete(ctx, &object).await,
        (Role::Policy(attributes), _) => {
            let attributes = AdmissionAttributes {
                operation: verb,
                ..attributes.clone()
            };
            let (object, old) = match verb {
                Verb::Delete => (None, Some(&object)),
                _ => (Some(&mut object), old),
            };
            version.admit(ctx, &attributes, object, old).await
        }
        (Role::Authorizer, _) => version.authorize(ctx, &mut object).await,
    };
    let latency = started.elapsed();
    Outcome {
        result,
        object: (verb != Verb::Delete).then_some(object),
        latency,
    }
}

/// How a candidate's outcome differs from the version in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DifferenceKind {
    /// The candidate refuses a write the version in force admits.
    Rejects,
    /// The candidate admits a write the version in force refuses.
    Admits,
    /// Both refuse, for different causes.
    RejectsDifferently,
    /// Both admit, but the objects after the phase differ.
    Changes,
    /// The warnings differ.
    Warnings,
    /// The candidate's call failed (deadline, memory, trap, bad output).
    Fails,
}

impl DifferenceKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [DifferenceKind; 6] = [
        Self::Rejects,
        Self::Admits,
        Self::RejectsDifferently,
        Self::Changes,
        Self::Warnings,
        Self::Fails,
    ];

    /// The name in status, `/debug/strategies` and metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rejects => "rejects",
            Self::Admits => "admits",
            Self::RejectsDifferently => "rejectsDifferently",
            Self::Changes => "changes",
            Self::Warnings => "warnings",
            Self::Fails => "fails",
        }
    }
}

/// One difference, with what differed.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// What kind of difference.
    pub kind: DifferenceKind,
    /// The details: the candidate's causes, a JSON patch from the in-force object to the
    /// candidate's, both sets of warnings, or the failure.
    pub detail: Value,
}

/// Where `candidate` differs from `in_force` for the same input. A failure of the version in
/// force is not the candidate's difference: only the candidate's own failure is reported, and
/// not when the version in force failed for the same reason (both trap on the same input).
pub fn differences(in_force: &Outcome, candidate: &Outcome) -> Vec<Difference> {
    let mut out = Vec::new();
    if let Err(e) = &candidate.result {
        if matches!(&in_force.result, Err(f) if f.reason == e.reason) {
            return out;
        }
        out.push(Difference {
            kind: DifferenceKind::Fails,
            detail: json!({"reason": e.reason}),
        });
        return out;
    }
    if in_force.result.is_err() {
        return out;
    }
    match (in_force.rejects(), candidate.rejects()) {
        (false, true) => out.push(Difference {
            kind: DifferenceKind::Rejects,
            detail: json!({"causes": candidate.causes()}),
        }),
        (true, false) => out.push(Difference {
            kind: DifferenceKind::Admits,
            detail: json!({"inForceCauses": in_force.causes()}),
        }),
        (true, true) if in_force.causes() != candidate.causes() => out.push(Difference {
            kind: DifferenceKind::RejectsDifferently,
            detail: json!({"inForceCauses": in_force.causes(), "causes": candidate.causes()}),
        }),
        (false, false) => {
            if let (Some(a), Some(b)) = (&in_force.object, &candidate.object) {
                if a != b {
                    let patch = json_patch::diff(a, b);
                    out.push(Difference {
                        kind: DifferenceKind::Changes,
                        detail: json!({"patch": patch}),
                    });
                }
            }
        }
        (true, true) => {}
    }
    if in_force.warnings() != candidate.warnings() {
        out.push(Difference {
            kind: DifferenceKind::Warnings,
            detail: json!({"inForce": in_force.warnings(), "candidate": candidate.warnings()}),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::{Admission, FieldError, FieldErrorKind, StrategyError};

    fn admitted(object: Value, warnings: &[&str]) -> Outcome {
        Outcome {
            result: Ok(Admission {
                warnings: warnings.iter().map(|w| w.to_string()).collect(),
                ..Admission::default()
            }),
            object: Some(object),
            latency: Duration::ZERO,
        }
    }

    fn rejected(field: &str) -> Outcome {
        Outcome {
            result: Ok(Admission {
                field_errors: vec![FieldError {
                    kind: FieldErrorKind::Invalid,
                    field: field.into(),
                    detail: "no".into(),
                }],
                ..Admission::default()
            }),
            object: Some(json!({})),
            latency: Duration::ZERO,
        }
    }

    fn kinds(d: &[Difference]) -> Vec<DifferenceKind> {
        d.iter().map(|d| d.kind).collect()
    }

    #[test]
    fn same_outcomes_do_not_differ() {
        let a = admitted(json!({"a": 1}), &["w"]);
        assert!(differences(&a, &a.clone()).is_empty());
        assert!(differences(&rejected("x"), &rejected("x")).is_empty());
    }

    #[test]
    fn rejections_admissions_and_their_causes() {
        let ok = admitted(json!({}), &[]);
        let d = differences(&ok, &rejected("spec.x"));
        assert_eq!(kinds(&d), [DifferenceKind::Rejects]);
        assert_eq!(
            d[0].detail,
            json!({"causes": ["spec.x: Invalid value: no"]})
        );
        assert_eq!(
            kinds(&differences(&rejected("a"), &ok)),
            [DifferenceKind::Admits]
        );
        assert_eq!(
            kinds(&differences(&rejected("a"), &rejected("b"))),
            [DifferenceKind::RejectsDifferently]
        );
    }

    #[test]
    fn a_changed_object_is_a_json_patch_and_warnings_are_compared() {
        let a = admitted(json!({"spec": {"replicas": 1}}), &[]);
        let b = admitted(json!({"spec": {"replicas": 2}, "x": true}), &["careful"]);
        let d = differences(&a, &b);
        assert_eq!(
            kinds(&d),
            [DifferenceKind::Changes, DifferenceKind::Warnings]
        );
        let patch: json_patch::Patch =
            serde_json::from_value(d[0].detail["patch"].clone()).unwrap();
        let mut patched = a.object.clone().unwrap();
        json_patch::patch(&mut patched, &patch).unwrap();
        assert_eq!(Some(patched), b.object);
    }

    /// A strategy that stamps an annotation in every phase.
    struct Stamps;

    #[async_trait::async_trait]
    impl Strategy for Stamps {
        fn name(&self) -> &str {
            "stamps"
        }

        async fn before_update(&self, _: &StrategyContext, new: &mut Value, _: &Value) -> Answer {
            new["stamped"] = json!(true);
            Ok(Admission::default())
        }
    }

    #[async_trait::async_trait]
    impl AdmissionPolicy for Stamps {
        async fn admit(
            &self,
            _: &StrategyContext,
            attributes: &AdmissionAttributes,
            object: Option<&mut Value>,
            old: Option<&Value>,
        ) -> Answer {
            let warnings = vec![format!("{:?} old={}", attributes.operation, old.is_some())];
            if let Some(object) = object {
                object["admitted"] = json!(true);
            }
            Ok(Admission {
                warnings,
                ..Admission::default()
            })
        }
    }

    /// As an authorizer, it allows everything.
    #[async_trait::async_trait]
    impl AuthorizerModule for Stamps {
        async fn authorize(&self, _: &StrategyContext, review: &mut Value) -> Answer {
            review["status"] = json!({"allowed": true});
            Ok(Admission::default())
        }
    }

    /// A dry run's context for the resource `ks.g`.
    fn context() -> StrategyContext {
        StrategyContext {
            resource: crate::strategy::ResourceInfo {
                group: "g".into(),
                version: "v1".into(),
                kind: "K".into(),
                plural: "ks".into(),
                namespaced: true,
            },
            dry_run: true,
            request_id: String::new(),
            hook_depth: 0,
            user: Default::default(),
        }
    }

    #[tokio::test]
    async fn an_update_onto_itself_keeps_what_the_strategy_rewrote() {
        let ctx = context();
        let strategy = Role::Strategy;
        let out = evaluate(
            &Stamps,
            &strategy,
            &ctx,
            Verb::Update,
            json!({"a": 1}),
            None,
        )
        .await;
        assert_eq!(out.object, Some(json!({"a": 1, "stamped": true})));
    }

    #[tokio::test]
    async fn a_policy_is_asked_the_phases_operation_with_the_deleted_object_as_old() {
        let ctx = context();
        let policy = Role::Policy(AdmissionAttributes {
            operation: Verb::Create,
            phase: crate::admission_policy::AdmissionPhase::Validate,
            namespace: None,
            name: "x".into(),
            subresource: None,
        });
        let asked = |verb| evaluate(&Stamps, &policy, &ctx, verb, json!({"a": 1}), None);
        let update = asked(Verb::Update).await;
        assert_eq!(update.warnings(), ["Update old=true"]);
        assert_eq!(update.object, Some(json!({"a": 1, "admitted": true})));
        let delete = asked(Verb::Delete).await;
        assert_eq!(delete.warnings(), ["Delete old=true"]);
        assert_eq!(delete.object, None);
        assert_eq!(asked(Verb::Create).await.warnings(), ["Create old=false"]);
    }

    #[tokio::test]
    async fn an_authorizers_decision_is_the_reviews_status_after_the_call() {
        let review = json!({"spec": {"user": "jane"}, "status": {"allowed": false}});
        let out = evaluate(
            &Stamps,
            &Role::Authorizer,
            &context(),
            Verb::Create,
            review,
            None,
        )
        .await;
        assert_eq!(
            out.object,
            Some(json!({"spec": {"user": "jane"}, "status": {"allowed": true}}))
        );
        let no_opinion = Outcome {
            object: Some(json!({"spec": {"user": "jane"}, "status": {"allowed": false}})),
            ..out.clone()
        };
        let d = differences(&no_opinion, &out);
        assert_eq!(
            d.iter().map(|d| d.kind).collect::<Vec<_>>(),
            [DifferenceKind::Changes]
        );
    }

    #[test]
    fn only_the_candidates_failure_counts() {
        let failed = Outcome {
            result: Err(StrategyError {
                module: "m".into(),
                reason: "deadline".into(),
            }),
            object: None,
            latency: Duration::ZERO,
        };
        let ok = admitted(json!({}), &[]);
        assert_eq!(kinds(&differences(&ok, &failed)), [DifferenceKind::Fails]);
        assert!(differences(&failed, &ok).is_empty());
        assert!(differences(&failed, &failed.clone()).is_empty());
    }
}
