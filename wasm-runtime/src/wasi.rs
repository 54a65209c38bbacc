//! A WASI preview-1 shim that grants nothing, so modules built by toolchains that import WASI
//! (Go's `GOOS=wasip1`) run in the same sandbox as modules that import only `strategy-host`:
//! no arguments, no environment, no preopened directories, no sockets; stdout and stderr lines go
//! to the module's capped log; the clocks are virtual (they start above zero, advance on every
//! read and jump forward when the module sleeps, so a sleep never holds a host thread), unless
//! the runtime grants time (`RuntimeConfig::real_clock`: the host's clocks, still jumping forward
//! on a sleep); random
//! bytes come from a generator seeded per instance; `proc_exit` ends the call as a trap; every
//! other call answers an errno.
//!
//! Written here rather than taken from wasmtime-wasi because its preview-1 `poll_oneoff` sleeps
//! in host time (a `time.Sleep(time.Hour)` would hold the call's thread for an hour, past any
//! epoch deadline, which only interrupts wasm code), and the handful of calls a reactor needs is
//! smaller than the crate's dependency tree.

use wasmtime::{Caller, FuncType, Linker, Val, ValType};

use super::host_functions::{self, CallState};

/// The import module of WASI preview 1.
pub(crate) const WASI_MODULE: &str = "wasi_snapshot_preview1";

// The errno values of preview 1 the shim answers.
const SUCCESS: i32 = 0;
const BADF: i32 = 8;
const FAULT: i32 = 21;
const INVAL: i32 = 28;
const NOTCAPABLE: i32 = 76;

/// Where the virtual clocks start: one second past their epoch (Go's runtime treats a zero
/// monotonic clock as unset).
const CLOCK_START_NS: u64 = 1_000_000_000;
/// How far the virtual clocks move on each read, so that time passes for the module.
const CLOCK_STEP_NS: u64 = 1_000;

/// The WASI state of one instance: it lives as long as the instance, across calls.
#[derive(Debug)]
pub(crate) struct WasiState {
    /// The virtual clocks' reading, in nanoseconds; with time granted, how far sleeps have
    /// moved the clocks past the host's.
    clock_ns: u64,
    /// Time granted: the host's clocks when the instance started (`None`: virtual clocks).
    real: Option<RealClock>,
    /// The random generator's state (splitmix64).
    rng: u64,
    /// A partial line written to stdout (fd 1) or stderr (fd 2), until its newline.
    pending: [Vec<u8>; 2],
}

/// The host's clocks as an instance granted time started.
#[derive(Debug)]
struct RealClock {
    started: std::time::Instant,
    /// Nanoseconds since the Unix epoch at `started`.
    unix_ns: u64,
}

impl WasiState {
    /// A fresh instance's state, its generator seeded from the host's; `real_clock`: the
    /// clocks read the host's time (still moved forward, never waited on, by sleeps).
    pub(crate) fn new(real_clock: bool) -> Self {
        let real = real_clock.then(|| RealClock {
            started: std::time::Instant::now(),
            unix_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        });
        Self {
            clock_ns: if real.is_some() { 0 } else { CLOCK_START_NS },
            real,
            rng: rand::random(),
            pending: [Vec::new(), Vec::new()],
        }
    }

    /// The monotonic clock (which the process and thread CPU clocks read too).
    fn now(&mut self) -> u64 {
        match &self.real {
            None => {
                self.clock_ns += CLOCK_STEP_NS;
                self.clock_ns
            }
            Some(real) => CLOCK_START_NS + real.started.elapsed().as_nanos() as u64 + self.clock_ns,
        }
    }

    /// The realtime clock: the host's wall time when time is granted, else the virtual clock.
    fn wall(&mut self) -> u64 {
        let since_start = self.now();
        match &self.real {
            None => since_start,
            Some(real) => real.unix_ns + (since_start - CLOCK_START_NS),
        }
    }

