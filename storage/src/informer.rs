//! The one list-then-watch: follows a collection — a [`ListerWatcher`]: a prefix of a
//! [`Storage`], or a resource as the registry serves it — with relist and backoff, as a stream
//! of [`InformerEvent`]s (kube-rs's `watcher()` is the model).
//!
//! An explicit state machine advanced by one `step` function: `List` (page by page at one
//! revision) → `Watch` (open a watch after the last revision seen) → `Follow`. A watch that ends
//! resumes from the last revision; one whose revision was compacted (`Expired`) relists; any
//! other failure waits out one [`Backoff`] and retries the step that failed. Consumers (the
//! cacher's reflector, and through the registry-level watch every follower) see only the
//! events, never the retries.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::{Stream, StreamExt as _};

use super::options::{ListOptions, ObjectList};
use super::watch::{SharedObject, WatchEvent, WatchStream};
use super::{Result, Storage};

/// What an informer follows: a collection it can list and watch (client-go's `ListerWatcher`).
#[async_trait]
pub trait ListerWatcher: Send + Sync + 'static {
    /// One page of the collection (`opts` carries the limit and continue token).
    async fn list(&self, opts: ListOptions) -> Result<ObjectList>;

    /// The changes after `opts.resource_version`, with bookmarks.
    async fn watch(&self, opts: ListOptions) -> Result<WatchStream>;

    /// What is followed, for logs (a key prefix, a resource).
    fn describe(&self) -> String;
}

/// Everything under one key prefix of a [`Storage`].
pub struct StoragePrefix {
    storage: Arc<dyn Storage>,
    prefix: String,
}

impl StoragePrefix {
    /// Everything under `prefix` of `storage`.
    pub fn new(storage: Arc<dyn Storage>, prefix: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            storage,
            prefix: prefix.into(),
        })
    }
}

#[async_trait]
impl ListerWatcher for StoragePrefix {
    async fn list(&self, mut opts: ListOptions) -> Result<ObjectList> {
        opts.recursive = true;
        self.storage.get_list(&self.prefix, opts).await
    }

    async fn watch(&self, mut opts: ListOptions) -> Result<WatchStream> {
        opts.recursive = true;
        self.storage.watch(&self.prefix, opts).await
    }

    fn describe(&self) -> String {
        self.prefix.clone()
    }
}

/// What a consumer of the informer sees.
#[derive(Debug, Clone, PartialEq)]
pub enum InformerEvent {
    /// A (re)list begins: the objects up to the next `InitDone` replace everything known.
    Init,
    /// One object of the list.
    InitApply(Arc<SharedObject>),
    /// The list is complete and consistent at `revision`; watch events follow.
    InitDone {
        /// The revision the list was read at.
        revision: u64,
    },
    /// An object was created or changed.
    Apply(Arc<SharedObject>),
    /// An object was deleted (its resourceVersion is the deletion's revision).
    Delete(Arc<SharedObject>),
    /// Nothing changed under the prefix, but the store reached `revision` (a bookmark).
    Progress(u64),
}

impl InformerEvent {
    /// The revision the event brings the follower to, when it carries one.
    pub fn revision(&self) -> Option<u64> {
        match self {
            Self::Apply(o) | Self::Delete(o) => Some(o.revision()),
            Self::InitDone { revision } | Self::Progress(revision) => Some(*revision),
            Self::Init | Self::InitApply(_) => None,
        }
    }
}

/// Exponential backoff: 100 ms doubling to 5 s, reset by any success.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    const INITIAL: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    /// The pause to take now; the next one doubles.
    pub fn next_delay(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        wait
    }

    /// Starts over after a success.
    pub fn reset(&mut self) {
        self.next = Self::INITIAL;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            next: Self::INITIAL,
        }
    }
}

/// How an informer lists.
#[derive(Debug, Clone, Copy, Default)]
pub struct InformerConfig {
    /// Objects per list page (0: one page).
    pub page_size: u64,
}

/// Where the informer is.
enum State {
    /// List the prefix.
    List,
    /// Open a watch after this revision.
    Watch { from: u64 },
    /// Follow an open watch; `delivered` once it has sent an event.
    Follow {
        stream: WatchStream,
        delivered: bool,
    },
    /// Wait, then go on with the boxed state.
    Backoff(Box<State>),
}

