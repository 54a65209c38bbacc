//! CPU time per operation of the processes a load run involves (the server, etcd, the load tool
//! itself), read from `/proc` around each measured phase: on a machine where they share the
//! cores, what each costs per operation says what bounds the throughput.

/// Clock ticks per second of `/proc/PID/stat`'s times (Linux's USER_HZ, 100 on every
/// architecture the kernel's ABI fixes it for).
const TICKS_PER_SECOND: f64 = 100.0;

/// The processes to account, by name; the load tool itself is always one (`load`).
#[derive(Debug, Clone, Default)]
pub struct CpuMeter {
    processes: Vec<(String, u32)>,
}

/// CPU seconds used so far by each of a meter's processes (`None`: it could not be read).
#[derive(Debug, Clone)]
pub struct CpuSnapshot(Vec<Option<f64>>);

impl CpuMeter {
    /// A meter of `processes` (`NAME=PID` each) and the load tool.
    ///
    /// # Errors
    /// A malformed `NAME=PID`.
    pub fn new(processes: &[String]) -> anyhow::Result<Self> {
        let mut named = processes
            .iter()
            .map(|p| {
                let (name, pid) = p
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("--cpu-of wants NAME=PID, not {p:?}"))?;
                Ok((name.to_string(), pid.parse()?))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        named.push(("load".into(), std::process::id()));
        Ok(Self { processes: named })
    }

    /// Whether any process beyond the load tool is accounted.
    pub fn is_empty(&self) -> bool {
        self.processes.len() <= 1
    }

    /// Each process's CPU time now.
    pub fn snapshot(&self) -> CpuSnapshot {
        CpuSnapshot(
            self.processes
                .iter()
                .map(|(_, pid)| cpu_seconds(*pid))
                .collect(),
        )
    }

    /// ` cpu_us/op=server:353,etcd:314,load:106`: each process's CPU microseconds per operation
    /// between two snapshots (empty when only the load tool is accounted).
    pub fn per_op(&self, before: &CpuSnapshot, after: &CpuSnapshot, ops: u64) -> String {
        if self.is_empty() || ops == 0 {
            return String::new();
        }
        let parts: Vec<String> = self
            .processes
            .iter()
            .zip(before.0.iter().zip(&after.0))
            .map(|((name, _), (b, a))| match (b, a) {
                (Some(b), Some(a)) => format!("{name}:{:.0}", (a - b) / ops as f64 * 1e6),
                _ => format!("{name}:-"),
            })
            .collect();
        format!(" cpu_us/op={}", parts.join(","))
    }
}

/// User plus system CPU seconds of process `pid` (fields 14 and 15 of `/proc/PID/stat`, counted
/// after the parenthesised command name, which may hold spaces).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name, field 3 (state) is index 0: utime (14) is index 11, stime (15) index 12.
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / TICKS_PER_SECOND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_accounted_as_it_works() {
        let meter = CpuMeter::new(&[format!("me={}", std::process::id())]).unwrap();
        let before = meter.snapshot();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        // Spin until the meter has seen 0.2 s of this process's CPU: fields other than its own
        // user and system time (its children's, its start time) would never get there.
        while meter.snapshot().0[0].unwrap() - before.0[0].unwrap() < 0.2 {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
            assert!(start.elapsed().as_secs() < 20, "no CPU time accounted");
        }
        let line = meter.per_op(&before, &meter.snapshot(), 2);
        assert!(line.starts_with(" cpu_us/op=me:"), "{line}");
        let me: f64 = line.split(['=', ',', ':']).nth(2).unwrap().parse().unwrap();
        assert!(me >= 100_000.0, "{line}");
        assert!(CpuMeter::new(&["nopid".into()]).is_err());
    }
}
