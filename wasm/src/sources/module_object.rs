//! The built-in `StrategyModule` kind (`strategyhost.io/v1alpha1`, cluster-scoped): an API
//! object carrying a module's bytes and the resource (or admission policy) it binds to, stored like any object so every
//! host replica on the same store loads the same version. Its native strategy checks the spec;
//! `object_source.rs` loads it and writes the status.

use base64::Engine as _;
use serde_json::Value;

use super::pull::ModuleUrl;
use crate::module_table::KindRefusals;
use crate::rollout::RolloutSpec;
use crate::strategy::{Admission, AdmitStrategy, FieldError, FieldErrorKind};
use crate::Refusal;
use strategy_host_registry::definition::ResourceDefinition;
use strategy_host_registry::kinds::KindProvider;
use strategy_host_registry::Registry;
use strategy_host_wasm_runtime::{digest, StrategyModule};

/// The API group of the host's own kinds.
pub const GROUP: &str = "strategyhost.io";
/// The served (and stored) version of `StrategyModule`.
pub const VERSION: &str = "v1alpha1";
/// The plural resource name.
pub const PLURAL: &str = "strategymodules";
/// The kind.
pub const KIND: &str = "StrategyModule";

/// The source name a `StrategyModule` object loads under in the module table.
pub fn source_name(object_name: &str) -> String {
    format!("api:{object_name}")
}

/// The definition of `strategymodules` (`strategy_module_kind.json`): the schema types the spec
/// (so a wrong type is a 422 with a cause), the status is a subresource, and `kubectl get` shows
/// the binding and state.
pub fn definition() -> ResourceDefinition {
    ResourceDefinition::builtins(include_str!("strategy_module_kind.json"))
        .pop()
        .expect("strategy_module_kind.json holds the definition")
}

/// The `StrategyModule` kind, served with [`STRATEGY`].
#[derive(Debug, Clone, Copy)]
pub struct Kinds;

impl KindProvider for Kinds {
    fn name(&self) -> &'static str {
        "strategymodules"
    }

    fn serve(&self, registry: &std::sync::Arc<Registry>) {
        registry.serve_builtin(definition(), std::sync::Arc::new(STRATEGY));
    }
}

/// Where a `StrategyModule`'s module comes from: exactly one of `spec.module` and `spec.url`.
#[derive(Debug, Clone, PartialEq)]
pub enum ModuleSource {
    /// `spec.module`: the bytes themselves.
    Inline {
        /// The module's bytes.
        bytes: Vec<u8>,
        /// Their SHA-256, in hex.
        digest: String,
    },
    /// `spec.url`: pulled by each replica.
    Url {
        /// Where to pull it from.
        url: ModuleUrl,
        /// `spec.digest`: the SHA-256 (hex) the module must have.
        pinned: Option<String>,
        /// `spec.imagePullSecret`: the `kubernetes.io/dockerconfigjson` Secret in
        /// [`PULL_SECRET_NAMESPACE`] holding the registry's credentials.
        pull_secret: Option<String>,
    },
}

/// The namespace `spec.imagePullSecret` names a Secret in (a `StrategyModule` is cluster-scoped).
pub const PULL_SECRET_NAMESPACE: &str = "kube-system";

/// The spec of a `StrategyModule`, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleSpec {
    /// The bound resource's group.
    pub group: String,
    /// The bound resource's kind.
    pub kind: String,
    /// The admission policy bound instead of a resource (`spec.admissionPolicy.name`).
    pub policy: Option<String>,
    /// The authorizer bound instead of a resource (`spec.authorizer.name`).
    pub authorizer: Option<String>,
    /// Where the module's bytes come from.
    pub source: ModuleSource,
    /// How the version is brought in (`spec.rollout`).
    pub rollout: RolloutSpec,
}