struct Informer {
    source: Arc<dyn ListerWatcher>,
    /// What `source` follows, for logs.
    followed: String,
    config: InformerConfig,
    state: Option<State>,
    /// The last revision delivered, where a broken watch resumes.
    revision: u64,
    backoff: Backoff,
    pending: VecDeque<InformerEvent>,
}

/// Follows everything `source` lists, forever: dropping the stream stops it. The stream keeps
/// its own progress, so `next()` may be raced in a `select!` without losing any.
pub fn informer(
    source: Arc<dyn ListerWatcher>,
    config: InformerConfig,
) -> impl Stream<Item = InformerEvent> + Send + 'static {
    let informer = Informer {
        followed: source.describe(),
        source,
        config,
        state: Some(State::List),
        revision: 0,
        backoff: Backoff::default(),
        pending: VecDeque::new(),
    };
    futures::stream::unfold(informer, |mut informer| async move {
        let event = informer.next_event().await;
        Some((event, informer))
    })
}

impl Informer {
    async fn next_event(&mut self) -> InformerEvent {
        loop {
            if let Some(event) = self.pending.pop_front() {
                if let Some(revision) = event.revision() {
                    self.revision = self.revision.max(revision);
                }
                return event;
            }
            let state = self.state.take().unwrap_or(State::List);
            self.state = Some(self.step(state).await);
        }
    }

