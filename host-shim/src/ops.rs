//! The op table of one module: which operations are live, and the channel their work tasks
//! use to hand completions to the module loop (SPEC.md, "Ordering and queueing" and
//! "Cancellation").
//!
//! Every import registers an op here and spawns one tokio task doing its work. The task
//! sends completion frames through a [`CompletionSink`]; the module loop delivers them, one per
//! `kube_wasm_complete` call, only while the op is still [live](OpTable::is_live). A final
//! completion retires the op; [`OpTable::cancel`] aborts the task, and any completion it had
//! already queued is discarded by the loop because the op is no longer live.

use std::collections::HashMap;
use std::fmt;

use kube_wasm_abi::{Completion, OpId, encode_frame};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// The family an op belongs to, for logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// `http_request`.
    Http,
    /// `watch`.
    Watch,
    /// `delay`.
    Delay,
    /// `stop_signal`.
    StopSignal,
    /// `stream_open`: a websocket relayed to the guest.
    Stream,
    /// `stream_send`: one message queued on a stream.
    StreamSend,
}

impl OpKind {
    /// The op kind as a metrics label: `http`, `watch`, `delay`, `stop_signal`, `stream`,
    /// `stream_send`.
    pub fn label(self) -> &'static str {
        match self {
            OpKind::Http => "http",
            OpKind::Watch => "watch",
            OpKind::Delay => "delay",
            OpKind::StopSignal => "stop_signal",
            OpKind::Stream => "stream",
            OpKind::StreamSend => "stream_send",
        }
    }

    fn noun(self, count: usize) -> &'static str {
        match (self, count == 1) {
            (OpKind::Http, true) => "http request",
            (OpKind::Http, false) => "http requests",
            (OpKind::Watch, true) => "watch",
            (OpKind::Watch, false) => "watches",
            (OpKind::Delay, true) => "delay",
            (OpKind::Delay, false) => "delays",
            (OpKind::StopSignal, true) => "stop signal",
            (OpKind::StopSignal, false) => "stop signals",
            (OpKind::Stream, true) => "stream",
            (OpKind::Stream, false) => "streams",
            (OpKind::StreamSend, true) => "stream send",
            (OpKind::StreamSend, false) => "stream sends",
        }
    }
}

struct LiveOp {
    kind: OpKind,
    task: AbortHandle,
    started: std::time::Instant,
}

/// The live ops of one module, keyed by the ids the host issued to the guest.
///
/// Ids start at 1 and only grow: an id is never 0 and never reused while the module lives.
pub struct OpTable {
    next: OpId,
    live: HashMap<OpId, LiveOp>,
}

impl Default for OpTable {
    fn default() -> Self {
        Self::new()
    }
}

impl OpTable {
    /// An empty table; the first op gets id 1.
    pub fn new() -> Self {
        Self {
            next: 1,
            live: HashMap::new(),
        }
    }

    /// Registers a new op of `kind`: allocates its id, calls `spawn` with it to start the work
    /// task, and keeps the task's abort handle until the op finishes or is cancelled.
    pub fn start(&mut self, kind: OpKind, spawn: impl FnOnce(OpId) -> AbortHandle) -> OpId {
        let id = self.next;
        self.next += 1;
        let task = spawn(id);
        self.live.insert(
            id,
            LiveOp {
                kind,
                task,
                started: std::time::Instant::now(),
            },
        );
        id
    }

    /// Whether `id` is live: issued, and neither finished (final completion delivered) nor
    /// cancelled.
    pub fn is_live(&self, id: OpId) -> bool {
        self.live.contains_key(&id)
    }

    /// Forgets a finished op after its final completion has been delivered. Its task has
    /// already ended (or is about to: it sends nothing after a final completion). Returns its
    /// kind and how long it lived, if it was live.
    pub fn retire(&mut self, id: OpId) -> Option<(OpKind, std::time::Duration)> {
        self.live
            .remove(&id)
            .map(|op| (op.kind, op.started.elapsed()))
    }

    /// Cancels a live op: aborts its task (dropping any upstream request or watch) and forgets
    /// it, so completions it already queued are discarded. Returns whether the op was live.
    pub fn cancel(&mut self, id: OpId) -> bool {
        match self.live.remove(&id) {
            Some(op) => {
                op.task.abort();
                true
            }
            None => false,
        }
    }

    /// Aborts every live op (the module ended). Returns how many of each kind there were.
    pub fn cancel_all(&mut self) -> OpCounts {
        let mut counts = OpCounts::default();
        for (_, op) in self.live.drain() {
            op.task.abort();
            *counts.by_kind.entry(op.kind).or_default() += 1;
        }
        counts
    }

    /// Number of live ops.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no op is live.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Whether a live op of `kind` exists.
    pub fn has_live(&self, kind: OpKind) -> bool {
        self.live.values().any(|op| op.kind == kind)
    }
}