impl ModuleSpec {
    /// Decodes and checks `obj.spec`.
    ///
    /// # Errors
    /// One field error per problem: missing fields, bytes that are not base64, a digest that
    /// does not match.
    pub fn from_object(obj: &Value) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let text = |pointer: &str| obj.pointer(pointer).and_then(Value::as_str).unwrap_or("");
        let mut required = |field: &str, value: &str, what: &str| {
            if value.is_empty() {
                errors.push(FieldError {
                    kind: FieldErrorKind::Required,
                    field: field.into(),
                    detail: what.into(),
                });
            }
        };
        let (group, kind) = (text("/spec/resource/group"), text("/spec/resource/kind"));
        let policy = obj
            .pointer("/spec/admissionPolicy")
            .map(|_| text("/spec/admissionPolicy/name"));
        let authorizer = obj
            .pointer("/spec/authorizer")
            .map(|_| text("/spec/authorizer/name"));
        match (policy, authorizer) {
            (None, None) => required(
                "spec.resource.kind",
                kind,
                "the kind the module is the strategy of",
            ),
            (Some(name), _) => required(
                "spec.admissionPolicy.name",
                name,
                "the name of the admission policy the module declares",
            ),
            (None, Some(name)) => required(
                "spec.authorizer.name",
                name,
                "the name of the authorizer the module declares",
            ),
        }
        let source = module_source(obj, &mut errors);
        let bindings = [
            obj.pointer("/spec/resource").is_some(),
            policy.is_some(),
            authorizer.is_some(),
        ];
        if authorizer.is_some() && bindings.iter().filter(|b| **b).count() > 1 {
            errors.push(FieldError {
                kind: FieldErrorKind::Forbidden,
                field: "spec.authorizer".into(),
                detail: "may not be set with spec.resource or spec.admissionPolicy: a module is a resource's strategy, an admission policy or an authorizer".into(),
            });
        }
        if policy.is_some() && obj.pointer("/spec/resource").is_some() {
            errors.push(FieldError {
                kind: FieldErrorKind::Forbidden,
                field: "spec.admissionPolicy".into(),
                detail: "may not be set with spec.resource: a module is a resource's strategy or an admission policy".into(),
            });
        }
        let rollout = RolloutSpec::from_json(obj.pointer("/spec/rollout"), "spec.rollout")
            .unwrap_or_else(|e| {
                errors.extend(e);
                RolloutSpec::default()
            });
        if errors.is_empty() {
            Ok(Self {
                group: group.into(),
                kind: kind.into(),
                policy: policy.map(String::from),
                authorizer: authorizer.map(String::from),
                source: source.expect("no field errors: the source decoded"),
                rollout,
            })
        } else {
            Err(errors)
        }
    }
}

/// Decodes `spec.module`, or `spec.url` with `spec.digest` and `spec.imagePullSecret`, adding a
/// field error for each problem.
fn module_source(obj: &Value, errors: &mut Vec<FieldError>) -> Option<ModuleSource> {
    let text = |pointer: &str| obj.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let error = |kind, field: &str, detail: String| FieldError {
        kind,
        field: field.into(),
        detail,
    };
    let (module, url, declared) = (
        text("/spec/module"),
        text("/spec/url"),
        text("/spec/digest"),
    );
    let pull_secret = text("/spec/imagePullSecret");
    let pinned = match declared {
        "" => None,
        d => match d.strip_prefix("sha256:") {
            Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Some(hex.to_ascii_lowercase())
            }
            _ => {
                errors.push(error(
                    FieldErrorKind::Invalid,
                    "spec.digest",
                    format!("{d:?}: must be sha256: followed by 64 hexadecimal digits"),
                ));
                None
            }
        },
    };
    match (module.is_empty(), url.is_empty()) {
        (true, true) => {
            errors.push(error(
                FieldErrorKind::Required,
                "spec.url",
                "where to pull the wasm module from (oci://, https://), or spec.module: its bytes, base64-encoded".into(),
            ));
            None
        }
        (false, false) => {
            errors.push(error(
                FieldErrorKind::Forbidden,
                "spec.url",
                "may not be set with spec.module: give the module's bytes or where to pull it from, not both".into(),
            ));
            None
        }
        (false, true) => {
            if !pull_secret.is_empty() {
                errors.push(error(
                    FieldErrorKind::Forbidden,
                    "spec.imagePullSecret",
                    "may only be set with spec.url".into(),
                ));
            }
            let bytes = match base64::engine::general_purpose::STANDARD.decode(module) {
                Ok(b) => b,
                Err(e) => {
                    errors.push(error(
                        FieldErrorKind::Invalid,
                        "spec.module",
                        format!("must be the module's bytes in base64: {e}"),
                    ));
                    return None;
                }
            };
            let digest = digest(&bytes);
            if pinned.as_ref().is_some_and(|p| *p != digest) {
                errors.push(error(
                    FieldErrorKind::Invalid,
                    "spec.digest",
                    format!(
                        "{declared:?}: does not match the module, whose digest is sha256:{digest}"
                    ),
                ));
            }
            Some(ModuleSource::Inline { bytes, digest })
        }
        (true, false) => {
            let url = match url.parse::<ModuleUrl>() {
                Ok(u) => u,
                Err(e) => {
                    errors.push(error(
                        FieldErrorKind::Invalid,
                        "spec.url",
                        format!("{url:?}: {e}"),
                    ));
                    return None;
                }
            };
            if let Some(e) = strategy_host_registry::names::dns1123_subdomain_error(pull_secret)
                .filter(|_| !pull_secret.is_empty())
            {
                errors.push(error(
                    FieldErrorKind::Invalid,
                    "spec.imagePullSecret",
                    format!("{pull_secret:?}: {e}"),
                ));
            }
            let pull_secret = (!pull_secret.is_empty()).then(|| pull_secret.to_owned());
            Some(ModuleSource::Url {
                url,
                pinned,
                pull_secret,
            })
        }
    }
}

