//! The module side of a shared watch: a module's `watch` op, or its `resourceVersion=0`
//! list, answered from the cache with the completions the API server's answer would have
//! produced (SPEC.md, "`watch` header" and "Completions").

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kube_wasm_abi::{Completion, DEFAULT_WATCH_TIMEOUT_SECS, WatchRequest};
use tokio::time::Instant;

use crate::runtime::ops::{CompletionSink, ModuleGone};
use crate::upstream::client::Upstream;
use crate::upstream::limits::OpLimits;
use crate::upstream::watch_cache::event::{
    TypeMeta, bookmark_line, event_line, initial_events_end_line, too_old_line,
};
use crate::upstream::watch_cache::informer::list_consistent;
use crate::upstream::watch_cache::store::NotHeld;
use crate::upstream::watch_cache::{Freshness, Phase, Reader, Shared, StartAt, Subscription};

/// kube-apiserver sends a watcher that asked for bookmarks one this long before its timeout.
const BOOKMARK_BEFORE_TIMEOUT: Duration = Duration::from_secs(2);

/// What became of a module's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Answered from the cache (completely, final completion included).
    Done,
    /// The collection is not shared (its LIST was refused), or the watch resumes from events
    /// the cache has released (the API server still holds them): send the request upstream.
    Upstream,
}

/// Waits until the informer has a store: `None` then. `Some` if the request is settled
/// without it: [`Served::Upstream`] if the collection is not shared, [`Served::Done`] once
/// the informer's error was sent (as the module's own request would have failed).
async fn ready(subscription: &Subscription, sink: &CompletionSink) -> Option<Served> {
    let mut changes = subscription.shared.watch_changes();
    loop {
        let phase = subscription.shared.lock().phase.clone();
        match phase {
            Phase::Ready => return None,
            Phase::Refused => return Some(Served::Upstream),
            Phase::Unavailable(err) => {
                let _ = sink.send(&Completion::Error(err), b"").await;
                return Some(Served::Done);
            }
            Phase::Starting => {
                if changes.changed().await.is_err() {
                    return Some(Served::Upstream);
                }
            }
        }
    }
}

/// A module's watch routed to a shared watch: its subscription, where it starts, and when it
/// arrived (before it subscribed).
pub(crate) struct SharedWatch {
    pub(crate) subscription: Subscription,
    pub(crate) start: StartAt,
    pub(crate) arrived: Instant,
}

/// Serves a module's `watch` op from the shared watch: `head`, then the events after
/// `start` (or `410 Expired` and `end`; or [`Served::Upstream`] if the cache released them
/// but the API server still holds them), then new events as they come, a bookmark 2 s before
/// the watch's timeout if it asked for bookmarks, and `end` at the timeout or when the cache
/// is rebuilt (the module resumes as from any closed watch).
///
/// A streaming list ([`StartAt::Stream`]) starts with the current objects as `ADDED` and the
/// `k8s.io/initial-events-end` bookmark, as kube-apiserver's cacher sends them: from the store
/// when its state is fresh enough (any state for `"0"`; at least the asked resourceVersion;
/// for `""`, a store whose consistent LIST was sent after the watch arrived), else from a
/// consistent LIST sent now as the module's identity, followed by the store's events after
/// it; [`Served::Upstream`] if that LIST fails or is older than the resourceVersion asked
/// for (the API server answers such a watch itself).
///
/// A module slower than the history (its next event was evicted before it took it) has its
/// watch ended, as kube-apiserver ends watchers that cannot keep up; it resumes and gets the
/// events or a `410`.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub(crate) async fn watch(
    routed: SharedWatch,
    request: &WatchRequest,
    upstream: &Upstream,
    limits: OpLimits,
    sink: &CompletionSink,
) -> Result<Served, ModuleGone> {
    let SharedWatch {
        subscription,
        start,
        arrived,
    } = routed;
    if let Some(served) = ready(&subscription, sink).await {
        return Ok(served);
    }
    let shared = &subscription.shared;
    let timeout = Duration::from_secs(u64::from(
        request
            .timeout_seconds
            .unwrap_or(DEFAULT_WATCH_TIMEOUT_SECS),
    ));
    let deadline = Instant::now() + timeout;
    let mut bookmark_at = (request.bookmarks && timeout > BOOKMARK_BEFORE_TIMEOUT)
        .then(|| deadline - BOOKMARK_BEFORE_TIMEOUT);
    let mut changes = shared.watch_changes();
    changes.borrow_and_update();

    let started = match start {
        StartAt::Stream(freshness) => {
            match Box::pin(stream_reading(shared, freshness, arrived, upstream, limits)).await {
                Some(reading) => Ok(reading),
                None => return Ok(Served::Upstream),
            }
        }
        StartAt::Now | StartAt::After(_) => start_reading(shared, start),
    };
    // Matched on the value, not kept in a local: it is not kept while the watch lasts.
    let Reading {
        generation,
        initial,
        mut cursor,
        item_type,
        reader,
    } = match started {
        Ok(reading) => reading,
        Err(NotHeld::Released) => {
            tracing::debug!(
                op = sink.op(),
                "a watch resumes from before the shared history; sending it upstream"
            );
            return Ok(Served::Upstream);
        }
        Err(NotHeld::Expired(too_old)) => {
            sink.send(&ok_head(), b"").await?;
            let line = too_old_line(too_old.asked, too_old.oldest);
            sink.send(&Completion::WatchEvent {}, &line).await?;
            sink.send(&Completion::End {}, b"").await?;
            return Ok(Served::Done);
        }
    };
    let started_at = match start {
        StartAt::After(rv) => rv,
        StartAt::Now | StartAt::Stream(_) => cursor,
    };
    sink.send(&ok_head(), b"").await?;
    for line in initial {
        sink.send(&Completion::WatchEvent {}, &line).await?;
    }
    loop {
        // One timer for the bookmark and the timeout, whichever comes first (each costs the
        // op's task room for as long as the watch lasts).
        let wake_at = bookmark_at.map_or(deadline, |at| at.min(deadline));
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            () = tokio::time::sleep_until(wake_at) => {
                if Instant::now() >= deadline {
                    break;
                }
            }
        }
        changes.borrow_and_update();
        let batch = {
            let mut state = shared.lock();
            if state.generation != generation {
                break;
            }
            match state.store.since(cursor) {
                Ok(events) => {
                    if let Some(last) = events.last() {
                        reader.read_to(&mut state, last.resource_version);
                    }
                    Some((events, state.store.resource_version()))
                }
                Err(_) => None,
            }
        };
        let Some((events, newest)) = batch else {
            tracing::debug!(
                op = sink.op(),
                "a watch fell behind the shared history; ending it"
            );
            break;
        };
        for event in &events {
            sink.send(&Completion::WatchEvent {}, &event.line).await?;
            cursor = event.resource_version;
        }
        if bookmark_at.is_some_and(|at| Instant::now() >= at) {
            bookmark_at = None;
            // Like the API server, only a bookmark past where the watch started.
            if newest > started_at
                && let Some(item_type) = &item_type
            {
                cursor = cursor.max(newest);
                sink.send(
                    &Completion::WatchEvent {},
                    &bookmark_line(item_type, newest),
                )
                .await?;
            }
        }
    }
    sink.send(&Completion::End {}, b"").await?;
    Ok(Served::Done)
}

