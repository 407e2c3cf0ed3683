//! `http_request(ptr, len) -> op`: one request to the API server (SPEC.md, "`http_request`
//! header" and "Completions").
//!
//! - `whole` mode, or any non-2xx status: one final `response` with the whole body.
//! - `lines` mode with a 2xx status: `head`, one `line` per line of the body (split on `\n`
//!   whatever the transport chunking, limited to [`OpLimits::max_line_bytes`]), then `end`.
//! - No response: `error` (`connect`, `timeout`, …); a body that breaks off: `error` with
//!   `stream`; a line or body over the limit: `error` with `too_large`.
//!
//! - A request the module's [permissions](crate::upstream::permissions) refuse, or that the host cannot
//!   classify as the API server would: one final `response` of status 403 (a `Forbidden`
//!   `Status`), and nothing is sent upstream. An allowed request goes upstream with the URI
//!   the check judged (`Access::authorize`).
//!
//! - On a host that shares watches ([`crate::upstream::watch_cache`]), a `resourceVersion=0` list of a
//!   collection is answered from the shared watch of that collection (a final `response`); a
//!   consistent list goes upstream, and its complete `200` answer is offered to the cache as
//!   the seed of the shared watch the module's watcher opens next.
//!
//! Dropping the op's task (cancel, or the module ending) drops the request and its connection.

use bytes::Bytes;
use kube::client::Body;
use kube_wasm_abi::names::{IMPORT_HTTP_REQUEST, IMPORT_MODULE};
use kube_wasm_abi::{Completion, HttpRequest, OpError, ResponseMode};
use wasmtime::{Caller, Linker};

use super::op::{read_frame, start_op};
use super::op_to_wasm;
use super::respond::{LinePolicy, send_denied, send_head_and_lines, send_whole};
use super::shared_watch::{self, Served};
use crate::runtime::ops::{CompletionSink, ModuleGone, OpKind};
use crate::runtime::state::{HostState, OpContext};
use crate::upstream::client as upstream;
use crate::upstream::watch_cache::WatchCache;
use crate::upstream::watch_cache::key::{SharedList, WatchKey, list_key};

/// Adds `http_request` to `linker`.
///
/// # Errors
/// If the import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IMPORT_MODULE, IMPORT_HTTP_REQUEST, http_request)?;
    Ok(())
}

fn http_request(mut caller: Caller<'_, HostState>, ptr: i32, len: i32) -> wasmtime::Result<i64> {
    let argument = read_frame::<HttpRequest>(&mut caller, IMPORT_HTTP_REQUEST, ptr, len)?;
    let mode = argument.header.response;
    let body_bytes = argument.body.len();
    let mut request = upstream::build_http_request(&argument.header, argument.body);
    let state = caller.data_mut();
    let (denied, judged) = match request.as_mut().map(|r| state.ctx.access.authorize(r)) {
        Ok(Err(denied)) => (Some(denied), None),
        Ok(Ok(judged)) => (None, Some(judged)),
        Err(_) => (None, None),
    };
    let shared_list = match (&state.ctx.shared_watches, &request, &judged) {
        (Some(watches), Ok(r), Some(judged)) if mode == ResponseMode::Whole => list_key(
            watches.identity.clone(),
            r.method(),
            &judged.info,
            &judged.uri,
            r.uri().path(),
            &argument.header.headers,
        )
        .map(|key| (watches.cache.clone(), key)),
        _ => None,
    };
    let started = start_op(
        state,
        OpKind::Http,
        body_bytes,
        |ctx, sink, held| async move {
            // The request body's bytes count against the module's budget while it is in flight.
            let _held = held;
            match (denied, shared_list) {
                (Some(denied), _) => send_denied(&denied, &ctx.warnings, &sink).await,
                (None, Some((cache, SharedList::Cached(key)))) => {
                    let subscription = cache.subscribe(&key, &ctx.upstream, None);
                    match shared_watch::list(subscription, &sink).await? {
                        Served::Upstream => send_request(&ctx, request, mode, None, &sink).await,
                        Served::Done => Ok(()),
                    }
                }
                (None, Some((cache, SharedList::Consistent(key)))) => {
                    send_request(&ctx, request, mode, Some((cache, key)), &sink).await
                }
                (None, None) => send_request(&ctx, request, mode, None, &sink).await,
            }
        },
    )?;
    Ok(op_to_wasm(started.id))
}

/// Sends one request upstream, as the module of `ctx`, and its answer's completions to `sink`.
/// With `seed` (a module's consistent list of that key, in `whole` mode), a complete `200`
/// answer is offered to the cache as the seed of the key's shared watch.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub async fn send_request(
    ctx: &OpContext,
    request: Result<http::Request<Body>, OpError>,
    mode: ResponseMode,
    seed: Option<(WatchCache, WatchKey)>,
    sink: &CompletionSink,
) -> Result<(), ModuleGone> {
    let limits = ctx.limits;
    let response = match request {
        Ok(request) => {
            ctx.upstream
                .send_within(request, limits.request_timeout)
                .await
        }
        Err(err) => Err(err),
    };
    let response = match response {
        Ok(response) => response,
        Err(err) => return sink.send(&Completion::Error(err), b"").await,
    };
    let status = response.status();
    let headers = upstream::header_pairs(response.headers());
    let body = response.into_body();
    if mode == ResponseMode::Whole || !status.is_success() {
        let offer_seed = |body: &Bytes| {
            if let (200, Some((cache, key))) = (status.as_u16(), seed) {
                cache.offer_seed(key, body.clone());
            }
        };
        return send_whole(
            status.as_u16(),
            headers,
            body,
            limits,
            &ctx.access.module,
            sink,
            offer_seed,
        )
        .await;
    }
    send_head_and_lines(
        status.as_u16(),
        headers,
        body,
        limits,
        sink,
        LinePolicy::KeepBlank,
    )
    .await
}
