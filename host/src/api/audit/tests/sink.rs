//! The log backend: a line per event, never blocking the caller, dropping (and counting)
//! what a full queue cannot take.

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::Buffer;
use crate::api::audit::event::{Event, Level};
use crate::api::audit::sink::Sink;

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

/// A writer that waits until the test lets it go.
struct Stuck(mpsc::Receiver<()>, Buffer);

impl Write for Stuck {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.recv();
        self.1.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_full_queue_drops_events_instead_of_blocking() {
    let (release, gate) = mpsc::channel();
    let out = Buffer::default();
    let sink = Sink::with_writer(Box::new(Stuck(gate, out.clone())), 2);
    let started = Instant::now();
    for n in 0..100 {
        sink.process(event(n));
    }
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "process waited on the writer"
    );
    let lost = sink.metrics().errors.get();
    // The writer holds at most one event (stuck writing it) and the queue two.
    assert!(lost >= 97, "only {lost} dropped");
    assert_eq!(sink.metrics().events.get(), 100);
    drop(release);
    drop(sink);
    assert_eq!(out.events().len() as u64, 100 - lost);
}

#[test]
fn opens_a_file_for_appending_in_a_new_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs/audit.log");
    for n in 0..2 {
        let sink = Sink::open(&path, 4).unwrap();
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
    let err = Sink::open(&dir.path().join("logs/audit.log/x"), 4)
        .err()
        .unwrap();
    assert!(err.to_string().contains("audit.log/x"), "{err}");
}