    /// Advances the state machine once, queueing whatever events that produced.
    async fn step(&mut self, state: State) -> State {
        match state {
            State::List => match self.list().await {
                Ok(revision) => {
                    self.backoff.reset();
                    State::Watch { from: revision }
                }
                Err(e) => {
                    tracing::warn!(followed = %self.followed, error = %e, "informer list failed");
                    State::Backoff(Box::new(State::List))
                }
            },
            State::Watch { from } => {
                let opts = ListOptions {
                    resource_version: from.to_string(),
                    recursive: true,
                    allow_bookmarks: true,
                    ..Default::default()
                };
                match self.source.watch(opts).await {
                    Ok(stream) => State::Follow {
                        stream,
                        delivered: false,
                    },
                    Err(e) if e.is_expired() => State::List,
                    Err(e) => {
                        tracing::warn!(followed = %self.followed, error = %e, "informer watch failed");
                        State::Backoff(Box::new(State::Watch { from }))
                    }
                }
            }
            State::Follow {
                mut stream,
                delivered,
            } => {
                let resume = State::Watch {
                    from: self.revision,
                };
                match stream.next().await {
                    // A watch that ends before sending anything (its source is closing, as
                    // every cacher does when the server stops) is opened again only after the
                    // backoff, as client-go's reflector treats a very short watch: opened and
                    // ended at once, it would otherwise spin without yielding and keep the
                    // runtime from shutting down.
                    None if !delivered => State::Backoff(Box::new(resume)),
                    None => resume,
                    Some(WatchEvent::Error(e)) if e.is_expired() => State::List,
                    Some(WatchEvent::Error(e)) => {
                        tracing::warn!(followed = %self.followed, error = %e, "informer watch broke");
                        State::Backoff(Box::new(resume))
                    }
                    Some(event) => {
                        self.backoff.reset();
                        self.pending.push_back(match event {
                            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                                InformerEvent::Apply(o)
                            }
                            WatchEvent::Deleted(o) => InformerEvent::Delete(o),
                            WatchEvent::Bookmark(b) => InformerEvent::Progress(b.revision()),
                            WatchEvent::Error(_) => unreachable!("matched above"),
                        });
                        State::Follow {
                            stream,
                            delivered: true,
                        }
                    }
                }
            }
            State::Backoff(next) => {
                tokio::time::sleep(self.backoff.next_delay()).await;
                *next
            }
        }
    }

    /// Lists the prefix page by page at one revision; queues Init, the objects and InitDone
    /// only once every page is in, so a failed list leaves nothing half delivered.
    async fn list(&mut self) -> Result<u64> {
        let mut opts = ListOptions {
            recursive: true,
            limit: self.config.page_size,
            skip_remaining_count: true,
            ..Default::default()
        };
        let mut objects = Vec::new();
        let mut revision = None;
        loop {
            let page = self.source.list(opts.clone()).await?;
            revision.get_or_insert(page.resource_version);
            objects.extend(page.items);
            match page.continue_token {
                Some(token) => opts.continue_token = Some(token),
                None => break,
            }
        }
        let revision = revision.unwrap_or(0);
        self.pending.push_back(InformerEvent::Init);
        self.pending
            .extend(objects.into_iter().map(InformerEvent::InitApply));
        self.pending.push_back(InformerEvent::InitDone { revision });
        // A relist may go back in time only if the store itself did; follow the list.
        self.revision = revision;
        Ok(revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::{EmbeddedConfig, EmbeddedStore};
    use serde_json::json;

    async fn next(events: &mut (impl Stream<Item = InformerEvent> + Unpin)) -> InformerEvent {
        tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("an event in time")
            .expect("the stream never ends")
    }

    #[tokio::test]
    async fn lists_then_follows_changes_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Storage> = Arc::new(
            EmbeddedStore::open(EmbeddedConfig::new(dir.path().join("db")))
                .await
                .unwrap(),
        );
        let obj = |name: &str| json!({"metadata": {"name": name}});
        store.create("/things/a", obj("a")).await.unwrap();
        store.create("/things/b", obj("b")).await.unwrap();
        store.create("/other/x", obj("x")).await.unwrap();
        let mut events = Box::pin(informer(
            StoragePrefix::new(store.clone(), "/things"),
            InformerConfig { page_size: 1 },
        ));
        assert_eq!(next(&mut events).await, InformerEvent::Init);
        let mut names = Vec::new();
        let revision = loop {
            match next(&mut events).await {
                InformerEvent::InitApply(o) => names.push(o.to_value()["metadata"]["name"].clone()),
                InformerEvent::InitDone { revision } => break revision,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(names, vec![json!("a"), json!("b")], "every page, in order");
        assert_eq!(revision, store.current_revision().await.unwrap());
        store.create("/things/c", obj("c")).await.unwrap();
        let deleted = store
            .delete("/things/a", crate::ConditionalDelete::default())
            .await
            .unwrap();
        let mut seen = Vec::new();
        while seen.len() < 2 {
            match next(&mut events).await {
                InformerEvent::Progress(_) => {}
                other => seen.push(other),
            }
        }
        assert!(matches!(&seen[0], InformerEvent::Apply(o) if o.name() == Some("c")));
        assert!(matches!(&seen[1], InformerEvent::Delete(o) if o.to_value() == deleted));
    }

    #[test]
    fn backoff_doubles_to_a_cap_and_resets() {
        let mut b = Backoff::default();
        let delays: Vec<_> = (0..8).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(100));
    }

    /// A source whose watches end at once, with nothing (a closing cacher's), the first
    /// `ending` times; later ones stay open.
    struct EndingWatches {
        opened: std::sync::atomic::AtomicUsize,
        ending: usize,
    }

    #[async_trait]
    impl ListerWatcher for EndingWatches {
        async fn list(&self, _: ListOptions) -> Result<ObjectList> {
            Ok(ObjectList {
                resource_version: 1,
                ..ObjectList::default()
            })
        }

        async fn watch(&self, _: ListOptions) -> Result<WatchStream> {
            let opened = self
                .opened
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(if opened < self.ending {
                Box::pin(futures::stream::empty())
            } else {
                Box::pin(futures::stream::pending())
            })
        }

        fn describe(&self) -> String {
            "ending watches".into()
        }
    }

    #[tokio::test]
    async fn a_watch_that_ends_with_nothing_is_opened_again_only_after_the_backoff() {
        let source = Arc::new(EndingWatches {
            opened: Default::default(),
            ending: 1000,
        });
        let mut events = Box::pin(informer(source.clone(), InformerConfig { page_size: 10 }));
        assert_eq!(next(&mut events).await, InformerEvent::Init);
        assert!(matches!(
            next(&mut events).await,
            InformerEvent::InitDone { revision: 1 }
        ));
        // Reopened at once, the watch would be opened a thousand times (without yielding).
        let quiet = tokio::time::timeout(Duration::from_millis(350), events.next()).await;
        assert!(quiet.is_err(), "{quiet:?}");
        let opened = source.opened.load(std::sync::atomic::Ordering::SeqCst);
        assert!(opened <= 3, "the watch was opened {opened} times in 350 ms");
    }
}
