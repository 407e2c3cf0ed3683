//! The state of one shared watch, as kube-apiserver's watch cache keeps it: the current
//! objects (from the last LIST, updated by every event) and a bounded history of the most
//! recent events, which serves watches that resume from a resourceVersion.
//!
//! The resourceVersion rules are the watch cache's (`k8s.io/apiserver` `watchCache`):
//! - a watch from `""`/`"0"` gets the current objects as `ADDED` events, then what follows;
//! - a watch from `rv` gets every event after `rv`, if the history still holds them: `rv` must
//!   be at least the oldest held point (the LIST's resourceVersion while no event was evicted,
//!   else the resourceVersion of the newest event evicted: the collection has no event between
//!   it and the oldest one held, and a bookmark since moves nothing); an older one is
//!   `410 Expired` ("too old resource version");
//! - a watch from an `rv` newer than the cache gets the events after `rv` as they come.
//!
//! Events leave the history by count (the capacity), by the bytes budget of all histories,
//! and by age ([`Store::evict_received_before`]): kube-apiserver keeps 75 s of events fresh,
//! and a module resuming from an evicted point relists from the store, as from the API server.
//!
//! They may also be *released* early ([`Store::release_read_before`]): an event every live
//! watch of the store (a *reader*) has taken is only kept for watches that resume later from
//! an older point. A watch resuming from a released point is [`NotHeld::Released`]: the API
//! server still holds those events (its watch cache keeps them 75 s), so that one watch is
//! sent there instead of being told `410`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use super::event::{EventType, ObjectJson, ObjectKey, ParsedList, TypeMeta, event_line};

/// One event of the history: its resourceVersion and its line as the server sent it.
#[derive(Debug, PartialEq, Eq)]
pub struct CachedEvent {
    /// The object's resourceVersion after the change.
    pub resource_version: u64,
    /// The event line.
    pub line: Bytes,
    /// When the host received it.
    pub received: Instant,
}

/// Why the history cannot serve a watch from a resourceVersion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotHeld {
    /// Its events left by age, count or bytes, as they leave kube-apiserver's watch cache:
    /// `410 Expired`.
    Expired(TooOld),
    /// Its events were released early (every reader had taken them) but are younger than the
    /// history age: the API server still serves them.
    Released,
}

/// A watch from a resourceVersion the history no longer covers (`410 Expired`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld {
    /// The resourceVersion asked for.
    pub asked: u64,
    /// The oldest resourceVersion a watch may start from now.
    pub oldest: u64,
}

/// How much a store holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreSize {
    /// Objects in the current state.
    pub objects: usize,
    /// Events in the history.
    pub events: usize,
    /// Bytes of object JSON plus bytes of event lines (an object and the event it came in
    /// share one buffer, so this is an upper bound of the memory held).
    pub bytes: usize,
}

/// Objects and recent events of one shared watch.
#[derive(Debug)]
pub struct Store {
    /// Each object's JSON by its key.
    objects: BTreeMap<ObjectKey, Bytes>,
    object_bytes: usize,
    history: VecDeque<Arc<CachedEvent>>,
    history_bytes: usize,
    /// Most events the history keeps.
    capacity: usize,
    /// The resourceVersion of the LIST the store was last built from.
    list_rv: u64,
    /// The resourceVersion of the newest event evicted or released from the history since
    /// that LIST.
    evicted_through: Option<u64>,
    /// The resourceVersion of the newest event evicted (by age, count or bytes, not
    /// released) since that LIST.
    expired_through: Option<u64>,
    /// Each live watch's cursor, by reader id: it has taken every event up to it.
    readers: BTreeMap<u64, u64>,
    next_reader: u64,
    /// When [`release_read_before`](Self::release_read_before) last ran.
    last_release: Option<Instant>,
    /// The newest resourceVersion seen (LIST, event or bookmark).
    rv: u64,
    item_type: Option<TypeMeta>,
    list_type: Option<TypeMeta>,
}