/// How many ops of each kind [`OpTable::cancel_all`] aborted. Displays as e.g.
/// `1 watch, 2 http requests`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OpCounts {
    by_kind: HashMap<OpKind, usize>,
}

impl OpCounts {
    /// Total number of ops.
    pub fn total(&self) -> usize {
        self.by_kind.values().sum()
    }

    /// Number of ops of `kind`.
    pub fn of(&self, kind: OpKind) -> usize {
        self.by_kind.get(&kind).copied().unwrap_or(0)
    }
}

impl fmt::Display for OpCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kinds: Vec<_> = self.by_kind.iter().filter(|(_, n)| **n > 0).collect();
        kinds.sort();
        if kinds.is_empty() {
            return f.write_str("no ops");
        }
        for (i, (kind, n)) in kinds.into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n} {}", kind.noun(*n))?;
        }
        Ok(())
    }
}

/// One completion on its way to the guest: the op it belongs to and its encoded frame.
#[derive(Debug)]
pub struct Delivery {
    /// The op the completion is for.
    pub op: OpId,
    /// The completion frame (header + body), as the guest receives it.
    pub frame: Vec<u8>,
    /// Whether this completion finishes the op.
    pub is_final: bool,
}

/// The module loop has ended; completions can no longer be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the module has ended")]
pub struct ModuleGone;

/// Where an op's work task sends its completions, in order. Sending waits while the module's
/// queue is full, which is how a fast watch is slowed down to the guest's pace.
#[derive(Debug, Clone)]
pub struct CompletionSink {
    op: OpId,
    tx: mpsc::Sender<Delivery>,
}

impl CompletionSink {
    /// A sink for the completions of `op`.
    pub fn new(op: OpId, tx: mpsc::Sender<Delivery>) -> Self {
        Self { op, tx }
    }

    /// The op this sink belongs to.
    pub fn op(&self) -> OpId {
        self.op
    }

    /// Encodes and queues one completion with its `body`.
    ///
    /// # Errors
    /// [`ModuleGone`] when the module has ended; the task should stop then.
    pub async fn send(&self, completion: &Completion, body: &[u8]) -> Result<(), ModuleGone> {
        let delivery = Delivery {
            op: self.op,
            frame: encode_frame(completion, body),
            is_final: completion.is_final(),
        };
        self.tx.send(delivery).await.map_err(|_| ModuleGone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle_task() -> AbortHandle {
        tokio::spawn(std::future::pending::<()>()).abort_handle()
    }

    #[tokio::test]
    async fn ids_start_at_one_and_are_never_reused() {
        let mut ops = OpTable::new();
        let a = ops.start(OpKind::Delay, |_| idle_task());
        let b = ops.start(OpKind::Watch, |_| idle_task());
        assert_eq!((a, b), (1, 2));
        assert!(ops.cancel(a));
        ops.retire(b);
        assert!(ops.is_empty());
        assert_eq!(ops.start(OpKind::Http, |_| idle_task()), 3);
    }

    #[tokio::test]
    async fn cancel_is_one_for_live_and_zero_otherwise() {
        let mut ops = OpTable::new();
        let task = tokio::spawn(std::future::pending::<()>());
        let abort = task.abort_handle();
        let id = ops.start(OpKind::Delay, move |_| abort);
        assert!(!ops.cancel(99));
        assert!(ops.cancel(id));
        assert!(!ops.cancel(id), "a second cancel finds nothing");
        let err = task.await.expect_err("the task was aborted");
        assert!(err.is_cancelled());
    }

    #[tokio::test]
    async fn cancel_all_counts_by_kind() {
        let mut ops = OpTable::new();
        ops.start(OpKind::Watch, |_| idle_task());
        ops.start(OpKind::Http, |_| idle_task());
        ops.start(OpKind::Http, |_| idle_task());
        let counts = ops.cancel_all();
        assert_eq!(counts.total(), 3);
        assert_eq!(counts.of(OpKind::Watch), 1);
        assert_eq!(counts.to_string(), "2 http requests, 1 watch");
        assert!(ops.is_empty());
        assert_eq!(OpCounts::default().to_string(), "no ops");
    }

    #[tokio::test]
    async fn sink_marks_final_completions() {
        let (tx, mut rx) = mpsc::channel(4);
        let sink = CompletionSink::new(7, tx);
        sink.send(&Completion::WatchEvent {}, b"{}")
            .await
            .expect("open");
        sink.send(&Completion::End {}, b"").await.expect("open");
        let first = rx.recv().await.expect("queued");
        let second = rx.recv().await.expect("queued");
        assert_eq!((first.op, first.is_final), (7, false));
        assert_eq!((second.op, second.is_final), (7, true));
        drop(rx);
        assert_eq!(sink.send(&Completion::End {}, b"").await, Err(ModuleGone));
    }
}