    /// Moves the clocks forward to `deadline` on the monotonic clock (a sleep, over at once).
    fn skip_to(&mut self, deadline: u64) {
        let now = self.now();
        match self.real {
            None => self.clock_ns = self.clock_ns.max(deadline),
            Some(_) => self.clock_ns += deadline.saturating_sub(now),
        }
    }

    fn fill_random(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    }
}

/// The calls [`define`] implements.
const IMPLEMENTED: [&str; 17] = [
    "args_sizes_get",
    "environ_sizes_get",
    "args_get",
    "environ_get",
    "clock_time_get",
    "clock_res_get",
    "random_get",
    "fd_write",
    "fd_read",
    "fd_fdstat_get",
    "fd_fdstat_set_flags",
    "fd_close",
    "fd_prestat_get",
    "fd_prestat_dir_name",
    "poll_oneoff",
    "sched_yield",
    "proc_exit",
];

/// Defines the shim's functions in `linker`.
pub(crate) fn define(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    let m = WASI_MODULE;
    linker.func_wrap(m, "args_sizes_get", two_zeros)?;
    linker.func_wrap(m, "environ_sizes_get", two_zeros)?;
    linker.func_wrap(m, "args_get", |_: Caller<'_, CallState>, _: i32, _: i32| {
        SUCCESS
    })?;
    linker.func_wrap(
        m,
        "environ_get",
        |_: Caller<'_, CallState>, _: i32, _: i32| SUCCESS,
    )?;
    linker.func_wrap(m, "clock_time_get", clock_time_get)?;
    linker.func_wrap(
        m,
        "clock_res_get",
        |mut c: Caller<'_, CallState>, _: i32, out: i32| {
            write(&mut c, out, &CLOCK_STEP_NS.to_le_bytes())
        },
    )?;
    linker.func_wrap(m, "random_get", random_get)?;
    linker.func_wrap(m, "fd_write", fd_write)?;
    linker.func_wrap(m, "fd_read", fd_read)?;
    linker.func_wrap(m, "fd_fdstat_get", fd_fdstat_get)?;
    linker.func_wrap(
        m,
        "fd_fdstat_set_flags",
        |_: Caller<'_, CallState>, fd: i32, _: i32| stdio_or_badf(fd),
    )?;
    linker.func_wrap(m, "fd_close", |_: Caller<'_, CallState>, _: i32| BADF)?;
    // No preopened directories: the first descriptor past stdio is not one.
    linker.func_wrap(
        m,
        "fd_prestat_get",
        |_: Caller<'_, CallState>, _: i32, _: i32| BADF,
    )?;
    linker.func_wrap(
        m,
        "fd_prestat_dir_name",
        |_: Caller<'_, CallState>, _: i32, _: i32, _: i32| BADF,
    )?;
    linker.func_wrap(m, "poll_oneoff", poll_oneoff)?;
    linker.func_wrap(m, "sched_yield", |_: Caller<'_, CallState>| SUCCESS)?;
    linker.func_wrap(
        m,
        "proc_exit",
        |_: Caller<'_, CallState>, code: i32| -> wasmtime::Result<()> {
            wasmtime::bail!("the module exited (proc_exit with status {code})")
        },
    )?;
    Ok(())
}

