//! The upstream side of a shared watch: one LIST (or the seed a module's own complete list
//! left, at exactly the resourceVersion its first subscriber starts from), then one WATCH at a
//! time from the store's resourceVersion (with bookmarks), as kube-apiserver's cacher (or
//! client-go's reflector) does it:
//! - a watch the server closes (its timeout) is resumed from the newest resourceVersion;
//! - a watch that breaks off, or cannot be opened, is retried from there after a backoff;
//! - a `410 Gone`/`Expired` (or any other `ERROR` event, or an event the cache cannot read)
//!   means events were missed: the informer LISTs again, which replaces the store and ends the
//!   watches served from the old one (their modules resume and get a `410` or the new events);
//! - events leave the history when they reach its age, while the watch waits for the next;
//! - a LIST refused with a 4xx status ends the informer: the collection is not shared.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use kube::client::Body;
use kube_core::params::{ListParams, VersionMatch};
use kube_wasm_abi::{DEFAULT_WATCH_TIMEOUT_SECS, ErrorCode, LineFramer, OpError, WatchRequest};
use tokio::time::Instant;

use super::event::{ParsedList, WatchLine, parse_list, parse_watch_line};
use super::{Phase, Shared, WatchCache, WatchKey};
use crate::backoff::{Backoff, BackoffState};
use crate::upstream::client::{self as upstream, Upstream};
use crate::upstream::limits::OpLimits;

/// Retry delays of LISTs and WATCHes that failed.
const RETRY: Backoff = Backoff {
    initial: Duration::from_millis(200),
    max: Duration::from_secs(10),
    reset_after: Duration::from_secs(30),
};

/// Why a LIST did not give a store.
enum ListFailure {
    /// A 4xx answer (other than 410 and 429): the identity may not list this.
    Refused(u16),
    /// `410`: the exact resourceVersion asked for is compacted.
    Expired,
    /// Anything that may pass: no answer, 5xx, 429, a body that broke off or is unreadable.
    Transient(OpError),
}

/// How a WATCH ended.
enum WatchEnd {
    /// The server closed it (its timeout): resume at once.
    Closed,
    /// Events were missed (410, another `ERROR`, an unreadable event): LIST again.
    Relist(String),
    /// It broke off or could not be opened: resume after a backoff.
    Broken(OpError),
}

/// Where a new informer starts.
pub(crate) struct Start {
    /// The resourceVersion its first subscriber starts from: its first LIST is `Exact` there.
    pub(crate) hint: Option<u64>,
    /// A module's complete list body of the key, used instead of the first LIST if it is at
    /// exactly `hint`.
    pub(crate) seed: Option<Bytes>,
}

impl Start {
    /// The seed as the first LIST's answer, if it is a complete list at the hint.
    fn seeded(self, key: &super::WatchKey) -> Option<ParsedList> {
        let (hint, body) = (self.hint?, self.seed?);
        match parse_list(body) {
            Ok(list) if !list.more && list.resource_version == hint => {
                tracing::debug!(key = %key, rv = hint, "shared watch starts from the module's own list");
                Some(list)
            }
            Ok(list) => {
                tracing::debug!(key = %key, rv = list.resource_version, hint, more = list.more, "the module's list does not seed its watch");
                None
            }
            Err(bad) => {
                tracing::debug!(key = %key, "the module's list cannot seed its watch: {bad}");
                None
            }
        }
    }
}

/// Runs the informer of `shared` until it is aborted (no subscriber for the linger time) or
/// its LIST is refused.
///
/// The task lives as long as the shared watch and keeps room for its largest state: the
/// listing is boxed, so only the watching's state is held between events. Not an `async fn`,
/// which would keep its arguments twice.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps its arguments twice"
)]
pub(crate) fn run_informer(
    shared: Arc<Shared>,
    upstream: Upstream,
    cache: WatchCache,
    start: Start,
) -> impl Future<Output = ()> + Send {
    async move {
        let mut retry = BackoffState::new(RETRY);
        let mut start = Some(start);
        loop {
            let listed = list_until_given(&upstream, &shared, &cache, &mut retry, start.take());
            let Some((list, consistent_since)) = Box::pin(listed).await else {
                return;
            };
            store_list(&shared, &cache, list, consistent_since);
            loop {
                let attempt = Instant::now();
                match watch(&upstream, &shared, &cache).await {
                    WatchEnd::Closed => {}
                    WatchEnd::Relist(why) => {
                        tracing::info!(key = %shared.key, "shared watch relists: {why}");
                        break;
                    }
                    WatchEnd::Broken(err) => {
                        tracing::warn!(key = %shared.key, "shared watch broke off: {err}");
                        tokio::time::sleep(retry.delay_after(attempt.elapsed())).await;
                    }
                }
            }
        }
    }
}

