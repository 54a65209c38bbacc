//! What a follower sees of the registry-level watch ([`Event`], kube-runtime's
//! `watcher::Event`), and the stream adapters that spare each follower its own loop
//! ([`EventStreamExt`]: kube-runtime's `applied_objects`, `touched_objects` and `reflector`).

use std::sync::Arc;

use futures::{Stream, StreamExt as _};

use super::store::{Store, Writer};
use strategy_host_storage::informer::InformerEvent;

/// One object of a followed resource, as the registry serves it (its head — namespace, name,
/// uid, resourceVersion — readable without decoding the rest).
pub use strategy_host_storage::SharedObject as Object;

/// One step of a followed resource.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A (re)list begins: the objects up to the next `InitDone` replace everything known.
    Init,
    /// One object of the list.
    InitApply(Arc<Object>),
    /// The list is complete; changes follow.
    InitDone,
    /// An object was created or changed.
    Apply(Arc<Object>),
    /// An object was deleted.
    Delete(Arc<Object>),
}

impl Event {
    /// The registry's event for the informer's; `None` for a progress notice, which tells a
    /// follower nothing.
    pub(crate) fn from_informer(event: InformerEvent) -> Option<Self> {
        Some(match event {
            InformerEvent::Init => Self::Init,
            InformerEvent::InitApply(o) => Self::InitApply(o),
            InformerEvent::InitDone { .. } => Self::InitDone,
            InformerEvent::Apply(o) => Self::Apply(o),
            InformerEvent::Delete(o) => Self::Delete(o),
            InformerEvent::Progress(_) => return None,
        })
    }
}

/// Adapters over a stream of [`Event`]s.
pub trait EventStreamExt: Stream<Item = Event> + Sized + Send + 'static {
    /// The objects created or changed, and every object of each (re)list: what a controller
    /// that reconciles objects wants to look at.
    fn applied_objects(self) -> impl Stream<Item = Arc<Object>> + Send + 'static {
        self.filter_map(|event| async move {
            match event {
                Event::Apply(o) | Event::InitApply(o) => Some(o),
                _ => None,
            }
        })
    }

    /// [`EventStreamExt::applied_objects`] and the deleted ones.
    fn touched_objects(self) -> impl Stream<Item = Arc<Object>> + Send + 'static {
        self.filter_map(|event| async move {
            match event {
                Event::Apply(o) | Event::InitApply(o) | Event::Delete(o) => Some(o),
                _ => None,
            }
        })
    }

    /// Keeps `writer`'s store current, passing each event on once the store has taken it
    /// (so a reader of the store sees at least what the event says).
    fn reflect(self, mut writer: Writer) -> impl Stream<Item = Event> + Send + 'static {
        self.map(move |event| {
            writer.apply(&event);
            event
        })
    }

    /// Keeps `writer`'s store current and answers a reader of it each time readers see a
    /// change (the end of a list, a change, a delete; not a list in progress).
    fn reflect_changes(self, mut writer: Writer) -> impl Stream<Item = Store> + Send + 'static {
        let reader = writer.reader();
        self.filter_map(move |event| {
            let changed = writer.apply(&event).then(|| reader.clone());
            async move { changed }
        })
    }
}

impl<S: Stream<Item = Event> + Send + 'static> EventStreamExt for S {}