impl Store {
    /// An empty store keeping at most `capacity` events (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            objects: BTreeMap::new(),
            object_bytes: 0,
            history: VecDeque::new(),
            history_bytes: 0,
            capacity: capacity.max(1),
            list_rv: 0,
            evicted_through: None,
            expired_through: None,
            readers: BTreeMap::new(),
            next_reader: 0,
            last_release: None,
            rv: 0,
            item_type: None,
            list_type: None,
        }
    }

    /// Replaces everything with the result of a LIST: the history starts empty at its
    /// resourceVersion. Readers stay registered until their watches end.
    pub fn reset(&mut self, list: ParsedList) {
        self.objects.clear();
        self.object_bytes = 0;
        for item in list.items {
            self.object_bytes += item.json.len();
            self.objects.insert(item.key, item.json);
        }
        self.history = VecDeque::new();
        self.history_bytes = 0;
        self.list_rv = list.resource_version;
        self.rv = list.resource_version;
        self.evicted_through = None;
        self.expired_through = None;
        self.item_type = Some(list.item_type);
        self.list_type = Some(list.list_type);
    }

    /// Applies a change and appends it to the history. A change not newer than the store
    /// (a replay) is ignored; returns whether it was applied.
    pub fn apply(
        &mut self,
        kind: EventType,
        object: ObjectJson,
        type_meta: Option<TypeMeta>,
        line: Bytes,
    ) -> bool {
        let rv = object.resource_version;
        if rv <= self.rv {
            return false;
        }
        if let Some(type_meta) = type_meta
            && self.item_type.is_none()
        {
            self.item_type = Some(type_meta);
        }
        let replaced = if kind == EventType::Deleted {
            self.objects.remove(&object.key)
        } else {
            self.object_bytes += object.json.len();
            self.objects.insert(object.key, object.json)
        };
        if let Some(old) = replaced {
            self.object_bytes -= old.len();
        }
        if self.history.len() == self.capacity {
            self.evict_oldest();
        }
        self.history_bytes += line.len();
        self.history.push_back(Arc::new(CachedEvent {
            resource_version: rv,
            line,
            received: Instant::now(),
        }));
        self.rv = rv;
        true
    }

    /// Moves the store's resourceVersion forward to a bookmark's (nothing changed up to it).
    pub fn bookmark(&mut self, rv: u64) {
        self.rv = self.rv.max(rv);
    }

    /// Drops the oldest event of the history; returns its size in bytes (0 if none).
    pub fn evict_oldest(&mut self) -> usize {
        match self.pop_oldest() {
            Some((rv, bytes)) => {
                self.expired_through = Some(rv);
                bytes
            }
            None => 0,
        }
    }

    /// Drops the oldest event of the history as evicted or released (the caller says which);
    /// returns its resourceVersion and size in bytes.
    fn pop_oldest(&mut self) -> Option<(u64, usize)> {
        let event = self.history.pop_front()?;
        self.evicted_through = Some(event.resource_version);
        self.history_bytes -= event.line.len();
        if self.history.is_empty() {
            // The deque keeps its largest size otherwise, a quiet collection's for ever.
            self.history = VecDeque::new();
        }
        Some((event.resource_version, event.line.len()))
    }

    /// Drops the events of the history received before `cutoff`; returns their size in
    /// bytes. A watch may then start no earlier than the newest of them (see
    /// [`oldest`](Self::oldest)).
    pub fn evict_received_before(&mut self, cutoff: Instant) -> usize {
        let mut freed = 0;
        while self.history.front().is_some_and(|e| e.received < cutoff) {
            freed += self.evict_oldest();
        }
        freed
    }

    /// Releases the events of the history received before `cutoff` that every reader has
    /// taken; returns their size in bytes. A watch resuming from one of them is
    /// [`NotHeld::Released`].
    pub fn release_read_before(&mut self, cutoff: Instant) -> usize {
        self.last_release = Some(Instant::now());
        let read_through = self.read_through();
        let mut freed = 0;
        while self
            .history
            .front()
            .is_some_and(|e| e.received < cutoff && e.resource_version <= read_through)
        {
            freed += self.pop_oldest().map_or(0, |(_, bytes)| bytes);
        }
        freed
    }

    /// When [`release_read_before`](Self::release_read_before) last ran.
    pub fn last_release(&self) -> Option<Instant> {
        self.last_release
    }

    /// The resourceVersion every reader has taken all events up to (`u64::MAX` without
    /// readers).
    fn read_through(&self) -> u64 {
        self.readers.values().copied().min().unwrap_or(u64::MAX)
    }

    /// Whether every reader has taken the oldest event of the history (`false` if it holds
    /// none).
    pub fn oldest_is_read(&self) -> bool {
        self.history
            .front()
            .is_some_and(|e| e.resource_version <= self.read_through())
    }

    /// Registers a live watch that has taken every event up to `cursor`; returns its reader
    /// id, for [`read_to`](Self::read_to) and [`remove_reader`](Self::remove_reader).
    pub fn add_reader(&mut self, cursor: u64) -> u64 {
        let id = self.next_reader;
        self.next_reader += 1;
        self.readers.insert(id, cursor);
        id
    }

    /// Records that reader `id` has taken every event up to `cursor`.
    pub fn read_to(&mut self, id: u64, cursor: u64) {
        if let Some(read) = self.readers.get_mut(&id) {
            *read = cursor;
        }
    }

    /// Forgets reader `id` (its watch ended).
    pub fn remove_reader(&mut self, id: u64) {
        self.readers.remove(&id);
    }

    /// When the oldest event of the history was received, if it holds any.
    pub fn oldest_received(&self) -> Option<Instant> {
        self.history.front().map(|e| e.received)
    }

    /// The newest resourceVersion the store has seen.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// The oldest resourceVersion a watch may start from.
    pub fn oldest(&self) -> u64 {
        self.evicted_through.unwrap_or(self.list_rv)
    }

    /// The events after `rv`, oldest first.
    ///
    /// # Errors
    /// If `rv` is older than [`oldest`](Self::oldest): [`NotHeld::Released`] if only released
    /// events are missing, else [`NotHeld::Expired`].
    pub fn since(&self, rv: u64) -> Result<Vec<Arc<CachedEvent>>, NotHeld> {
        let oldest = self.oldest();
        if rv < oldest {
            if rv >= self.expired_through.unwrap_or(self.list_rv) {
                return Err(NotHeld::Released);
            }
            return Err(NotHeld::Expired(TooOld { asked: rv, oldest }));
        }
        let first = self.history.partition_point(|e| e.resource_version <= rv);
        Ok(self.history.range(first..).cloned().collect())
    }

    /// The current objects as `ADDED` event lines, ordered by namespace and name.
    pub fn initial_events(&self) -> Vec<Bytes> {
        self.objects
            .values()
            .map(|json| event_line("ADDED", json))
            .collect()
    }

    /// The type of the objects (for bookmarks), once known.
    pub fn item_type(&self) -> Option<&TypeMeta> {
        self.item_type.as_ref()
    }

    /// A list response body of the current state: `{"kind": "<Kind>List", "apiVersion": …,
    /// "metadata": {"resourceVersion": …}, "items": […]}`, items ordered by namespace and
    /// name. `None` before the first LIST.
    pub fn list_body(&self) -> Option<Vec<u8>> {
        let list_type = self.list_type.as_ref()?;
        let head = serde_json::json!({
            "kind": list_type.kind,
            "apiVersion": list_type.api_version,
            "metadata": {"resourceVersion": self.rv.to_string()},
        })
        .to_string();
        let mut body = Vec::with_capacity(head.len() + self.object_bytes + self.objects.len() + 16);
        // `{…}` → `{…,"items":[…]}`
        body.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
        body.extend_from_slice(b",\"items\":[");
        for (i, json) in self.objects.values().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(json);
        }
        body.extend_from_slice(b"]}");
        Some(body)
    }

    /// How much the store holds.
    pub fn size(&self) -> StoreSize {
        StoreSize {
            objects: self.objects.len(),
            events: self.history.len(),
            bytes: self.object_bytes + self.history_bytes,
        }
    }

    /// Bytes of event lines in the history.
    pub fn history_bytes(&self) -> usize {
        self.history_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::{WatchLine, parse_list, parse_watch_line};
    use super::*;

    fn listed(rv: u64, names: &[(&str, u64)]) -> Store {
        let items: Vec<String> = names
            .iter()
            .map(|(name, rv)| {
                format!(
                    r#"{{"metadata":{{"name":"{name}","namespace":"n","resourceVersion":"{rv}"}}}}"#
                )
            })
            .collect();
        let body = format!(
            r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},"items":[{}]}}"#,
            items.join(",")
        );
        let mut store = Store::new(3);
        store.reset(parse_list(Bytes::from(body)).expect("list"));
        store
    }

    fn change(store: &mut Store, kind: &str, name: &str, rv: u64) -> bool {
        let line = format!(
            r#"{{"type":"{kind}","object":{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"{name}","namespace":"n","resourceVersion":"{rv}"}}}}}}"#
        );
        let WatchLine::Change {
            kind,
            object,
            type_meta,
            line,
        } = parse_watch_line(Bytes::from(line)).expect("event")
        else {
            panic!("a change")
        };
        store.apply(kind, object, type_meta, line)
    }

    fn rvs(events: &[Arc<CachedEvent>]) -> Vec<u64> {
        events.iter().map(|e| e.resource_version).collect()
    }

    #[test]
    fn resumes_are_served_from_the_history_and_too_old_ones_expire() {
        let mut store = listed(10, &[("a", 5), ("b", 9)]);
        assert_eq!(store.since(10).map(|e| rvs(&e)), Ok(vec![]));
        assert_eq!(
            store.since(9),
            Err(NotHeld::Expired(TooOld {
                asked: 9,
                oldest: 10
            }))
        );
        assert!(change(&mut store, "ADDED", "c", 11));
        assert!(change(&mut store, "MODIFIED", "a", 12));
        assert!(change(&mut store, "DELETED", "b", 13));
        assert_eq!(store.since(10).map(|e| rvs(&e)), Ok(vec![11, 12, 13]));
        assert_eq!(store.since(12).map(|e| rvs(&e)), Ok(vec![13]));
        assert_eq!(
            store.since(50).map(|e| rvs(&e)),
            Ok(vec![]),
            "newer than the cache"
        );
        // The fourth event evicts the first: 10 is no longer a starting point, 11 is.
        assert!(change(&mut store, "ADDED", "d", 14));
        assert_eq!(
            store.since(10),
            Err(NotHeld::Expired(TooOld {
                asked: 10,
                oldest: 11
            }))
        );
        assert_eq!(store.since(11).map(|e| rvs(&e)), Ok(vec![12, 13, 14]));
        assert_eq!(store.size().objects, 3, "a, c, d");
        assert_eq!(store.size().events, 3);
    }

    #[test]
    fn events_received_before_a_cutoff_leave_and_resumes_start_after_them() {
        let mut store = listed(10, &[("a", 5)]);
        assert!(change(&mut store, "MODIFIED", "a", 11));
        let between = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(change(&mut store, "MODIFIED", "a", 12));
        assert_eq!(store.oldest_received().map(|at| at < between), Some(true));
        assert_eq!(
            store.evict_received_before(between - std::time::Duration::from_secs(1)),
            0
        );
        let first = store.history_bytes();
        let freed_first = store.evict_received_before(between);
        assert!(
            freed_first > 0 && freed_first < first,
            "only the event of 11 left: {freed_first} of {first}"
        );
        assert_eq!(store.since(11).map(|e| rvs(&e)), Ok(vec![12]));
        assert_eq!(
            store.since(10),
            Err(NotHeld::Expired(TooOld {
                asked: 10,
                oldest: 11
            }))
        );
        let later = Instant::now() + std::time::Duration::from_millis(1);
        let freed_rest = store.evict_received_before(later);
        assert_eq!(freed_first + freed_rest, first);
        assert_eq!((store.size().events, store.history_bytes()), (0, 0));
        assert_eq!(store.oldest_received(), None);
        assert_eq!(
            store.since(12).map(|e| rvs(&e)),
            Ok(vec![]),
            "the newest point stays"
        );
        assert_eq!(
            store.since(11),
            Err(NotHeld::Expired(TooOld {
                asked: 11,
                oldest: 12
            }))
        );
        assert_eq!(store.size().objects, 1, "objects stay");
        // A bookmark moves the store on without events: a watch at 12 missed nothing.
        store.bookmark(30);
        assert_eq!(store.since(12).map(|e| rvs(&e)), Ok(vec![]));
        assert_eq!(store.oldest(), 12);
    }

    #[test]
    fn replays_are_ignored_and_bookmarks_move_the_version() {
        let mut store = listed(10, &[]);
        assert!(!change(&mut store, "ADDED", "a", 10));
        assert!(change(&mut store, "ADDED", "a", 11));
        assert!(!change(&mut store, "MODIFIED", "a", 11));
        store.bookmark(20);
        assert_eq!(store.resource_version(), 20);
        store.bookmark(15);
        assert_eq!(store.resource_version(), 20);
        assert!(
            !change(&mut store, "MODIFIED", "a", 19),
            "older than the bookmark"
        );
        assert!(change(&mut store, "MODIFIED", "a", 21));
    }

    #[test]
    fn the_state_reads_as_added_events_and_as_a_list() {
        let mut store = listed(10, &[("b", 9), ("a", 5)]);
        change(&mut store, "DELETED", "b", 11);
        change(&mut store, "ADDED", "c", 12);
        let initial: Vec<String> = store
            .initial_events()
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        assert_eq!(initial.len(), 2);
        assert!(initial[0].starts_with(r#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a""#), "{}", initial[0]);
        assert!(initial[1].contains(r#""name":"c""#));
        let list: serde_json::Value =
            serde_json::from_slice(&store.list_body().expect("listed")).expect("json");
        assert_eq!(list["kind"], "ConfigMapList");
        assert_eq!(list["metadata"]["resourceVersion"], "12");
        let names: Vec<_> = list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(Store::new(1).list_body(), None);
    }

    #[test]
    fn evicting_by_size_moves_the_oldest_point() {
        let mut store = listed(10, &[]);
        change(&mut store, "ADDED", "a", 11);
        change(&mut store, "ADDED", "b", 12);
        let bytes = store.history_bytes();
        assert!(store.evict_oldest() > 0);
        assert!(store.history_bytes() < bytes);
        assert_eq!(store.oldest(), 11);
        assert!(store.evict_oldest() > 0);
        assert_eq!(
            store.oldest(),
            12,
            "an empty history after evictions starts at the store's version"
        );
        assert_eq!(store.evict_oldest(), 0);
        assert_eq!(store.since(12).map(|e| rvs(&e)), Ok(vec![]));
        assert!(store.since(11).is_err());
    }

    #[test]
    fn events_every_reader_took_are_released_and_resumes_from_them_go_upstream() {
        let mut store = listed(10, &[("a", 5)]);
        let behind = store.add_reader(10);
        let ahead = store.add_reader(10);
        change(&mut store, "MODIFIED", "a", 11);
        change(&mut store, "MODIFIED", "a", 12);
        let later = Instant::now() + std::time::Duration::from_millis(1);
        store.read_to(ahead, 12);
        assert!(!store.oldest_is_read());
        assert_eq!(store.release_read_before(later), 0, "`behind` took nothing");
        store.read_to(behind, 11);
        assert!(store.oldest_is_read());
        let freed = store.release_read_before(later);
        assert!(freed > 0);
        assert_eq!(store.since(11).map(|e| rvs(&e)), Ok(vec![12]), "12 stays");
        assert_eq!(
            store.since(10),
            Err(NotHeld::Released),
            "the API server still has 11"
        );
        store.remove_reader(behind);
        assert_eq!(
            store.release_read_before(Instant::now() - std::time::Duration::from_secs(1)),
            0,
            "only events received before the cutoff"
        );
        assert!(store.release_read_before(later) > 0);
        assert_eq!((store.size().events, store.history_bytes()), (0, 0));
        assert_eq!(store.since(12).map(|e| rvs(&e)), Ok(vec![]));
        assert_eq!(store.since(11), Err(NotHeld::Released));

        // An eviction by age after releases: what it evicted is gone upstream too.
        change(&mut store, "MODIFIED", "a", 13);
        store.evict_received_before(Instant::now() + std::time::Duration::from_millis(1));
        assert_eq!(
            store.since(12),
            Err(NotHeld::Expired(TooOld {
                asked: 12,
                oldest: 13
            }))
        );
        assert_eq!(store.since(13).map(|e| rvs(&e)), Ok(vec![]));
        store.remove_reader(ahead);
        assert!(!store.oldest_is_read(), "no events");
    }
}
