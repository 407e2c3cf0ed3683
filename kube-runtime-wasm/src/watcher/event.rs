//! What a watcher yields, as `kube_runtime::watcher::Event`.

use kube_core::ResourceExt;
use std::fmt::{self, Display};

/// One change seen by a watcher, as kube-runtime 5.0's `watcher::Event`.
///
/// A (re)listing is reported as `Init`, then one `InitApply` per object that exists, then
/// `InitDone`; a consumer that keeps a cache (like [`Writer`](crate::reflector::store::Writer))
/// builds a fresh one from these and swaps it in at `InitDone`, which also drops objects
/// deleted while the watcher was not watching. Between listings, `Apply` and `Delete` report
/// single changes.
#[derive(Debug, Clone)]
pub enum Event<K> {
    /// An object was added or modified (a watch `ADDED` or `MODIFIED`).
    Apply(K),
    /// An object was deleted (a watch `DELETED`). If the watcher misses a deletion (e.g.
    /// while relisting), no `Delete` is sent: the object is just absent from the next
    /// listing.
    Delete(K),
    /// A (re)listing started.
    Init,
    /// An object of the current listing.
    InitApply(K),
    /// The listing is complete: every object that exists has been sent as `InitApply`.
    InitDone,
}

impl<K> Event<K> {
    /// Applies `f` to the object of an `Apply`, `Delete` or `InitApply` event (the markers
    /// `Init` and `InitDone` are returned as they are).
    #[must_use]
    pub fn modify(mut self, mut f: impl FnMut(&mut K)) -> Self {
        match &mut self {
            Self::Apply(obj) | Self::Delete(obj) | Self::InitApply(obj) => f(obj),
            Self::Init | Self::InitDone => {}
        }
        self
    }
}

/// `Init`, `InitApply(name)`, `InitDone`, `Apply(name)` or `Delete(name)`, as kube's.
impl<K: ResourceExt> Display for Event<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Init => f.write_str("Init"),
            Event::InitApply(obj) => write!(f, "InitApply({})", obj.name_any()),
            Event::InitDone => f.write_str("InitDone"),
            Event::Apply(obj) => write!(f, "Apply({})", obj.name_any()),
            Event::Delete(obj) => write!(f, "Delete({})", obj.name_any()),
        }
    }
}