impl ModuleSpec {
    /// Checks that `module` declares the resource (or admission policy, or authorizer) this spec
    /// binds it to.
    ///
    /// # Errors
    /// What the module declares instead.
    pub fn binds(&self, module: &StrategyModule) -> Result<(), Refusal> {
        let spec = self;
        let manifest = module.manifest();
        let kinds = [
            (
                spec.authorizer.as_deref(),
                manifest.authorizer.is_some(),
                KindRefusals::AUTHORIZER,
            ),
            (
                spec.policy.as_deref(),
                manifest.admission_policy.is_some(),
                KindRefusals::POLICY,
            ),
        ];
        for (bound, declared, refusals) in kinds {
            if refusals.bound(bound, declared, &manifest.name)? {
                return Ok(());
            }
        }
        let (group, kind) = (spec.group.as_str(), spec.kind.as_str());
        let declared = &manifest.resources;
        if declared.iter().any(|r| r.group == group && r.kind == kind) {
            return Ok(());
        }
        Err(Refusal::Undeclared {
            bound: format!("{group}/{kind}"),
            declared: declared
                .iter()
                .map(|r| format!("{}/{}", r.group, r.kind))
                .collect(),
        })
    }
}

/// The native strategy of `strategymodules`: the spec must decode (the module itself is compiled
/// and checked by the loader, which reports the outcome in the status).
pub const STRATEGY: AdmitStrategy = AdmitStrategy {
    name: "builtin-strategymodules",
    admit,
};

