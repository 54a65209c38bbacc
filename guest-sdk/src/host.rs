//! Host functions a strategy can call: `log` (always granted), and `get`, `list` and `apply`
//! when the manifest asks for them ([`crate::Strategy::HOST_FUNCTIONS`]).
//!
//! Compiled for `wasm32` these call the imports of module `strategy-host`; compiled natively they
//! record into thread-locals, which the [`testing`] module reads back in unit tests.

use serde_json::Value;

use crate::abi;

/// The severity of a log line.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::host::{log, LogLevel};
/// log(LogLevel::Warn, "quota almost used up");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Something failed.
    Error = 1,
    /// Something looks wrong.
    Warn = 2,
    /// Normal operation.
    Info = 3,
    /// Detail for debugging.
    Debug = 4,
}

/// Writes one line into the host's log, tagged with the module's name and the request's id.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::host::{log, testing, LogLevel};
/// log(LogLevel::Info, "hello");
/// assert_eq!(testing::take_logs(), [(LogLevel::Info, "hello".to_string())]);
/// ```
pub fn log(level: LogLevel, message: &str) {
    imp::log(level, message)
}

/// Logs at [`LogLevel::Info`].
///
/// # Examples
///
/// ```
/// strategy_guest_sdk::host::info("project created");
/// ```
pub fn info(message: &str) {
    log(LogLevel::Info, message)
}

