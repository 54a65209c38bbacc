//! A guest-SDK strategy run natively inside the host, with no wasm in between: the baseline
//! the wasm runtime is measured against (`native-host`). The object goes through the same
//! (de)serialisation the SDK and the host do around a module call (JSON bytes in; the object, or
//! a [`sdk::LazyObject`]'s JSON Patch, out); only the wasm boundary is missing.

use async_trait::async_trait;
use serde_json::Value;
use strategy_guest_sdk as sdk;
use strategy_host::strategy::{
    Admission, Answer, FieldError, FieldErrorKind, Strategy, StrategyContext, StrategyError,
};
use strategy_host::wasm::apply_object_answer;

/// An SDK strategy `S` as the registry's [`Strategy`].
#[derive(Debug, Default)]
pub struct NativeSdkStrategy<S>(pub S);

fn context(ctx: &StrategyContext) -> sdk::Context {
    let r = &ctx.resource;
    sdk::Context {
        resource: sdk::ResourceInfo {
            group: r.group.clone(),
            version: r.version.clone(),
            kind: r.kind.clone(),
            plural: r.plural.clone(),
            namespaced: r.namespaced,
        },
        dry_run: ctx.dry_run,
        request_id: ctx.request_id.clone(),
        // Copied as a wasm call encodes it, so the baseline does the same work.
        user: sdk::UserInfo {
            username: ctx.user.username.clone(),
            uid: ctx.user.uid.clone(),
            groups: ctx.user.groups.clone(),
            extra: ctx.user.extra.clone(),
        },
    }
}

fn field_error(e: sdk::FieldError) -> FieldError {
    let kind = match e.kind {
        sdk::FieldErrorKind::Required => FieldErrorKind::Required,
        sdk::FieldErrorKind::Forbidden => FieldErrorKind::Forbidden,
        sdk::FieldErrorKind::Duplicate => FieldErrorKind::Duplicate,
        sdk::FieldErrorKind::NotSupported => FieldErrorKind::NotSupported,
        sdk::FieldErrorKind::TooLong => FieldErrorKind::TooLong,
        sdk::FieldErrorKind::TooMany => FieldErrorKind::TooMany,
        _ => FieldErrorKind::Invalid,
    };
    FieldError {
        kind,
        field: e.field,
        detail: e.detail,
    }
}

impl<S: sdk::Strategy> NativeSdkStrategy<S> {
    fn failed(&self, reason: impl ToString) -> StrategyError {
        StrategyError {
            module: S::NAME.to_owned(),
            reason: reason.to_string(),
        }
    }

    fn decode(&self, v: &Value) -> Result<S::Object, StrategyError> {
        let bytes = serde_json::to_vec(v).map_err(|e| self.failed(e))?;
        serde_json::from_slice(&bytes).map_err(|e| self.failed(e))
    }

    /// Makes `obj` the strategy's answer, as a module gives it and the host takes it.
    fn answer(&self, typed: &S::Object, obj: &mut Value) -> Result<(), StrategyError> {
        let resp = sdk::answer_object(typed).map_err(|e| self.failed(e))?;
        apply_object_answer(obj, &resp.object, &resp.object_patch).map_err(|e| self.failed(e))
    }
}

#[async_trait]
impl<S: sdk::Strategy + Send + Sync + 'static> Strategy for NativeSdkStrategy<S> {
    fn name(&self) -> &str {
        S::NAME
    }

    async fn before_create(&self, ctx: &StrategyContext, obj: &mut Value) -> Answer {
        let ctx = context(ctx);
        let mut typed = self.decode(obj)?;
        self.0.prepare_for_create(&ctx, &mut typed);
        let errors = self.0.validate(&ctx, &typed);
        let warnings = self.0.warnings_on_create(&ctx, &typed);
        self.0.canonicalize(&ctx, &mut typed);
        self.answer(&typed, obj)?;
        Ok(Admission {
            field_errors: errors.into_iter().map(field_error).collect(),
            warnings,
            refusal: None,
        })
    }

    async fn before_update(&self, ctx: &StrategyContext, new: &mut Value, old: &Value) -> Answer {
        let ctx = context(ctx);
        let (mut typed, old) = (self.decode(new)?, self.decode(old)?);
        self.0.prepare_for_update(&ctx, &mut typed, &old);
        let errors = self.0.validate_update(&ctx, &typed, &old);
        let warnings = self.0.warnings_on_update(&ctx, &typed, &old);
        self.0.canonicalize(&ctx, &mut typed);
        self.answer(&typed, new)?;
        Ok(Admission {
            field_errors: errors.into_iter().map(field_error).collect(),
            warnings,
            refusal: None,
        })
    }

    fn allow_create_on_update(&self) -> bool {
        self.0.allow_create_on_update()
    }

    fn allow_unconditional_update(&self) -> bool {
        self.0.allow_unconditional_update()
    }
}
