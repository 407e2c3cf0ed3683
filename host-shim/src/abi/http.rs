//! `http_request(ptr, len) -> op`: one request to the API server (SPEC.md, "`http_request`
//! header" and "Completions").
//!
//! - `whole` mode, or any non-2xx status: one final `response` with the whole body.
//! - `lines` mode with a 2xx status: `head`, one `line` per line of the body (split on `\n`
//!   whatever the transport chunking, limited to [`OpLimits::max_line_bytes`]), then `end`.
//! - No response: `error` (`connect`, `timeout`, …); a body that breaks off: `error` with
//!   `stream`; a line or body over the limit: `error` with `too_large`.
//!
//! - A request the module's [permissions](crate::permissions) refuse, or that the host cannot
//!   classify as the API server would: one final `response` of status 403 (a `Forbidden`
//!   `Status`), and nothing is sent upstream. An allowed request goes upstream with the URI
//!   the check judged ([`crate::state::Access::authorize`]).
//!
//! - On a host that shares watches ([`crate::watch_cache`]), a `resourceVersion=0` list of a
//!   collection is answered from the shared watch of that collection (a final `response`).
//!
//! Dropping the op's task (cancel, or the module ending) drops the request and its connection.

use http_body_util::BodyExt;
use kube::client::Body;
use kube_wasm_abi::names::{IMPORT_HTTP_REQUEST, IMPORT_MODULE};
use kube_wasm_abi::{
    Completion, ErrorCode, HttpRequest, LineFramer, OpError, ResponseMode, decode_frame,
};
use tracing::Instrument as _;
use wasmtime::{Caller, Linker};

use super::{BadAbiCall, memory, op_to_wasm};
use crate::ops::{CompletionSink, ModuleGone, OpKind};
use crate::permissions::Denied;
use crate::state::{HostState, OpLimits};
use crate::upstream::{self, Upstream};
use crate::watch_cache::key::list_key;
use crate::watch_cache::serve::{self, Served};

/// Adds `http_request` to `linker`.
///
/// # Errors
/// If the import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.func_wrap(IMPORT_MODULE, IMPORT_HTTP_REQUEST, http_request)?;
    Ok(())
}

fn http_request(mut caller: Caller<'_, HostState>, ptr: i32, len: i32) -> wasmtime::Result<i64> {
    let bytes = memory::read_guest_bytes(&mut caller, IMPORT_HTTP_REQUEST, ptr, len)?;
    let frame = decode_frame::<HttpRequest>(&bytes)
        .map_err(|e| BadAbiCall::new(IMPORT_HTTP_REQUEST, e.to_string()))?;
    let mode = frame.header.response;
    let mut request = upstream::build_http_request(&frame.header, frame.body.to_vec());
    let state = caller.data_mut();
    let ctx = state.ctx.clone();
    let judged = request.as_mut().ok().map(|r| ctx.access.authorize(r));
    let (denied, info) = match judged {
        Some(Err(denied)) => (Some(denied), None),
        Some(Ok(info)) => (None, Some(info)),
        None => (None, None),
    };
    let shared_list = match (&ctx.shared_watches, &request, &info) {
        (Some(watches), Ok(r), Some(info)) if mode == ResponseMode::Whole => list_key(
            watches.identity.clone(),
            r.method(),
            info,
            &r.uri().to_string(),
            &frame.header.headers,
        )
        .map(|key| (watches.cache.clone(), key)),
        _ => None,
    };
    let id = state.ops.start(OpKind::Http, |id| {
        let sink = CompletionSink::new(id, ctx.completions.clone());
        let task = async move {
            let _ = match (denied, shared_list) {
                (Some(denied), _) => send_denied(&denied, &sink).await,
                (None, Some((cache, key))) => {
                    let subscription = cache.subscribe(&key, &ctx.upstream, None);
                    match serve::list(subscription, &sink).await {
                        Ok(Served::Upstream) => {
                            run(ctx.upstream, request, mode, ctx.limits, &sink).await
                        }
                        served => served.map(drop),
                    }
                }
                (None, None) => run(ctx.upstream, request, mode, ctx.limits, &sink).await,
            };
        };
        ctx.runtime
            .spawn(task.instrument(tracing::Span::current()))
            .abort_handle()
    });
    Ok(op_to_wasm(id))
}