/// LISTs until the API server gives the list (the first time from `start`: its seed, or
/// `Exact` at its hint), after a backoff for each transient failure, with the time it was
/// sent if it was a consistent LIST. `None` if the API server refuses the LIST: the cache
/// forgets `shared`, whose watches then go upstream.
async fn list_until_given(
    upstream: &Upstream,
    shared: &Arc<Shared>,
    cache: &WatchCache,
    retry: &mut BackoffState,
    start: Option<Start>,
) -> Option<(ParsedList, Option<Instant>)> {
    let (mut start_hint, mut seeded) = match start {
        Some(start) => (start.hint, start.seeded(&shared.key)),
        None => (None, None),
    };
    loop {
        let attempt = Instant::now();
        let (listed, consistent) = match seeded.take() {
            Some(list) => {
                start_hint = None;
                (Ok(list), false)
            }
            None => {
                let at = start_hint.take();
                let key = &shared.key;
                (list(upstream, key, cache.limits(), at).await, at.is_none())
            }
        };
        match listed {
            Ok(list) => return Some((list, consistent.then_some(attempt))),
            Err(ListFailure::Expired) => {}
            Err(ListFailure::Refused(status)) => {
                tracing::info!(key = %shared.key, status, "the API server refused the shared LIST; watches of it go upstream one by one");
                cache.remove(shared);
                shared.update(|state| state.phase = Phase::Refused);
                return None;
            }
            Err(ListFailure::Transient(err)) => {
                tracing::warn!(key = %shared.key, "shared LIST failed: {err}");
                shared.update(|state| {
                    if state.phase != Phase::Ready {
                        state.phase = Phase::Unavailable(err);
                    }
                });
                tokio::time::sleep(retry.delay_after(attempt.elapsed())).await;
            }
        }
    }
}

/// Replaces the store of `shared` with `list` (a consistent LIST sent at `consistent_since`,
/// or `None`): the cache is ready, in a new generation.
fn store_list(
    shared: &Shared,
    cache: &WatchCache,
    list: ParsedList,
    consistent_since: Option<Instant>,
) {
    tracing::debug!(key = %shared.key, rv = list.resource_version, items = list.items.len(), "shared LIST");
    shared.update(|state| {
        let released = state.store.history_bytes();
        state.store.reset(list);
        cache.release_history(released);
        state.phase = Phase::Ready;
        state.generation += 1;
        state.consistent_since = consistent_since;
    });
}

/// A consistent LIST of `key` now, as its identity: the state a consistent (or
/// not-older-than) streaming list is served from when the shared store cannot show that it is
/// fresh enough, as kube-apiserver's cacher waits for its cache to be. `None` if it fails: the
/// watch then goes upstream, where it meets the same answer.
pub(crate) async fn list_consistent(
    upstream: &Upstream,
    key: &WatchKey,
    limits: OpLimits,
) -> Option<ParsedList> {
    match list(upstream, key, limits, None).await {
        Ok(list) if !list.more => Some(list),
        Ok(_) => None,
        Err(failure) => {
            let why = match failure {
                ListFailure::Refused(status) => format!("refused with {status}"),
                ListFailure::Expired => "410".to_owned(),
                ListFailure::Transient(err) => err.to_string(),
            };
            tracing::debug!(key = %key, "no consistent LIST for a streaming list ({why}); it goes upstream");
            None
        }
    }
}

/// One LIST of `key` (as its identity, through `upstream`): consistent, or `Exact` at `at`.
///
/// # Errors
/// How it failed ([`ListFailure`]).
async fn list(
    upstream: &Upstream,
    key: &WatchKey,
    limits: OpLimits,
    at: Option<u64>,
) -> Result<ParsedList, ListFailure> {
    let mut params = ListParams {
        label_selector: key.label_selector.clone(),
        field_selector: key.field_selector.clone(),
        ..ListParams::default()
    };
    if let Some(rv) = at {
        params = params.at(&rv.to_string()).matching(VersionMatch::Exact);
    }
    let builder = kube_core::Request::new(key.path.clone());
    let request = if key.metadata_only {
        builder.list_metadata(&params)
    } else {
        builder.list(&params)
    }
    .map_err(|e| ListFailure::Transient(OpError::new(ErrorCode::InvalidRequest, e.to_string())))?;
    let response = upstream
        .send_within(request.map(Body::from), limits.request_timeout)
        .await
        .map_err(ListFailure::Transient)?;
    let status = response.status().as_u16();
    let body = upstream::collect_body(response.into_body(), limits.max_body_bytes)
        .await
        .map_err(|e| ListFailure::Transient(e.into()))?;
    match status {
        200..=299 => parse_list(body)
            .map_err(|e| ListFailure::Transient(OpError::new(ErrorCode::Internal, e.to_string()))),
        410 if at.is_some() => Err(ListFailure::Expired),
        400..=499 if status != 410 && status != 429 => Err(ListFailure::Refused(status)),
        _ => Err(ListFailure::Transient(OpError::new(
            ErrorCode::Connect,
            format!(
                "the API server answered the shared LIST with {status}: {}",
                String::from_utf8_lossy(&body)
            ),
        ))),
    }
}