fn admit(obj: &mut Value) -> Admission {
    Admission {
        field_errors: ModuleSpec::from_object(obj).err().unwrap_or_default(),
        warnings: vec![],
        refusal: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(module: &str, digest: Option<&str>) -> Value {
        let mut obj = json!({"spec": {"resource": {"group": "g.example.com", "kind": "Thing"}, "module": module}});
        if let Some(d) = digest {
            obj["spec"]["digest"] = json!(d);
        }
        obj
    }

    #[test]
    fn decodes_the_module_and_checks_the_digest() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(b"\0asm\x01\0\0\0");
        let spec = ModuleSpec::from_object(&object(&b64, None)).unwrap();
        let ModuleSource::Inline { bytes, digest } = &spec.source else {
            panic!("not inline")
        };
        assert_eq!(bytes, b"\0asm\x01\0\0\0");
        assert_eq!(
            (spec.group.as_str(), spec.kind.as_str()),
            ("g.example.com", "Thing")
        );
        let good = format!("sha256:{digest}");
        assert!(ModuleSpec::from_object(&object(&b64, Some(&good))).is_ok());
        let other = format!("sha256:{}", "0".repeat(64));
        let errors = ModuleSpec::from_object(&object(&b64, Some(&other))).unwrap_err();
        assert_eq!(errors[0].field, "spec.digest");
        assert!(errors[0].detail.contains("does not match"), "{errors:?}");
        let errors = ModuleSpec::from_object(&object(&b64, Some("sha256:00"))).unwrap_err();
        assert!(
            errors[0].detail.contains("64 hexadecimal digits"),
            "{errors:?}"
        );
    }

    #[test]
    fn missing_fields_and_bad_base64_are_field_errors() {
        let errors = ModuleSpec::from_object(&json!({"spec": {}})).unwrap_err();
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["spec.resource.kind", "spec.url"]);
        let errors = ModuleSpec::from_object(&object("not base64!", None)).unwrap_err();
        assert_eq!(errors[0].field, "spec.module");
        assert_eq!(errors[0].kind, FieldErrorKind::Invalid);
    }

    #[test]
    fn a_url_with_a_pinned_digest_and_a_pull_secret() {
        let pin = format!("sha256:{}", "AB".repeat(32));
        let obj = json!({"spec": {"resource": {"group": "g.example.com", "kind": "Thing"},
            "url": "oci://127.0.0.1:5000/m:v1", "digest": pin, "imagePullSecret": "regcred"}});
        let spec = ModuleSpec::from_object(&obj).unwrap();
        assert_eq!(
            spec.source,
            ModuleSource::Url {
                url: "oci://127.0.0.1:5000/m:v1".parse().unwrap(),
                pinned: Some("ab".repeat(32)),
                pull_secret: Some("regcred".into()),
            }
        );
        let field_errors = |spec: Value| {
            let mut obj = obj.clone();
            obj["spec"] = spec;
            ModuleSpec::from_object(&obj)
                .unwrap_err()
                .into_iter()
                .map(|e| (e.field, e.kind))
                .collect::<Vec<_>>()
        };
        let b64 = base64::engine::general_purpose::STANDARD.encode(b"\0asm");
        let thing = json!({"group": "g", "kind": "Thing"});
        assert_eq!(
            field_errors(json!({"resource": thing, "url": "oci://r/m:v1", "module": b64})),
            [("spec.url".into(), FieldErrorKind::Forbidden)]
        );
        assert_eq!(
            field_errors(json!({"resource": thing, "url": "ftp://r/m.wasm"})),
            [("spec.url".into(), FieldErrorKind::Invalid)]
        );
        assert_eq!(
            field_errors(
                json!({"resource": thing, "url": "oci://r/m:v1", "imagePullSecret": "Reg_Cred"})
            ),
            [("spec.imagePullSecret".into(), FieldErrorKind::Invalid)]
        );
        assert_eq!(
            field_errors(json!({"resource": thing, "module": b64, "imagePullSecret": "x"})),
            [("spec.imagePullSecret".into(), FieldErrorKind::Forbidden)]
        );
    }

    #[test]
    fn an_admission_policy_or_an_authorizer_binds_instead_of_a_resource() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(b"\0asm\x01\0\0\0");
        let resource = json!({"group": "g.example.com", "kind": "Thing"});
        let policy = json!({"name": "owner-label"});
        // The binding, the name it binds, another binding set beside it (refused at the field
        // named), and the (policy, authorizer) the spec decodes to.
        let cases = [
            (
                "admissionPolicy",
                "owner-label",
                ("resource", resource, "spec.admissionPolicy"),
                (Some("owner-label"), None),
            ),
            (
                "authorizer",
                "protect-production",
                ("admissionPolicy", policy, "spec.authorizer"),
                (None, Some("protect-production")),
            ),
        ];
        for (binding, name, (beside, other, refused_at), bound) in cases {
            let obj = json!({"spec": {binding: {"name": name}, "module": b64}});
            let spec = ModuleSpec::from_object(&obj).unwrap();
            let decoded = (spec.policy.as_deref(), spec.authorizer.as_deref());
            assert_eq!(decoded, bound, "{binding}");
            let mut both = obj.clone();
            both["spec"][beside] = other;
            let errors = ModuleSpec::from_object(&both).unwrap_err();
            assert_eq!(errors[0].field, refused_at, "{binding} beside {beside}");
            let unnamed = json!({"spec": {binding: {}, "module": b64}});
            let errors = ModuleSpec::from_object(&unnamed).unwrap_err();
            assert_eq!(errors[0].field, format!("spec.{binding}.name"));
        }
    }

    #[test]
    fn the_rollout_decodes_and_a_bad_one_is_a_field_error() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(b"\0asm\x01\0\0\0");
        let mut obj = object(&b64, None);
        obj["spec"]["rollout"] = json!({"mode": "Canary", "weight": 30});
        let spec = ModuleSpec::from_object(&obj).unwrap();
        assert_eq!(spec.rollout.mode, crate::rollout::RolloutMode::Canary);
        assert_eq!(spec.rollout.weight_percent, 30);
        obj["spec"]["rollout"] = json!({"mode": "Sideways"});
        let errors = ModuleSpec::from_object(&obj).unwrap_err();
        assert_eq!(errors[0].field, "spec.rollout.mode");
    }
}
