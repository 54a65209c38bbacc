//! A strategy module ready to serve: compiled (or taken from the cache), shape-checked,
//! pre-linked as an `InstancePre`, and proven by one instantiation that reads its manifest.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::InstancePre;

use super::abi::{self, request::Operation as Op, Operation};
use super::engine::Runtime;
use super::error::{Error, Result};
use super::host_functions::{CallState, CallerInfo};
use super::instance::{Session, SessionOptions};
use super::manifest::{self, ModuleManifest};
use super::placement;
use crate::strategy::ResourceInfo;

/// A loaded, checked strategy module.
pub struct StrategyModule {
    digest: String,
    manifest: ModuleManifest,
    pre: InstancePre<CallState>,
    allow_create_on_update: bool,
    allow_unconditional_update: bool,
}

impl fmt::Debug for StrategyModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StrategyModule")
            .field("name", &self.manifest.name)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

/// The SHA-256 of a module's bytes, in hex.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl StrategyModule {
    /// Compiles (or loads from the cache) and checks a module: its size, imports and exports, its
    /// manifest (ABI version, resources, operations, granted host functions), and one
    /// instantiation. Blocking (Cranelift may run): call it off the async workers.
    ///
    /// # Errors
    ///
    /// [`Error`] names the check the module failed.
    pub fn load(runtime: &Runtime, bytes: &[u8]) -> Result<Self> {
        let rt = &runtime.inner;
        let limit = rt.config.module_size_limit;
        if bytes.len() > limit {
            return Err(Error::TooLarge {
                size: bytes.len(),
                limit,
            });
        }
        let digest = digest(bytes);
        let module = rt.cache.get_or_compile(&rt.engine, &digest, bytes)?;
        manifest::check_shape(&module)?;
        let pre = rt
            .linker
            .instantiate_pre(&module)
            .map_err(|e| Error::Compile(super::error::one_line(format_args!("{e:#}"))))?;

        // Instantiate once: read the manifest and the constant answers, before anyone relies on it.
        let mut loaded = Self {
            digest,
            manifest: ModuleManifest::placeholder(),
            pre,
            allow_create_on_update: false,
            allow_unconditional_update: true,
        };
        let caller = CallerInfo {
            module: "(loading)".into(),
            request_id: String::new(),
            resource: ResourceInfo {
                group: String::new(),
                version: String::new(),
                kind: String::new(),
                plural: String::new(),
                namespaced: true,
            },
            dry_run: true,
        };
        let opts = SessionOptions {
            caller,
            in_after_hook: false,
            depth: 0,
        };
        let session = placement::block_here(loaded.session(runtime, opts, false));
        let mut session = session.map_err(Error::LoadCall)?;
        let raw = placement::block_here(session.manifest()).map_err(Error::LoadCall)?;
        let decoded = <abi::Manifest as prost::Message>::decode(raw.as_slice())
            .map_err(|e| Error::Manifest(format!("did not decode: {e}")))?;
        let manifest = ModuleManifest::from_abi(decoded)?;
        manifest.check_grants(&module)?;
        let mut ask = |op: Op| -> Result<bool> {
            let request = abi::Request {
                context: None,
                operation: Some(op),
            };
            let resp = placement::block_here(session.call(&request)).map_err(Error::LoadCall)?;
            if !resp.error.is_empty() {
                return Err(Error::Manifest(format!(
                    "module answered with an error: {}",
                    resp.error
                )));
            }
            Ok(resp.allowed)
        };
        if manifest.implements(Operation::AllowCreateOnUpdate) {
            loaded.allow_create_on_update = ask(Op::AllowCreateOnUpdate(Default::default()))?;
        }
        if manifest.implements(Operation::AllowUnconditionalUpdate) {
            loaded.allow_unconditional_update =
                ask(Op::AllowUnconditionalUpdate(Default::default()))?;
        }
        drop(session);
        loaded.manifest = manifest;
        Ok(loaded)
    }

    /// The module's name (from its manifest).
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The SHA-256 of the module's bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The checked manifest.
    pub fn manifest(&self) -> &ModuleManifest {
        &self.manifest
    }

    /// The module's answer to allow_create_on_update (asked at load).
    pub fn allow_create_on_update(&self) -> bool {
        self.allow_create_on_update
    }

    /// The module's answer to allow_unconditional_update (asked at load).
    pub fn allow_unconditional_update(&self) -> bool {
        self.allow_unconditional_update
    }

    /// Sends one request to a fresh instance of the module, on the calling thread (blocking for
    /// up to the call deadline). The registry path is `crate::wasm::WasmStrategy`; this is for
    /// benchmarks and tools.
    ///
    /// # Errors
    ///
    /// The call trapped, overran, exceeded a cap or answered garbage.
    pub fn call(
        &self,
        runtime: &Runtime,
        caller: CallerInfo,
        request: &abi::Request,
    ) -> std::result::Result<abi::Response, super::CallFailure> {
        let opts = SessionOptions {
            caller,
            in_after_hook: false,
            depth: 0,
        };
        let session = self.session(runtime, opts, false);
        placement::block_here(async { session.await?.call(request).await })
    }

    /// Sends one request to a fresh instance of the module from an async task: started right
    /// here on the worker and moved to a blocking thread if it runs into its first epoch tick,
    /// or run on a blocking thread from the start when the module may block in a host function
    /// (see [`placement`]).
    pub(crate) async fn call_from_task(
        self: &Arc<Self>,
        runtime: &Runtime,
        opts: SessionOptions,
        request: abi::Request,
    ) -> std::result::Result<abi::Response, super::CallFailure> {
        let grants = &self.manifest.grants;
        let may_block = grants.get || grants.list || grants.apply;
        let (module, runtime) = (self.clone(), runtime.clone());
        let session = Box::pin(async move {
            let session = module.session(&runtime, opts, !may_block);
            session.await?.call(&request).await
        });
        match may_block {
            true => placement::on_blocking_thread(session).await,
            false => placement::inline_first(session).await,
        }
    }

    /// A fresh instance of the module with `runtime`'s limits, serving every step of one
    /// registry phase; `on_worker` as for `Session::new`.
    async fn session(
        &self,
        runtime: &Runtime,
        opts: SessionOptions,
        on_worker: bool,
    ) -> std::result::Result<Session, super::CallFailure> {
        let grants = self.manifest.grants.clone();
        Session::new(runtime, &self.pre, grants, opts, on_worker).await
    }
}
