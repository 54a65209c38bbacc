//! `resourceVersion=0` reads never go back behind what the cacher served from the store below
//! when the cache could not catch up for a consistent read (a watch held up by a paused etcd
//! member, say): the linearizability check's monotonic reads.

use super::*;

/// Watches that deliver events only up to the revision in `upto` (the rest wait, in order).
struct Holding {
    upto: tokio::sync::watch::Sender<u64>,
}

impl WatchFault for Holding {
    fn wrap(&self, stream: WatchStream) -> WatchStream {
        let upto = self.upto.subscribe();
        Box::pin(stream.then(move |event| {
            let mut upto = upto.clone();
            async move {
                let revision = event.revision().unwrap_or(0);
                let _ = upto.wait_for(|upto| revision <= *upto).await;
                event
            }
        }))
    }
}

async fn size_at_rv0(cacher: &Cacher) -> Value {
    let opts = GetOptions {
        resource_version: "0".into(),
        ..Default::default()
    };
    let got = cacher.get(&key("ns", "a"), opts).await.unwrap().unwrap();
    got["spec"]["size"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_at_rv0_is_never_older_than_a_consistent_read_served_by_the_store() {
    let below = Arc::new(Faulty {
        inner: embedded().await,
        fault: Holding {
            upto: tokio::sync::watch::Sender::new(u64::MAX),
        },
    });
    let config = CacherConfig {
        read_your_writes: false,
        consistent_read_timeout: Duration::from_millis(50),
        not_older_than_timeout: Duration::from_millis(200),
        ..Default::default()
    };
    let cacher = cacher_over(below.clone(), config).await;
    create(&*below, "ns", "a").await;
    update_size(&*below, &key("ns", "a"), 1).await;
    eventually_size(&cacher, 1).await;

    // The cache's watch stops delivering; a write lands behind its back.
    let held_at = cacher.stats().revision;
    below.fault.upto.send_replace(held_at);
    let written = update_size(&*below, &key("ns", "a"), 2).await;
    let list = cacher.get_list(PREFIX, watch_opts("")).await.unwrap();
    assert_eq!(list.items[0].to_value(), written, "a consistent list");
    assert_eq!(
        cacher.stats().consistent_read_fallbacks,
        1,
        "read from below"
    );
    // What that list showed, an rv=0 read shows too: from the store, while the cache is behind.
    assert_eq!(size_at_rv0(&cacher).await, json!(2));
    // And a watch from "0" starts from that state too.
    let mut watch = cacher
        .watch(PREFIX, watch_opts("0"))
        .await
        .expect("watch from 0");
    match next_change(&mut watch).await {
        Some(WatchEvent::Added(obj)) => assert_eq!(obj.to_value()["spec"]["size"], json!(2)),
        other => panic!("expected the object as ADDED, got {other:?}"),
    }
    // A newer write, read at rv=0 from the store; then the cache catches up only to the first:
    // still no going back.
    update_size(&*below, &key("ns", "a"), 3).await;
    assert_eq!(size_at_rv0(&cacher).await, json!(3));
    below.fault.upto.send_replace(rv(&written));
    eventually_size(&cacher, 2).await;
    assert_eq!(size_at_rv0(&cacher).await, json!(3));

    // Once the cache has caught up, rv=0 reads are answered from memory again.
    below.fault.upto.send_replace(u64::MAX);
    eventually_size(&cacher, 3).await;
    let delegated = cacher.stats().delegated_reads;
    for _ in 0..10 {
        assert_eq!(size_at_rv0(&cacher).await, json!(3));
    }
    assert_eq!(cacher.stats().delegated_reads, delegated);
}

/// Waits until the cache itself shows widget `a` at `size`.
async fn eventually_size(cacher: &Cacher, size: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while cacher.stats().revision == 0 || {
        let cached = cacher.shared.read().get(&key("ns", "a"));
        cached.is_none_or(|o| o.to_value()["spec"]["size"] != json!(size))
    } {
        assert!(
            Instant::now() < deadline,
            "the cache never showed size {size}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
