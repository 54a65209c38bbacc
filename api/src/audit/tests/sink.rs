//! The log backend: a line per event, never blocking the caller, dropping (and counting)
//! what a full queue cannot take.

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::Buffer;
use crate::audit::event::{Event, Level};
use crate::audit::sink::Sink;
use crate::audit::LogRotation;

fn event(n: usize) -> Box<Event> {
    Box::new(Event {
        level: Level::Metadata,
        audit_id: format!("id-{n}"),
        verb: "get".into(),
        ..Event::default()
    })
}

#[test]
fn writes_one_line_per_event_and_flushes_on_drop() {
    let out = Buffer::default();
    let sink = Sink::with_writer(Box::new(out.clone()), 16);
    for n in 0..5 {
        sink.process(event(n));
    }
    assert_eq!(sink.metrics().events.get(), 5);
    assert_eq!(sink.metrics().errors.get(), 0);
    drop(sink);
    let ids: Vec<String> = out
        .events()
        .iter()
        .map(|e| e["auditID"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["id-0", "id-1", "id-2", "id-3", "id-4"]);
}

#[test]
fn lines_are_flushed_without_waiting_for_shutdown() {
    let out = Buffer::default();
    let sink = Sink::with_writer(Box::new(out.clone()), 16);
    sink.process(event(1));
    let deadline = Instant::now() + Duration::from_secs(10);
    while out.events().is_empty() {
        assert!(Instant::now() < deadline, "the event was never written");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(sink);
}

/// A writer that says when a write begins, then waits until the test lets it go (or, so a
/// failing test can never hang, a minute passes).
struct Stuck {
    entered: mpsc::Sender<()>,
    gate: mpsc::Receiver<()>,
    out: Buffer,
}

impl Write for Stuck {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.entered.send(());
        let _ = self.gate.recv_timeout(Duration::from_secs(60));
        self.out.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_full_queue_drops_events_instead_of_blocking() {
    let (release, gate) = mpsc::channel();
    let (entered, writing) = mpsc::channel();
    let out = Buffer::default();
    let stuck = Stuck {
        entered,
        gate,
        out: out.clone(),
    };
    let sink = Sink::with_writer(Box::new(stuck), 2);
    // The first event reaches the writer, which blocks writing it out; only then is the
    // queue's size all that stands between the caller and the disk.
    sink.process(event(0));
    writing
        .recv_timeout(Duration::from_secs(30))
        .expect("the writer never began writing");
    let started = Instant::now();
    for n in 1..100 {
        sink.process(event(n));
    }
    let waited = started.elapsed();
    let lost = sink.metrics().errors.get();
    let events = sink.metrics().events.get();
    // Let the writer go before asserting, so a failure cannot leave the sink's drop waiting.
    drop(release);
    drop(sink);
    assert!(
        waited < Duration::from_secs(1),
        "process waited {waited:?} on the writer"
    );
    // The writer holds the first event and the queue two more: the other 97 are dropped.
    assert_eq!(lost, 97);
    assert_eq!(events, 100);
    let ids: Vec<String> = out
        .events()
        .iter()
        .map(|e| e["auditID"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["id-0", "id-1", "id-2"]);
}

#[test]
fn opens_a_file_for_appending_in_a_new_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs/audit.log");
    for n in 0..2 {
        let sink = Sink::open(&path, 4, LogRotation::default()).unwrap();
        sink.process(event(n));
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let err = Sink::open(
        &dir.path().join("logs/audit.log/x"),
        4,
        LogRotation::default(),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("audit.log/x"), "{err}");
}