/// Where a watch begins reading a shared watch's store.
struct Reading {
    /// The store's generation (a new LIST ends the watch).
    generation: u64,
    /// The lines sent first: the current objects as `ADDED`, or the events after the start.
    initial: Vec<Bytes>,
    /// The resourceVersion after them.
    cursor: u64,
    /// The objects' type (for bookmarks), once known.
    item_type: Option<TypeMeta>,
    /// The watch's reader registration.
    reader: Reader,
}

/// Where a watch from `start` ([`StartAt::Now`] or [`StartAt::After`]) begins reading
/// `shared`.
fn start_reading(shared: &Arc<Shared>, start: StartAt) -> Result<Reading, NotHeld> {
    let mut state = shared.lock();
    let generation = state.generation;
    let item_type = state.store.item_type().cloned();
    let (initial, cursor) = match start {
        StartAt::Now | StartAt::Stream(_) => {
            (state.store.initial_events(), state.store.resource_version())
        }
        StartAt::After(rv) => state.store.since(rv).map(|events| {
            let cursor = events.last().map_or(rv, |e| e.resource_version);
            (events.iter().map(|e| e.line.clone()).collect(), cursor)
        })?,
    };
    let reader = Reader::new(shared, &mut state, cursor);
    Ok(Reading {
        generation,
        initial,
        cursor,
        item_type,
        reader,
    })
}

/// Where a streaming list begins reading `shared` (see [`watch`]): the initial events and
/// their end bookmark, then the store's events after them. `None` if it goes upstream.
async fn stream_reading(
    shared: &Arc<Shared>,
    freshness: Freshness,
    arrived: Instant,
    upstream: &Upstream,
    limits: OpLimits,
) -> Option<Reading> {
    let fresh = {
        let state = shared.lock();
        match freshness {
            Freshness::Any => true,
            Freshness::AtLeast(rv) => state.store.resource_version() >= rv,
            Freshness::Consistent => state.consistent_since.is_some_and(|sent| sent >= arrived),
        }
    };
    if fresh {
        let mut reading = start_reading(shared, StartAt::Stream(freshness)).ok()?;
        let end = initial_events_end_line(reading.item_type.as_ref()?, reading.cursor);
        reading.initial.push(end);
        return Some(reading);
    }
    let list = list_consistent(upstream, &shared.key, limits).await?;
    if let Freshness::AtLeast(rv) = freshness
        && list.resource_version < rv
    {
        return None;
    }
    let mut state = shared.lock();
    // The store's events after the list follow it; if the store no longer reaches back to it
    // (it was listed again since), the watch goes upstream.
    state.store.since(list.resource_version).ok()?;
    let mut initial: Vec<Bytes> = list
        .items
        .iter()
        .map(|object| event_line("ADDED", &object.json))
        .collect();
    initial.push(initial_events_end_line(
        &list.item_type,
        list.resource_version,
    ));
    let reader = Reader::new(shared, &mut state, list.resource_version);
    Some(Reading {
        generation: state.generation,
        initial,
        cursor: list.resource_version,
        item_type: Some(list.item_type),
        reader,
    })
}

/// Serves a module's `resourceVersion=0` list from the shared watch's store: one final
/// `response` of status 200 with a list of the current objects at the store's resourceVersion.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub(crate) async fn list(
    subscription: Subscription,
    sink: &CompletionSink,
) -> Result<Served, ModuleGone> {
    if let Some(served) = ready(&subscription, sink).await {
        return Ok(served);
    }
    let Some(body) = subscription.shared.lock().store.list_body() else {
        return Ok(Served::Upstream);
    };
    let response = Completion::Response {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
    };
    sink.send(&response, &body).await?;
    Ok(Served::Done)
}

fn ok_head() -> Completion {
    Completion::Head {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
    }
}
