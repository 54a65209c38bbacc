//! An allocator for strategy modules that want a fresh instance per call (wasm only, feature
//! `arena-allocator`, off by default): a bump allocator over linear memory.
//!
//! Such a module does not export `_initialize`, so the host gives every call a fresh instance
//! and nothing allocated during a call outlives it. By default modules are instead reactors
//! whose instances serve call after call with Rust's own allocator: a kept instance costs no
//! instantiation, which was most of a call.
//! Allocation is a pointer bump from the end of the module's data (`__heap_base`); `dealloc`
//! takes back only the most recent block (the common temporary) and `realloc` grows the most
//! recent block in place; memory grows (`memory.grow`) only when the module's initial pages run
//! out. A general-purpose allocator would instead call `memory.grow` on its first allocation in
//! every instance, and each growth costs the host page-protection changes worth more than the
//! whole call. Build modules that use it with enough initial memory for a typical call (rustflags
//! `-C link-arg=--initial-memory=4194304` give 4 MiB).

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicUsize, Ordering};

const PAGE: usize = 64 * 1024;

extern "C" {
    /// Where the linker put the end of the data and stack: the heap starts here.
    static __heap_base: u8;
}

/// The bump allocator; see the module documentation.
#[derive(Debug)]
pub struct CallArena {
    /// The first free byte (0 until the first allocation).
    next: AtomicUsize,
}

impl CallArena {
    /// An arena that starts at `__heap_base` on first use.
    pub const fn new() -> Self {
        Self {
            next: AtomicUsize::new(0),
        }
    }

    fn next(&self) -> usize {
        match self.next.load(Ordering::Relaxed) {
            // Only the address of the linker-provided symbol is taken, never its value.
            0 => core::ptr::addr_of!(__heap_base) as usize,
            n => n,
        }
    }

    /// Makes linear memory reach `end`; false when the host refuses to grow it.
    fn reach(end: usize) -> bool {
        let limit = core::arch::wasm32::memory_size(0) * PAGE;
        if end <= limit {
            return true;
        }
        let pages = (end - limit).div_ceil(PAGE);
        core::arch::wasm32::memory_grow(0, pages) != usize::MAX
    }
}

impl Default for CallArena {
    fn default() -> Self {
        Self::new()
    }
}

#[allow(unsafe_code)]
// SAFETY: blocks never overlap (each starts at or after the end of the previous one, and only
// the last block is ever taken back or extended), they are aligned as the layout asks, and
// wasm32 guests are single-threaded, so the relaxed atomic is never raced.
unsafe impl GlobalAlloc for CallArena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let start = self.next().next_multiple_of(layout.align());
        let Some(end) = start.checked_add(layout.size()) else {
            return core::ptr::null_mut();
        };
        if !Self::reach(end) {
            return core::ptr::null_mut();
        }
        self.next.store(end, Ordering::Relaxed);
        start as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ptr as usize + layout.size() == self.next() {
            self.next.store(ptr as usize, Ordering::Relaxed);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let start = ptr as usize;
        if start + layout.size() == self.next() {
            let Some(end) = start.checked_add(new_size) else {
                return core::ptr::null_mut();
            };
            if !Self::reach(end) {
                return core::ptr::null_mut();
            }
            self.next.store(end, Ordering::Relaxed);
            return ptr;
        }
        // SAFETY (of the calls below): the new layout is valid (the caller's contract), the old
        // block is live for `layout.size()` bytes, and the new one does not overlap it.
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let new = self.alloc(new_layout);
        if !new.is_null() {
            core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}
