//! Load against a running host: a steady create load recorded request by request (here), to
//! watch a behaviour change (a strategy swapped in or out) land while traffic flows and prove no
//! request failed across it; and the parts api-load builds its figures from (the submodules).

pub mod cascade;
pub mod cpu;
pub mod etcd;
pub mod figures;
pub mod h2;
pub mod protobuf;
pub mod resources;
pub mod watch;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::call;

/// One create: when it was sent and answered, its status code, and the value at the load's
/// `mark` pointer in the answer (what the strategy in force decided), or the error body.
#[derive(Debug, Clone)]
pub struct Sample {
    /// When the request was sent.
    pub sent: Instant,
    /// When the answer arrived.
    pub done: Instant,
    /// The HTTP status code (0: no answer).
    pub code: u16,
    /// The answer's value at the mark pointer.
    pub mark: Option<Value>,
    /// The answer's body when the code was not 201.
    pub error: Option<String>,
}

/// Clients POSTing new objects in a loop until stopped.
pub struct CreateLoad {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    samples: Arc<Mutex<Vec<Sample>>>,
}

impl CreateLoad {
    /// Starts `clients` threads POSTing `object(n)` (n counts up per thread, unique across
    /// threads) to `collection_url`, recording the answer's value at `mark` (a JSON pointer).
    pub fn start(
        collection_url: &str,
        clients: usize,
        mark: &'static str,
        object: impl Fn(usize) -> Value + Send + Sync + 'static,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
        let object = Arc::new(object);
        let threads = (0..clients)
            .map(|client| {
                let (stop, samples, object) = (stop.clone(), samples.clone(), object.clone());
                let url = collection_url.to_owned();
                std::thread::spawn(move || {
                    let mut n = client;
                    while !stop.load(Ordering::Relaxed) {
                        let sent = Instant::now();
                        let reply = call("POST", &url, Some(&object(n)));
                        let done = Instant::now();
                        let sample = match reply {
                            Ok(r) => Sample {
                                sent,
                                done,
                                code: r.code,
                                mark: r.json().pointer(mark).cloned(),
                                error: (r.code != 201).then_some(r.body),
                            },
                            Err(e) => Sample {
                                sent,
                                done,
                                code: 0,
                                mark: None,
                                error: Some(e.to_string()),
                            },
                        };
                        samples.lock().unwrap().push(sample);
                        n += clients;
                    }
                })
            })
            .collect();
        Self {
            stop,
            threads,
            samples,
        }
    }

    /// The samples so far, in the order they completed.
    pub fn samples(&self) -> Vec<Sample> {
        self.samples.lock().unwrap().clone()
    }

    /// Waits (up to `timeout`) for the first answer to a request sent after `since` whose mark
    /// satisfies `want`, and returns it.
    pub fn wait_for(
        &self,
        since: Instant,
        timeout: Duration,
        want: impl Fn(Option<&Value>) -> bool,
    ) -> Option<Sample> {
        let deadline = Instant::now() + timeout;
        loop {
            let found = self
                .samples
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s.sent >= since && want(s.mark.as_ref()))
                .min_by_key(|s| s.done)
                .cloned();
            if found.is_some() || Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the clients and returns every sample.
    pub fn stop(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
        let samples = self.samples.lock().unwrap();
        samples.clone()
    }
}