/// Answers a request the module's permissions refuse as the API server answers a forbidden
/// one: a final `response` of status 403 with a `Status` of reason `Forbidden`. Nothing is
/// sent upstream.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub async fn send_denied(denied: &Denied, sink: &CompletionSink) -> Result<(), ModuleGone> {
    tracing::warn!("denied: {denied}");
    let completion = Completion::Response {
        status: 403,
        headers: vec![("content-type".into(), "application/json".into())],
    };
    sink.send(&completion, &denied.status_body()).await
}

/// Performs one request and sends its completions to `sink`.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub async fn run(
    upstream: Upstream,
    request: Result<http::Request<Body>, OpError>,
    mode: ResponseMode,
    limits: OpLimits,
    sink: &CompletionSink,
) -> Result<(), ModuleGone> {
    let response = match request {
        Ok(request) => upstream.send_within(request, limits.request_timeout).await,
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
        return send_whole(status.as_u16(), headers, body, limits, sink).await;
    }
    sink.send(
        &Completion::Head {
            status: status.as_u16(),
            headers,
        },
        b"",
    )
    .await?;
    stream_lines(body, limits, sink, LinePolicy::KeepBlank).await
}

/// Collects `body` and sends it as one final `response` (or an `error` if it breaks off or
/// exceeds [`OpLimits::max_body_bytes`]).
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub async fn send_whole(
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
    limits: OpLimits,
    sink: &CompletionSink,
) -> Result<(), ModuleGone> {
    match upstream::collect_body(body, limits.max_body_bytes).await {
        Ok(bytes) => {
            sink.send(&Completion::Response { status, headers }, &bytes)
                .await
        }
        Err(err) => sink.send(&Completion::Error(err.into()), b"").await,
    }
}

/// What to do with empty lines of a streamed body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinePolicy {
    /// `lines` mode: every line, empty ones included, is a `line`.
    KeepBlank,
    /// Watches: blank lines are skipped; every other line is a `watch_event`.
    WatchEvents,
}

/// Streams `body` as one completion per line, then `end`; an `error` (`stream` or
/// `too_large`) if the body breaks off or a line is too long.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub async fn stream_lines(
    mut body: Body,
    limits: OpLimits,
    sink: &CompletionSink,
    policy: LinePolicy,
) -> Result<(), ModuleGone> {
    let mut framer = LineFramer::new(limits.max_line_bytes);
    while let Some(frame) = body.frame().await {
        let data = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_trailers) => continue,
            },
            Err(err) => {
                return sink
                    .send(&Completion::Error(upstream::body_error(err)), b"")
                    .await;
            }
        };
        let lines = match framer.push(&data) {
            Ok(lines) => lines,
            Err(too_long) => {
                let err = OpError::new(ErrorCode::TooLarge, too_long.to_string());
                return sink.send(&Completion::Error(err), b"").await;
            }
        };
        for line in lines {
            send_line(&line, sink, policy).await?;
        }
    }
    if let Some(last) = framer.finish() {
        send_line(&last, sink, policy).await?;
    }
    sink.send(&Completion::End {}, b"").await
}

async fn send_line(
    line: &[u8],
    sink: &CompletionSink,
    policy: LinePolicy,
) -> Result<(), ModuleGone> {
    match policy {
        LinePolicy::KeepBlank => sink.send(&Completion::Line {}, line).await,
        LinePolicy::WatchEvents if line.iter().all(u8::is_ascii_whitespace) => Ok(()),
        LinePolicy::WatchEvents => sink.send(&Completion::WatchEvent {}, line).await,
    }
}