/// Opens one WATCH from the store's resourceVersion: its body, or how the watch ended
/// without one (a `410`, another status, no answer).
async fn open_watch(upstream: &Upstream, shared: &Shared) -> Result<Body, WatchEnd> {
    let key = &shared.key;
    let from = shared.lock().store.resource_version();
    let request = WatchRequest {
        path: key.path.clone(),
        label_selector: key.label_selector.clone(),
        field_selector: key.field_selector.clone(),
        timeout_seconds: Some(DEFAULT_WATCH_TIMEOUT_SECS),
        bookmarks: true,
        send_initial_events: false,
        resource_version: from.to_string(),
        metadata_only: key.metadata_only,
    };
    let response = match upstream::build_watch_request(&request) {
        Ok(request) => upstream.send(request).await,
        Err(err) => Err(err),
    }
    .map_err(WatchEnd::Broken)?;
    let status = response.status();
    if status.as_u16() == 410 {
        return Err(WatchEnd::Relist("410 Gone".into()));
    }
    if !status.is_success() {
        let body = upstream::collect_body(response.into_body(), 64 * 1024)
            .await
            .unwrap_or_default();
        return Err(WatchEnd::Broken(OpError::new(
            ErrorCode::Connect,
            format!(
                "the API server answered the shared WATCH with {status}: {}",
                String::from_utf8_lossy(&body)
            ),
        )));
    }
    Ok(response.into_body())
}

/// Runs one WATCH to its end. The informer spends its life here: the opening is boxed, so
/// that the request, the answer's head and the sending's state are not kept while events
/// are awaited.
async fn watch(upstream: &Upstream, shared: &Shared, cache: &WatchCache) -> WatchEnd {
    let mut body = match Box::pin(open_watch(upstream, shared)).await {
        Ok(body) => body,
        Err(end) => return end,
    };
    let _open = cache.metrics().watch_opened();
    let mut framer = LineFramer::new(cache.limits().max_line_bytes);
    loop {
        let expiry = cache.history_expiry(&shared.lock().store);
        let frame = tokio::select! {
            frame = body.frame() => frame,
            () = tokio::time::sleep_until(expiry.unwrap_or_else(Instant::now)), if expiry.is_some() => {
                shared.update(|state| cache.expire_history(&mut state.store));
                continue;
            }
        };
        let Some(frame) = frame else {
            break;
        };
        let data = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_trailers) => continue,
            },
            Err(err) => return WatchEnd::Broken(upstream::body_error(err)),
        };
        let lines = match framer.push(&data) {
            Ok(lines) => lines,
            Err(too_long) => return WatchEnd::Relist(too_long.to_string()),
        };
        for line in lines {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Some(end) = apply_line(shared, cache, Bytes::from(line)) {
                return end;
            }
        }
    }
    WatchEnd::Closed
}

/// Applies one upstream event to the store; `Some` if the watch must end.
fn apply_line(shared: &Shared, cache: &WatchCache, line: Bytes) -> Option<WatchEnd> {
    match parse_watch_line(line) {
        Err(bad) => Some(WatchEnd::Relist(bad.to_string())),
        Ok(WatchLine::Error { code, message }) => {
            Some(WatchEnd::Relist(format!("ERROR event {code}: {message}")))
        }
        Ok(WatchLine::Bookmark(rv)) => {
            shared.update(|state| state.store.bookmark(rv));
            None
        }
        Ok(WatchLine::Change {
            kind,
            object,
            type_meta,
            line,
        }) => {
            shared.update(|state| {
                let before = state.store.history_bytes();
                state.store.apply(kind, object, type_meta, line);
                let after = state.store.history_bytes();
                if after >= before {
                    cache.account_history(&mut state.store, after - before);
                } else {
                    cache.release_history(before - after);
                }
            });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(rv: u64, more: bool) -> Bytes {
        let token = if more { r#","continue":"next""# } else { "" };
        Bytes::from(format!(
            r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"{token}}},"items":[{{"metadata":{{"name":"a","namespace":"n","resourceVersion":"{rv}"}}}}]}}"#
        ))
    }

    fn seeded(hint: Option<u64>, seed: Option<Bytes>) -> Option<u64> {
        let key = super::super::WatchKey::new(None, "/api/v1/configmaps", None, None, false);
        Start { hint, seed }
            .seeded(&key)
            .map(|list| list.resource_version)
    }

    #[test]
    fn only_a_whole_list_at_the_hint_seeds() {
        assert_eq!(seeded(Some(41), Some(seed(41, false))), Some(41));
        assert_eq!(
            seeded(Some(40), Some(seed(41, false))),
            None,
            "another state"
        );
        assert_eq!(seeded(Some(41), Some(seed(41, true))), None, "one page");
        assert_eq!(
            seeded(None, Some(seed(41, false))),
            None,
            "no watch position"
        );
        assert_eq!(seeded(Some(41), None), None);
        assert_eq!(seeded(Some(41), Some(Bytes::from_static(b"{"))), None);
    }
}