/// Reads one object (from the host's cache); `Ok(None)` when it does not exist. Needs
/// [`crate::HostFunction::Get`].
///
/// # Errors
///
/// The host's reason when it could not read (e.g. the resource is unknown).
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::host::{get, testing};
/// testing::put_object("", "quotas", "team-a", "default", serde_json::json!({"spec": {}}));
/// assert!(get("", "quotas", "team-a", "default").unwrap().is_some());
/// assert!(get("", "quotas", "team-a", "other").unwrap().is_none());
/// ```
pub fn get(
    group: &str,
    plural: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>, String> {
    let req = abi::GetRequest {
        group: group.into(),
        plural: plural.into(),
        namespace: namespace.into(),
        name: name.into(),
    };
    let resp: abi::GetResponse = imp::get(req)?;
    if !resp.error.is_empty() {
        return Err(resp.error);
    }
    if !resp.found {
        return Ok(None);
    }
    serde_json::from_slice(&resp.object)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Lists objects of a resource, in one namespace (or all, with `""`) and matching a label
/// selector (`""` for all). Needs [`crate::HostFunction::List`].
///
/// # Errors
///
/// The host's reason when it could not list.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::host::{list, testing};
/// testing::put_object("", "quotas", "team-b", "q1", serde_json::json!({}));
/// assert_eq!(list("", "quotas", "team-b", "").unwrap().len(), 1);
/// ```
pub fn list(
    group: &str,
    plural: &str,
    namespace: &str,
    label_selector: &str,
) -> Result<Vec<Value>, String> {
    let req = abi::ListRequest {
        group: group.into(),
        plural: plural.into(),
        namespace: namespace.into(),
        label_selector: label_selector.into(),
    };
    let resp: abi::ListResponse = imp::list(req)?;
    if !resp.error.is_empty() {
        return Err(resp.error);
    }
    resp.items
        .iter()
        .map(|b| serde_json::from_slice(b).map_err(|e| e.to_string()))
        .collect()
}

/// Server-side applies another object through the host's registry, with that resource's own
/// strategy: the module is the field manager and applies with force, as a controller does, so
/// fields other managers set are kept and fields the module stops sending are removed. Returns
/// the object as stored. Only After hooks may call it, it needs
/// [`crate::HostFunction::Apply`], and the host limits how deep hooks may nest.
///
/// # Errors
///
/// The host's reason: not granted, not in an After hook, too deep, or the write failed (the
/// target's strategy refused it, for one).
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::host::{apply, testing};
/// let quota = serde_json::json!({"apiVersion": "v1", "kind": "Quota", "metadata": {"name": "default"}});
/// apply(&quota).unwrap();
/// assert_eq!(testing::take_applied(), [quota]);
/// ```
pub fn apply(object: &Value) -> Result<Value, String> {
    let req = abi::ApplyRequest {
        object: serde_json::to_vec(object).map_err(|e| e.to_string())?,
    };
    let resp: abi::ApplyResponse = imp::apply(req)?;
    if !resp.error.is_empty() {
        return Err(resp.error);
    }
    serde_json::from_slice(&resp.object).map_err(|e| e.to_string())
}

#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod imp {
    use prost::Message;

    use super::*;

    #[link(wasm_import_module = "strategy-host")]
    extern "C" {
        #[link_name = "log"]
        fn host_log(level: i32, ptr: *const u8, len: usize);
        #[link_name = "get"]
        fn host_get(ptr: *const u8, len: usize) -> u64;
        #[link_name = "list"]
        fn host_list(ptr: *const u8, len: usize) -> u64;
        #[link_name = "apply"]
        fn host_apply(ptr: *const u8, len: usize) -> u64;
    }

    pub(super) fn log(level: LogLevel, message: &str) {
        // SAFETY: the host only reads `len` bytes at `ptr`, which `message` keeps alive.
        unsafe { host_log(level as i32, message.as_ptr(), message.len()) }
    }

    fn call<M: Message + Default>(
        f: unsafe extern "C" fn(*const u8, usize) -> u64,
        req: impl Message,
    ) -> Result<M, String> {
        let bytes = req.encode_to_vec();
        // SAFETY: the host reads the request while `bytes` is alive and answers with a buffer it
        // allocated through our `alloc` export, which `take_buffer` reclaims.
        let packed = unsafe { f(bytes.as_ptr(), bytes.len()) };
        M::decode(crate::export::take_buffer(packed).as_slice())
            .map_err(|e| format!("host answer did not decode: {e}"))
    }

    pub(super) fn get(req: abi::GetRequest) -> Result<abi::GetResponse, String> {
        call(host_get, req)
    }

    pub(super) fn list(req: abi::ListRequest) -> Result<abi::ListResponse, String> {
        call(host_list, req)
    }

    pub(super) fn apply(req: abi::ApplyRequest) -> Result<abi::ApplyResponse, String> {
        call(host_apply, req)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::*;

    pub(super) fn log(level: LogLevel, message: &str) {
        eprintln!("[strategy {level:?}] {message}");
        testing::STATE.with(|s| s.borrow_mut().logs.push((level, message.to_owned())));
    }

    pub(super) fn get(req: abi::GetRequest) -> Result<abi::GetResponse, String> {
        let key = (req.group, req.plural, req.namespace, req.name);
        let found = testing::STATE.with(|s| s.borrow().objects.get(&key).cloned());
        Ok(abi::GetResponse {
            found: found.is_some(),
            object: found
                .map(|v| v.to_string().into_bytes())
                .unwrap_or_default(),
            error: String::new(),
        })
    }

    pub(super) fn list(req: abi::ListRequest) -> Result<abi::ListResponse, String> {
        let items = testing::STATE.with(|s| {
            s.borrow()
                .objects
                .iter()
                .filter(|((g, p, ns, _), _)| {
                    *g == req.group
                        && *p == req.plural
                        && (req.namespace.is_empty() || *ns == req.namespace)
                })
                .map(|(_, v)| v.to_string().into_bytes())
                .collect()
        });
        Ok(abi::ListResponse {
            items,
            error: String::new(),
        })
    }

    pub(super) fn apply(req: abi::ApplyRequest) -> Result<abi::ApplyResponse, String> {
        let obj: Value = serde_json::from_slice(&req.object).map_err(|e| e.to_string())?;
        testing::STATE.with(|s| s.borrow_mut().applied.push(obj));
        Ok(abi::ApplyResponse {
            object: req.object,
            error: String::new(),
        })
    }
}

/// Native stand-ins for the host, for a strategy's unit tests (not compiled for `wasm32`):
/// what was logged and applied on this thread, and objects for `get`/`list` to find.
#[cfg(not(target_arch = "wasm32"))]
pub mod testing {
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::LogLevel;

    type Key = (String, String, String, String);

    #[derive(Default)]
    pub(super) struct State {
        pub(super) logs: Vec<(LogLevel, String)>,
        pub(super) applied: Vec<Value>,
        pub(super) objects: BTreeMap<Key, Value>,
    }

    thread_local! {
        pub(super) static STATE: RefCell<State> = RefCell::default();
    }

    /// Takes the lines logged on this thread so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::host::{info, testing};
    /// info("one");
    /// assert_eq!(testing::take_logs().len(), 1);
    /// assert!(testing::take_logs().is_empty());
    /// ```
    pub fn take_logs() -> Vec<(LogLevel, String)> {
        STATE.with(|s| std::mem::take(&mut s.borrow_mut().logs))
    }

    /// Takes the objects passed to [`super::apply`] on this thread so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::host::{apply, testing};
    /// apply(&serde_json::json!({"kind": "Quota"})).unwrap();
    /// assert_eq!(testing::take_applied().len(), 1);
    /// ```
    pub fn take_applied() -> Vec<Value> {
        STATE.with(|s| std::mem::take(&mut s.borrow_mut().applied))
    }

    /// Makes an object visible to [`super::get`] and [`super::list`] on this thread.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::host::{get, testing};
    /// testing::put_object("g", "things", "", "a", serde_json::json!({"x": 1}));
    /// assert_eq!(get("g", "things", "", "a").unwrap().unwrap()["x"], 1);
    /// ```
    pub fn put_object(group: &str, plural: &str, namespace: &str, name: &str, obj: Value) {
        let key = (group.into(), plural.into(), namespace.into(), name.into());
        STATE.with(|s| s.borrow_mut().objects.insert(key, obj));
    }
}