/// Defines every WASI import of a module the shim does not implement as a function of the
/// import's type answering `ENOTCAPABLE` (zeros for a signature without an errno).
pub(crate) fn define_refusals(
    linker: &mut Linker<CallState>,
    module: &wasmtime::Module,
) -> wasmtime::Result<()> {
    let engine = module.engine().clone();
    let mut defined = std::collections::BTreeSet::new();
    for import in module.imports() {
        let (wasmtime::ExternType::Func(ty), WASI_MODULE) = (import.ty(), import.module()) else {
            continue;
        };
        // A module may import one function more than once (Go's does).
        if IMPLEMENTED.contains(&import.name()) || !defined.insert(import.name()) {
            continue;
        }
        let name = import.name().to_owned();
        let results: Vec<ValType> = ty.results().collect();
        let ty = FuncType::new(&engine, ty.params(), ty.results());
        linker.func_new(WASI_MODULE, &name.clone(), ty, move |caller, _, out| {
            let c = &caller.data().caller;
            tracing::debug!(target: "strategy", module = %c.module, request = %c.request_id, "WASI call {name} refused: not granted");
            for (slot, ty) in out.iter_mut().zip(&results) {
                *slot = match ty {
                    ValType::I32 => Val::I32(NOTCAPABLE),
                    ValType::I64 => Val::I64(0),
                    ValType::F32 => Val::F32(0),
                    ValType::F64 => Val::F64(0),
                    _ => Val::null_func_ref(),
                };
            }
            Ok(())
        })?;
    }
    Ok(())
}

fn two_zeros(mut c: Caller<'_, CallState>, count: i32, size: i32) -> i32 {
    match write(&mut c, count, &0u32.to_le_bytes()) {
        SUCCESS => write(&mut c, size, &0u32.to_le_bytes()),
        errno => errno,
    }
}

fn clock_time_get(mut c: Caller<'_, CallState>, id: i32, _precision: i64, out: i32) -> i32 {
    // realtime, monotonic, process and thread CPU time: all read the one virtual clock.
    if !(0..=3).contains(&id) {
        return INVAL;
    }
    let wasi = &mut c.data_mut().wasi;
    let now = if id == 0 { wasi.wall() } else { wasi.now() };
    write(&mut c, out, &now.to_le_bytes())
}

fn random_get(mut c: Caller<'_, CallState>, buf: i32, len: i32) -> i32 {
    let mut bytes = vec![0; len as u32 as usize];
    c.data_mut().wasi.fill_random(&mut bytes);
    write(&mut c, buf, &bytes)
}

fn stdio_or_badf(fd: i32) -> i32 {
    match fd {
        0..=2 => SUCCESS,
        _ => BADF,
    }
}

/// stdout and stderr go to the module's log, a line at a time (info and warn); every byte is
/// reported written, also those past the log's per-call cap, which are dropped.
fn fd_write(mut c: Caller<'_, CallState>, fd: i32, iovs: i32, count: i32, written: i32) -> i32 {
    if !(1..=2).contains(&fd) {
        return BADF;
    }
    let Some((bytes, total)) = gather(&mut c, iovs, count) else {
        return FAULT;
    };
    let level = if fd == 1 { 3 } else { 2 };
    let mut lines = Vec::new();
    let pending = &mut c.data_mut().wasi.pending[fd as usize - 1];
    for &byte in &bytes {
        if byte == b'\n' || pending.len() >= host_functions::MAX_LOG_LINE {
            lines.push(std::mem::take(pending));
        }
        if byte != b'\n' {
            pending.push(byte);
        }
    }
    for line in lines {
        host_functions::emit_log(c.data_mut(), level, &String::from_utf8_lossy(&line));
    }
    write(&mut c, written, &total.to_le_bytes())
}

/// stdin is empty; other descriptors do not exist.
fn fd_read(mut c: Caller<'_, CallState>, fd: i32, _iovs: i32, _count: i32, read: i32) -> i32 {
    match fd {
        0 => write(&mut c, read, &0u32.to_le_bytes()),
        _ => BADF,
    }
}

/// stdio are character devices with no rights beyond reading and writing; nothing else exists.
fn fd_fdstat_get(mut c: Caller<'_, CallState>, fd: i32, out: i32) -> i32 {
    if !(0..=2).contains(&fd) {
        return BADF;
    }
    const CHARACTER_DEVICE: u8 = 2;
    const RIGHT_FD_READ: u64 = 1 << 1;
    const RIGHT_FD_WRITE: u64 = 1 << 6;
    let rights = if fd == 0 {
        RIGHT_FD_READ
    } else {
        RIGHT_FD_WRITE
    };
    let mut stat = [0u8; 24];
    stat[0] = CHARACTER_DEVICE;
    stat[8..16].copy_from_slice(&rights.to_le_bytes());
    write(&mut c, out, &stat)
}

