//! The completions that answer a request: a 403 for a denied one, a whole body as one final
//! `response`, or a streamed body as one completion per line (SPEC.md, "Completions").

use std::time::Instant;

use bytes::Bytes;
use http_body_util::BodyExt;
use kube::client::Body;
use kube_wasm_abi::{Completion, ErrorCode, LineFramer, OpError};

use crate::runtime::ops::{CompletionSink, ModuleGone};
use crate::runtime::quota::{HeldBytes, Quota, QuotaExceeded, WarnThrottle};
use crate::upstream::client::{self as upstream, CollectError};
use crate::upstream::limits::OpLimits;
use crate::upstream::permissions::Denied;

/// Answers a request the module's permissions refuse as the API server answers a forbidden
/// one: a final `response` of status 403 with a `Status` of reason `Forbidden`. Nothing is
/// sent upstream. The warning in the host's log is rate-limited per module.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub async fn send_denied(
    denied: &Denied,
    warnings: &WarnThrottle,
    sink: &CompletionSink,
) -> Result<(), ModuleGone> {
    if let Some(held_back) = warnings.allow("denied", Instant::now()) {
        tracing::warn!(held_back, "denied: {denied}");
    }
    let completion = Completion::Response {
        status: 403,
        headers: vec![("content-type".into(), "application/json".into())],
    };
    sink.send(&completion, &denied.status_body()).await
}

/// Collects `body` and sends it as one final `response` (or an `error` if it breaks off or
/// exceeds [`OpLimits::max_body_bytes`]). The body is collected against the module's
/// buffered-bytes budget and holds it until the guest takes it; a body that does not fit is
/// dropped and answered with a `429` (see [`QuotaExceeded::too_many_requests`]), as the API
/// server answers a client it has no room for. A body collected whole is handed to `on_body`
/// before the module is sent it: what the host keeps of it (a list that seeds a shared watch)
/// is kept before the module, answered, can ask for more.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub async fn send_whole(
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
    limits: OpLimits,
    module: &str,
    sink: &CompletionSink,
    on_body: impl FnOnce(&Bytes),
) -> Result<(), ModuleGone> {
    let budget = sink.budget().clone();
    let mut held = HeldBytes::default();
    let collected = upstream::collect_body_within(body, limits.max_body_bytes, |n| {
        budget.try_hold(n).map(|more| held.merge(more)).is_some()
    })
    .await;
    match collected {
        Ok(bytes) => {
            on_body(&bytes);
            sink.send_held(&Completion::Response { status, headers }, &bytes, held)
                .await
        }
        Err(CollectError::NoRoom) => {
            drop(held);
            let exceeded = QuotaExceeded {
                module: module.to_owned(),
                quota: Quota::BufferedBytes,
                limit: budget.limit() as u64,
            };
            let (completion, body) = exceeded.too_many_requests();
            sink.send(&completion, &body).await
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

/// Answers a 2xx response whose body is streamed: a `head` with `status` and `headers`
/// (the request or watch is established), then the body as [`stream_lines`] sends it.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
pub async fn send_head_and_lines(
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
    limits: OpLimits,
    sink: &CompletionSink,
    policy: LinePolicy,
) -> Result<(), ModuleGone> {
    sink.send(&Completion::Head { status, headers }, b"")
        .await?;
    stream_lines(body, limits, sink, policy).await
}

/// Streams `body` as one completion per line, then `end`; an `error` (`stream` or
/// `too_large`) if the body breaks off or a line is too long.
///
/// # Errors
/// [`ModuleGone`] if the module ended meanwhile.
async fn stream_lines(
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

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc;

    use super::*;
    use crate::runtime::quota::ByteBudget;

    #[tokio::test]
    async fn a_whole_body_is_handed_on_before_the_module_is_sent_it() {
        let (tx, mut rx) = mpsc::channel(4);
        let sink = CompletionSink::new(7, tx, ByteBudget::new(1 << 20));
        let mut queued_when_handed_on = None;
        let body = Body::from(b"{\"items\":[]}".to_vec());
        send_whole(
            200,
            Vec::new(),
            body,
            OpLimits::default(),
            "m",
            &sink,
            |b| {
                assert_eq!(&b[..], b"{\"items\":[]}");
                queued_when_handed_on = Some(rx.len());
            },
        )
        .await
        .expect("the module is there");
        assert_eq!(queued_when_handed_on, Some(0), "handed on first");
        let sent = rx.try_recv().expect("then sent");
        assert!(sent.is_final);
        assert_eq!(sent.op, 7);
    }
}
