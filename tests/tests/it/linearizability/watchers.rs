//! The watchers of a linearizability run: each follows the ConfigMaps through one host,
//! resuming from delivered resourceVersions and relisting on 410 Gone, and records what it saw
//! for the history check.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strategy_host_e2e::history::{Change, Relist, Watched};
use strategy_host_e2e::{call, WatchReader};

use super::{listed, rv_of, value_of, Bases, CONFIGMAPS, RESUME_EVERY};

/// Follows the ConfigMaps through host `which`, resuming whenever the stream ends and every
/// `RESUME_EVERY` — from the last delivered resourceVersion, or now and then from one up to 20
/// changes earlier (any delivered resourceVersion is resumable: the changes after it come
/// again) — and relisting, as a client-go reflector does, when the host answers 410 Gone; until
/// the object named `sentinel` is added (the last write of the run), or 30 s after `stop`
/// without it.
pub(super) fn watcher(
    which: usize,
    seed: u64,
    bases: Bases,
    from: u64,
    stop: Arc<AtomicBool>,
) -> (Watched, Vec<String>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut watched = Watched::default();
    let mut errors = Vec::new();
    let mut last = from;
    let mut stopped_at: Option<Instant> = None;
    let mut gave_up = || {
        if !stop.load(Ordering::SeqCst) {
            return false;
        }
        stopped_at.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(30)
    };
    'outer: loop {
        if gave_up() {
            errors.push(format!("watch {which}: no sentinel within 30 s of the end"));
            break;
        }
        if rng.random_range(0..3) == 0 {
            // Back to an earlier change, but not behind the last relist.
            let relisted = watched.relists.last().map_or(from, |r| r.revision);
            let before_relist = watched.changes.partition_point(|c| c.revision <= relisted);
            let keep = watched
                .changes
                .len()
                .saturating_sub(rng.random_range(1..=20))
                .max(before_relist);
            watched.changes.truncate(keep);
            last = watched
                .changes
                .last()
                .map_or(relisted, |c| c.revision)
                .max(relisted);
        }
        let base = bases.read().unwrap()[which].clone();
        let url =
            format!("{base}{CONFIGMAPS}?watch=1&resourceVersion={last}&allowWatchBookmarks=true");
        let watch = match WatchReader::open(&url) {
            Ok(watch) => watch,
            Err(e) if e.to_string().contains("answered 410") => {
                if relist(&base, &mut last, &mut watched) {
                    break;
                }
                continue;
            }
            Err(_) => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let opened = Instant::now();
        loop {
            if opened.elapsed() > RESUME_EVERY {
                continue 'outer;
            }
            let Some(event) = watch.next(Duration::from_millis(500)) else {
                if watch.ended(Duration::ZERO) || gave_up() {
                    continue 'outer;
                }
                continue;
            };
            let kind = event["type"].as_str().unwrap_or_default();
            let obj = &event["object"];
            if kind == "ERROR" && obj["code"] == 410 {
                if relist(&base, &mut last, &mut watched) {
                    break 'outer;
                }
                continue 'outer;
            }
            if kind == "ERROR" {
                errors.push(format!("watch {which} from {last}: {obj}"));
                break 'outer;
            }
            let Some(rv) = rv_of(obj) else { continue };
            if kind == "BOOKMARK" {
                last = last.max(rv);
                continue;
            }
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            last = rv;
            if name == "sentinel" {
                break 'outer;
            }
            let value = (kind != "DELETED").then(|| value_of(obj)).flatten();
            watched.changes.push(Change {
                revision: rv,
                key: name,
                value,
            });
        }
    }
    (watched, errors)
}

/// Lists consistently through `base` after a 410 and records the relist: the watch goes on
/// from the list's resourceVersion. Leaves `last` as it was when the list fails (the watch is
/// tried again, and answered 410 again). Answers whether the list holds the sentinel (the watch is then done).
fn relist(base: &str, last: &mut u64, watched: &mut Watched) -> bool {
    let Ok(reply) = call("GET", &format!("{base}{CONFIGMAPS}"), None) else {
        std::thread::sleep(Duration::from_millis(50));
        return false;
    };
    let list = reply.json();
    let Some((revision, state)) = (reply.code == 200).then(|| listed(&list)).flatten() else {
        std::thread::sleep(Duration::from_millis(50));
        return false;
    };
    watched.relists.push(Relist {
        after: *last,
        revision,
        state,
    });
    *last = revision;
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|o| o["metadata"]["name"] == "sentinel")
}
