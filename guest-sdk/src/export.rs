//! The wasm ABI glue behind `export_strategy!`: the allocator pair and the two entry points.
//! Not for direct use; the functions are only meaningful as the module's exports.

use std::alloc::Layout;
use std::cell::Cell;

use crate::strategy::Strategy;

fn layout(len: u32) -> Layout {
    Layout::from_size_align(len as usize, 1).expect("a byte buffer layout")
}

thread_local! {
    /// The answer of the latest `manifest` or `call`: the host reads it after the export
    /// returns, and the next export frees it (an instance may serve many calls).
    static ANSWER: Cell<Box<[u8]>> = Cell::new(Box::default());
}

/// Keeps `buf` as the answer (freeing the previous one) and packs its address and length.
fn pack(buf: Vec<u8>) -> u64 {
    let buf = buf.into_boxed_slice();
    let packed = ((buf.as_ptr() as usize as u64) << 32) | buf.len() as u64;
    ANSWER.with(|answer| answer.set(buf));
    packed
}

/// `alloc(len) -> ptr`: a buffer the host writes a request (or a host function's answer) into.
/// Zero bytes give pointer 0.
pub fn alloc(len: u32) -> u32 {
    if len == 0 {
        return 0;
    }
    #[allow(unsafe_code)]
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { std::alloc::alloc(layout(len)) };
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout(len));
    }
    ptr as usize as u32
}

/// `dealloc(ptr, len)`: frees a buffer from [`alloc`] the host did not hand to the module (a
/// buffer of `len` bytes aligned to 1). Answers of `manifest` and `call` are not freed with it:
/// the module frees each at its next export call.
pub fn dealloc(ptr: u32, len: u32) {
    if len == 0 || ptr == 0 {
        return;
    }
    #[allow(unsafe_code)]
    // SAFETY: the host passes back a pointer and length this module handed out (ABI contract);
    // it was allocated with exactly this layout.
    unsafe {
        std::alloc::dealloc(ptr as usize as *mut u8, layout(len))
    }
}

/// Copies a packed buffer the host allocated with [`alloc`] and frees it.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn take_buffer(packed: u64) -> Vec<u8> {
    let (ptr, len) = ((packed >> 32) as u32, packed as u32);
    if ptr == 0 || len == 0 {
        return Vec::new();
    }
    #[allow(unsafe_code)]
    // SAFETY: the host wrote `len` bytes into a buffer it obtained from `alloc(len)`.
    let bytes =
        unsafe { std::slice::from_raw_parts(ptr as usize as *const u8, len as usize) }.to_vec();
    dealloc(ptr, len);
    bytes
}

/// `manifest() -> packed`: the encoded manifest, in a buffer kept until the next export call.
pub fn manifest<S: Strategy>() -> u64 {
    install_panic_hook();
    pack(crate::dispatch::manifest::<S>())
}

/// `call(ptr, len) -> packed`: decodes the request the host wrote at `ptr` (from `alloc(len)`,
/// freed here), runs the strategy, and returns the encoded response (kept until the next call).
pub fn call<S: Strategy + Default>(ptr: u32, len: u32) -> u64 {
    install_panic_hook();
    let request = take_buffer((u64::from(ptr) << 32) | u64::from(len));
    pack(crate::dispatch::handle(&S::default(), &request))
}

/// `manifest() -> packed` of an admission policy.
pub fn policy_manifest<P: crate::AdmissionPolicy>() -> u64 {
    install_panic_hook();
    pack(crate::policy_dispatch::policy_manifest::<P>())
}

/// `call(ptr, len) -> packed` of an admission policy.
pub fn policy_call<P: crate::AdmissionPolicy + Default>(ptr: u32, len: u32) -> u64 {
    install_panic_hook();
    let request = take_buffer((u64::from(ptr) << 32) | u64::from(len));
    pack(crate::policy_dispatch::handle_policy(
        &P::default(),
        &request,
    ))
}

/// `manifest() -> packed` of an authorizer.
pub fn authorizer_manifest<A: crate::Authorizer>() -> u64 {
    install_panic_hook();
    pack(crate::authorizer_dispatch::authorizer_manifest::<A>())
}

/// `call(ptr, len) -> packed` of an authorizer.
pub fn authorizer_call<A: crate::Authorizer + Default>(ptr: u32, len: u32) -> u64 {
    install_panic_hook();
    let request = take_buffer((u64::from(ptr) << 32) | u64::from(len));
    pack(crate::authorizer_dispatch::handle_authorizer(
        &A::default(),
        &request,
    ))
}

/// Sends a panic's message to the host's log before the module traps.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            crate::host::log(crate::host::LogLevel::Error, &format!("panic: {info}"))
        }))
    });
}
