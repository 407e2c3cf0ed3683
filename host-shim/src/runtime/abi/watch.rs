//! `watch(ptr, len) -> op`: one upstream watch of a collection (SPEC.md, "`watch` header").
//!
//! The request is built by `kube_core::Request::watch` / `watch_metadata`, so the API server
//! sees what a native kube client sends. A non-2xx answer is one final `response` with its body;
//! a 2xx answer is a `head` (the watch is established), then one `watch_event` per non-blank
//! line (events of type `ERROR` included, unchanged), then `end` when the server closes the
//! watch, or `error` with `stream` if it breaks off. The guest decides about resuming: one op is one upstream request.
//!
//! A watch the module's [permissions](crate::upstream::permissions) refuse, or whose path the host cannot
//! classify as the API server would, is one final `response` of status 403 (a `Forbidden`
//! `Status`); nothing is sent upstream. An allowed watch goes upstream, or to the shared watch,
//! with the path the check judged (`Access::authorize`).
//!
//! On a host that shares watches ([`crate::upstream::watch_cache`]), a watch from `""`, `"0"` or a
//! numeric resourceVersion, and a streaming list (`send_initial_events`), is served from the
//! shared watch of its collection instead, with the same completions; streaming lists only
//! once the API server has accepted one sent as it is
//! ([`crate::upstream::watch_cache::streaming`]).
//!
//! Dropping the op's task (cancel, or the module ending) drops the response body and so closes
//! the upstream watch.

use std::sync::Arc;

use kube_wasm_abi::names::{IMPORT_MODULE, IMPORT_WATCH};
use kube_wasm_abi::{Completion, WatchRequest};
use wasmtime::{Caller, Linker};

use super::op::{read_frame, start_op};
use super::op_to_wasm;
use super::respond::{LinePolicy, send_denied, send_head_and_lines, send_whole};
use super::shared_watch::{self, Served, SharedWatch};
use crate::runtime::ops::{CompletionSink, ModuleGone, OpKind};
use crate::runtime::state::{HostState, OpContext};
use crate::upstream::client as upstream;
use crate::upstream::request_info::RequestInfo;
use crate::upstream::watch_cache::streaming::{Probe, StreamingRoute};
use crate::upstream::watch_cache::{StartAt, WatchKey};

/// Adds `watch` to `linker`.
///
/// # Errors
/// If the import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IMPORT_MODULE, IMPORT_WATCH, watch)?;
    Ok(())
}

fn watch(mut caller: Caller<'_, HostState>, ptr: i32, len: i32) -> wasmtime::Result<i64> {
    let request = read_frame::<WatchRequest>(&mut caller, IMPORT_WATCH, ptr, len)?.header;
    let started = start_op(caller.data_mut(), OpKind::Watch, 0, |ctx, sink, _| {
        run_watch(ctx, request, sink)
    })?;
    Ok(op_to_wasm(started.id))
}

/// Whether the API server serves a request classified as `info` as a watch of a whole
/// collection (what a shared watch serves): a path naming an object makes it a `get`.
fn is_collection_watch(info: &RequestInfo) -> bool {
    matches!(info, RequestInfo::Resource(r)
        if r.verb == "watch" && r.name.is_empty() && r.subresource.is_empty())
}

/// The shared watch that serves `request`, and where it starts, if the host shares watches
/// and `request` is a collection watch the module may make, from `""`, `"0"` or a numeric
/// resourceVersion, or a streaming list (`send_initial_events` with bookmarks) from any of
/// those (see [`StartAt::of_watch`]).
fn shared_route(ctx: &OpContext, request: &WatchRequest) -> Option<SharedWatch> {
    let arrived = tokio::time::Instant::now();
    let watches = ctx.shared_watches.as_ref()?;
    let start = StartAt::of_watch(request)?;
    let mut http_request = upstream::build_watch_request(request).ok()?;
    let judged = ctx.access.authorize(&mut http_request).ok()?;
    if !is_collection_watch(&judged.info) {
        return None;
    }
    let key = WatchKey::of_watch(watches.identity.clone(), http_request.uri().path(), request);
    let subscription = watches
        .cache
        .subscribe(&key, &ctx.upstream, start.list_hint());
    Some(SharedWatch {
        subscription,
        start,
        arrived,
    })
}

/// Runs one watch and sends its completions to `sink`.
///
/// A watch lasts long and its task keeps room for the largest state it can be in: each way
/// the watch can go (shared, upstream) is a boxed future of its own, so the task holds only
/// the one it takes. Not an `async fn`, which would keep its arguments twice for as long as
/// the watch lasts.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps its arguments twice"
)]
pub fn run_watch(
    ctx: Arc<OpContext>,
    request: WatchRequest,
    sink: CompletionSink,
) -> impl Future<Output = Result<(), ModuleGone>> + Send {
    async move {
        let probe = match &ctx.shared_watches {
            Some(watches) if matches!(StartAt::of_watch(&request), Some(StartAt::Stream(_))) => {
                match watches.cache.streaming_lists().route().await {
                    StreamingRoute::Cache => None,
                    StreamingRoute::Upstream(probe) => Some(probe),
                }
            }
            _ => None,
        };
        if probe.is_none()
            && let Some(routed) = shared_route(&ctx, &request)
        {
            let served = shared_watch::watch(routed, &request, &ctx.upstream, ctx.limits, &sink);
            let served = Box::pin(served).await?;
            if served == Served::Done {
                return Ok(());
            }
        }
        Box::pin(watch_upstream(&ctx, &request, probe, &sink)).await
    }
}

/// Builds and judges `request` and sends it upstream as the module's own watch, and its
/// answer to `sink`; a 2xx answer to a streaming list that is the host's `probe` tells the
/// cache the server serves them. Each way it can go (denied, an answer that is not a watch,
/// the events) is boxed in turn. Built here, not kept from [`shared_route`], so that no HTTP request is
/// held while a shared watch serves the op; a watch the shared route declined is thus
/// built and judged twice (microseconds, once per watch).
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
async fn watch_upstream(
    ctx: &OpContext,
    request: &WatchRequest,
    probe: Option<Probe>,
    sink: &CompletionSink,
) -> Result<(), ModuleGone> {
    let mut http_request = upstream::build_watch_request(request);
    if let Ok(sent) = &mut http_request
        && let Err(denied) = ctx.access.authorize(sent)
    {
        return Box::pin(send_denied(&denied, &ctx.warnings, sink)).await;
    }
    let response = match http_request {
        Ok(http_request) => Box::pin(ctx.upstream.send(http_request)).await,
        Err(err) => Err(err),
    };
    let response = match response {
        Ok(response) => response,
        Err(err) => return sink.send(&Completion::Error(err), b"").await,
    };
    let status = response.status();
    // A refused probe is dropped here, before its answer is sent: the next one may go.
    if let Some(probe) = probe
        && status.is_success()
    {
        probe.accepted();
    }
    if !status.is_success() {
        let headers = upstream::header_pairs(response.headers());
        return Box::pin(send_whole(
            status.as_u16(),
            headers,
            response.into_body(),
            ctx.limits,
            &ctx.access.module,
            sink,
            |_| {},
        ))
        .await;
    }
    tracing::debug!(op = sink.op(), path = %request.path, "watch started");
    let _open = ctx.metrics.watch_opened();
    let headers = upstream::header_pairs(response.headers());
    Box::pin(send_head_and_lines(
        status.as_u16(),
        headers,
        response.into_body(),
        ctx.limits,
        sink,
        LinePolicy::WatchEvents,
    ))
    .await
}