/// Clock subscriptions complete at once, the virtual clock moving to the earliest of them
/// (a sleep costs no host time); descriptor subscriptions complete with `EBADF`.
fn poll_oneoff(mut c: Caller<'_, CallState>, input: i32, output: i32, n: i32, events: i32) -> i32 {
    const SUBSCRIPTION: usize = 48;
    const EVENT: usize = 32;
    const CLOCK: u8 = 0;
    const ABSTIME: u16 = 1;
    let n = n as u32 as usize;
    if n == 0 {
        return INVAL;
    }
    let Some(subs) = read(&mut c, input, n * SUBSCRIPTION) else {
        return FAULT;
    };
    let wasi = &mut c.data_mut().wasi;
    let now = wasi.now();
    let deadline = |sub: &[u8]| {
        let timeout = u64::from_le_bytes(sub[24..32].try_into().expect("8 bytes"));
        let flags = u16::from_le_bytes(sub[40..42].try_into().expect("2 bytes"));
        match flags & ABSTIME {
            0 => now.saturating_add(timeout),
            _ => timeout,
        }
    };
    let subs: Vec<&[u8]> = subs.chunks(SUBSCRIPTION).collect();
    let earliest = subs
        .iter()
        .filter(|s| s[8] == CLOCK)
        .map(|s| deadline(s))
        .min();
    if let Some(at) = earliest {
        wasi.skip_to(at);
    }
    let mut out = Vec::new();
    for sub in &subs {
        let errno = match sub[8] {
            CLOCK if deadline(sub) > earliest.unwrap_or(u64::MAX) => continue,
            CLOCK => 0u16,
            _ => BADF as u16,
        };
        let mut event = [0u8; EVENT];
        event[..8].copy_from_slice(&sub[..8]);
        event[8..10].copy_from_slice(&errno.to_le_bytes());
        event[10] = sub[8];
        out.extend_from_slice(&event);
    }
    let count = (out.len() / EVENT) as u32;
    match write(&mut c, output, &out) {
        SUCCESS => write(&mut c, events, &count.to_le_bytes()),
        errno => errno,
    }
}

/// The bytes of an iovec array (`count` entries of pointer and length), at most two log lines'
/// worth of them (the log drops the rest anyway), and how many bytes the entries hold in all.
fn gather(c: &mut Caller<'_, CallState>, iovs: i32, count: i32) -> Option<(Vec<u8>, u32)> {
    let entries = read(c, iovs, (count as u32 as usize).checked_mul(8)?)?;
    let (mut bytes, mut total) = (Vec::new(), 0u32);
    for entry in entries.chunks(8) {
        let ptr = u32::from_le_bytes(entry[..4].try_into().ok()?);
        let len = u32::from_le_bytes(entry[4..].try_into().ok()?);
        total = total.saturating_add(len);
        let room = (host_functions::MAX_LOG_LINE * 2).saturating_sub(bytes.len());
        bytes.extend_from_slice(&read(c, ptr as i32, (len as usize).min(room))?);
    }
    Some((bytes, total))
}

fn read(c: &mut Caller<'_, CallState>, ptr: i32, len: usize) -> Option<Vec<u8>> {
    host_functions::read_guest(c, ptr, len).ok()
}

fn write(c: &mut Caller<'_, CallState>, ptr: i32, bytes: &[u8]) -> i32 {
    let Ok(memory) = host_functions::memory(c) else {
        return FAULT;
    };
    match memory.write(&mut *c, ptr as u32 as usize, bytes) {
        Ok(()) => SUCCESS,
        Err(_) => FAULT,
    }
}
