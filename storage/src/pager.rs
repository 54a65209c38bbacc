//! One page of a list, written once for every store: the store walks the keys in scope in order
//! and offers each; the pager keeps the objects its predicate selects until `limit` are in, then
//! notes whether keys remain (and, when asked, how many) for the continue token and
//! `remainingItemCount`. Stores apply a limit only to lists of a prefix, as Kubernetes does.

use std::sync::Arc;

use super::continue_token::ContinueToken;
use super::error::Result;
use super::options::{ListOptions, ObjectList};
use super::predicate::SelectionPredicate;
use super::watch::SharedObject;

/// A page being filled from keys offered in order.
#[derive(Debug)]
pub struct Pager<'a> {
    predicate: &'a SelectionPredicate,
    everything: bool,
    limit: u64,
    count_remaining: bool,
    items: Vec<Arc<SharedObject>>,
    last_key: Option<String>,
    more: bool,
    remaining: u64,
}

/// A finished page.
#[derive(Debug, Default)]
pub struct Page {
    /// The selected objects, in key order.
    pub items: Vec<Arc<SharedObject>>,
    /// Where the next page starts, when keys remain after this one.
    pub next_key: Option<String>,
    /// How many keys remain after this page (only when counted, and keys remain).
    pub remaining: Option<u64>,
}

impl<'a> Pager<'a> {
    /// A page of at most `limit` objects `predicate` selects (0: no limit); with
    /// `count_remaining`, the keys after a full page are counted.
    pub fn new(predicate: &'a SelectionPredicate, limit: u64, count_remaining: bool) -> Self {
        Self {
            predicate,
            everything: predicate.is_everything(),
            limit,
            count_remaining,
            items: Vec::new(),
            last_key: None,
            more: false,
            remaining: 0,
        }
    }

    /// The page a list with `opts` asks for, by Kubernetes' rules: `limit` applies only to a
    /// list of a prefix (`of_prefix`), and the keys after a full page are counted only for a
    /// list that selects everything (and does not skip the count).
    pub fn for_list(opts: &'a ListOptions, of_prefix: bool) -> Self {
        let limit = if of_prefix { opts.limit } else { 0 };
        let count = opts.predicate.is_everything() && !opts.skip_remaining_count;
        Self::new(&opts.predicate, limit, count)
    }

    /// The most objects the page takes (0: no limit).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether the page holds `limit` objects.
    pub fn is_full(&self) -> bool {
        self.limit > 0 && self.items.len() as u64 >= self.limit
    }

    /// Offers the next key in scope; `object` makes its object, and is called only while the
    /// page takes objects. False once the store need offer nothing more.
    ///
    /// # Errors
    /// What `object` fails with.
    pub fn offer(
        &mut self,
        key: &str,
        object: impl FnOnce() -> Result<Arc<SharedObject>>,
    ) -> Result<bool> {
        if self.is_full() {
            self.more = true;
            self.remaining += 1;
            return Ok(self.count_remaining);
        }
        let obj = object()?;
        if self.everything || self.predicate.matches_object(&obj) {
            self.items.push(obj);
        }
        self.last_key = Some(key.to_owned());
        Ok(true)
    }

    /// Tells a full page that `count` more keys remain beyond those offered (a store that reads
    /// in chunks knows so without reading them).
    pub fn more_remain(&mut self, count: u64) {
        if self.is_full() && count > 0 {
            self.more = true;
            self.remaining += count;
        }
    }

    /// The page as it stands.
    pub fn finish(self) -> Page {
        let next_key = self
            .more
            .then(|| format!("{}\0", self.last_key.as_deref().unwrap_or_default()));
        Page {
            items: self.items,
            remaining: (self.more && self.count_remaining).then_some(self.remaining),
            next_key,
        }
    }
}

impl Page {
    /// The page as a list at `revision`; its continue token names `list_prefix`.
    pub fn into_list(self, revision: u64, list_prefix: &str) -> ObjectList {
        let continue_token = self
            .next_key
            .map(|next| ContinueToken::encode(revision, list_prefix, &next));
        ObjectList {
            items: self.items,
            resource_version: revision,
            remaining_item_count: continue_token.as_ref().and(self.remaining),
            continue_token,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::predicate::LabelSelector;

    fn object(name: &str, app: &str) -> Result<Arc<SharedObject>> {
        let obj = json!({"metadata": {"name": name, "labels": {"app": app}}});
        Ok(Arc::new(SharedObject::new(obj)))
    }

    #[test]
    fn a_full_page_notes_what_remains() {
        let everything = SelectionPredicate::default();
        let mut pager = Pager::new(&everything, 2, true);
        for name in ["a", "b", "c", "d"] {
            assert!(pager.offer(name, || object(name, "x")).unwrap());
        }
        let page = pager.finish();
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.next_key.as_deref(), Some("b\0"));
        assert_eq!(page.remaining, Some(2));
    }

    #[test]
    fn a_selective_page_stops_at_the_first_key_after_it_fills() {
        let web = SelectionPredicate {
            label: LabelSelector::parse("app=web").unwrap(),
            ..Default::default()
        };
        let mut pager = Pager::new(&web, 1, false);
        assert!(pager.offer("a", || object("a", "db")).unwrap());
        assert!(pager.offer("b", || object("b", "web")).unwrap());
        assert!(!pager
            .offer("c", || panic!("no object is made once the page is full"))
            .unwrap());
        let page = pager.finish();
        assert_eq!(page.next_key.as_deref(), Some("b\0"));
        assert_eq!(page.remaining, None);
    }

    #[test]
    fn a_list_that_skips_the_count_stops_reading_after_its_page() {
        // What the watch cache's informer asks for: counting would read every key after each
        // page, the whole resource once per page.
        let informer = ListOptions {
            recursive: true,
            limit: 2,
            skip_remaining_count: true,
            ..Default::default()
        };
        let mut pager = Pager::for_list(&informer, true);
        assert!(pager.offer("a", || object("a", "x")).unwrap());
        assert!(pager.offer("b", || object("b", "x")).unwrap());
        assert!(!pager.offer("c", || object("c", "x")).unwrap(), "stop here");
        let page = pager.finish();
        assert_eq!(page.next_key.as_deref(), Some("b\0"));
        assert_eq!(page.remaining, None);
        // A client's list of everything still counts, as Kubernetes does.
        let client = ListOptions {
            skip_remaining_count: false,
            ..informer
        };
        let mut pager = Pager::for_list(&client, true);
        for name in ["a", "b", "c"] {
            assert!(pager.offer(name, || object(name, "x")).unwrap());
        }
        assert_eq!(pager.finish().remaining, Some(1));
    }

    #[test]
    fn a_page_that_holds_the_rest_has_no_continuation() {
        let everything = SelectionPredicate::default();
        let mut pager = Pager::new(&everything, 2, true);
        for name in ["a", "b"] {
            pager.offer(name, || object(name, "x")).unwrap();
        }
        pager.more_remain(0);
        let list = pager.finish().into_list(7, "/p/");
        assert_eq!(list.continue_token, None);
        assert_eq!(list.remaining_item_count, None);
        assert_eq!(list.resource_version, 7);
    }
}
