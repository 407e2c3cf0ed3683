//! How an op's work task hands its completions to the module loop, in order.

use kube_wasm_abi::{Completion, ErrorCode, OpError, OpId, encode_frame};
use tokio::sync::mpsc;

use crate::runtime::quota::{ByteBudget, HeldBytes};

/// A module's completion queue carries boxed completions: tokio's channel keeps its blocks of
/// 32 slots for the channel's life, and a box keeps those of an idle module small.
pub type CompletionSender = mpsc::Sender<Box<QueuedCompletion>>;

/// The receiving end of a module's completion queue (see [`CompletionSender`]).
pub type CompletionReceiver = mpsc::Receiver<Box<QueuedCompletion>>;

/// One completion on its way to the guest: the op it belongs to and its encoded frame.
#[derive(Debug)]
pub struct QueuedCompletion {
    /// The op the completion is for.
    pub op: OpId,
    /// The completion frame (header + body), as the guest receives it.
    pub frame: Vec<u8>,
    /// Whether this completion finishes the op.
    pub is_final: bool,
    /// The module's buffered bytes this completion holds until it is delivered or dropped.
    pub held: HeldBytes,
}

/// The module loop has ended; completions can no longer be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the module has ended")]
pub struct ModuleGone;

/// Where an op's work task sends its completions, in order. Sending waits while the module's
/// queue is full, or its [buffered-bytes quota](crate::runtime::quota::Quotas::buffered_bytes)
/// is spent by completions the guest has not taken yet: that is how a fast watch is slowed
/// down to the guest's pace.
#[derive(Debug, Clone)]
pub struct CompletionSink {
    op: OpId,
    tx: CompletionSender,
    budget: ByteBudget,
}

impl CompletionSink {
    /// A sink for the completions of `op`, whose frames are held against `budget`.
    pub fn new(op: OpId, tx: CompletionSender, budget: ByteBudget) -> Self {
        Self { op, tx, budget }
    }

    /// The op this sink belongs to.
    pub fn op(&self) -> OpId {
        self.op
    }

    /// The module's buffered-bytes budget.
    pub fn budget(&self) -> &ByteBudget {
        &self.budget
    }

    /// Encodes and queues one completion with its `body`, first taking its bytes from the
    /// module's budget (waiting for them). A frame larger than the whole budget is replaced
    /// by a final `error` of code `too_large`.
    ///
    /// The future is boxed while it runs: an op's task keeps room for what it awaits for as
    /// long as the op lasts, and most wait far longer than they send.
    ///
    /// # Errors
    /// [`ModuleGone`] when the module has ended; the task should stop then.
    pub async fn send(&self, completion: &Completion, body: &[u8]) -> Result<(), ModuleGone> {
        Box::pin(self.send_unboxed(completion, body)).await
    }

    async fn send_unboxed(&self, completion: &Completion, body: &[u8]) -> Result<(), ModuleGone> {
        let frame = encode_frame(completion, body);
        match self.budget.hold(frame.len()).await {
            Some(held) => self.queue(frame, completion.is_final(), held).await,
            None => {
                let too_large = Completion::Error(OpError::new(
                    ErrorCode::TooLarge,
                    format!(
                        "a completion of {} bytes exceeds the module's quota of {} buffered bytes",
                        frame.len(),
                        self.budget.limit()
                    ),
                ));
                let frame = encode_frame(&too_large, b"");
                self.queue(frame, true, HeldBytes::default()).await
            }
        }
    }

    /// Queues one completion whose body's bytes the caller already holds (a whole response
    /// body collected against the budget).
    ///
    /// # Errors
    /// [`ModuleGone`] when the module has ended.
    pub async fn send_held(
        &self,
        completion: &Completion,
        body: &[u8],
        held: HeldBytes,
    ) -> Result<(), ModuleGone> {
        let frame = encode_frame(completion, body);
        Box::pin(self.queue(frame, completion.is_final(), held)).await
    }

    async fn queue(
        &self,
        frame: Vec<u8>,
        is_final: bool,
        held: HeldBytes,
    ) -> Result<(), ModuleGone> {
        let delivery = Box::new(QueuedCompletion {
            op: self.op,
            frame,
            is_final,
            held,
        });
        self.tx.send(delivery).await.map_err(|_| ModuleGone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sink_marks_final_completions() {
        let (tx, mut rx) = mpsc::channel(4);
        let sink = CompletionSink::new(7, tx, ByteBudget::new(1024));
        sink.send(&Completion::WatchEvent {}, b"{}")
            .await
            .expect("open");
        sink.send(&Completion::End {}, b"").await.expect("open");
        let first = rx.recv().await.expect("queued");
        let second = rx.recv().await.expect("queued");
        assert_eq!((first.op, first.is_final), (7, false));
        assert_eq!((second.op, second.is_final), (7, true));
        assert_eq!(
            first.held.len(),
            first.frame.len(),
            "a frame holds its bytes"
        );
        drop(rx);
        assert_eq!(sink.send(&Completion::End {}, b"").await, Err(ModuleGone));
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[tokio::test]
    async fn a_frame_larger_than_the_budget_becomes_too_large() {
        let (tx, mut rx) = mpsc::channel(4);
        let budget = ByteBudget::new(64);
        let sink = CompletionSink::new(1, tx, budget.clone());
        sink.send(&Completion::Line {}, &[b'x'; 100])
            .await
            .expect("open");
        let queued = rx.recv().await.expect("queued");
        assert!(queued.is_final);
        let frame = kube_wasm_abi::decode_frame::<Completion>(&queued.frame).expect("a frame");
        assert!(
            matches!(frame.header, Completion::Error(ref e) if e.code == ErrorCode::TooLarge),
            "{:?}",
            frame.header
        );
    }

    #[tokio::test]
    async fn queued_frames_hold_bytes_until_taken() {
        let (tx, mut rx) = mpsc::channel(16);
        let budget = ByteBudget::new(200);
        let sink = CompletionSink::new(1, tx, budget.clone());
        sink.send(&Completion::Line {}, &[b'x'; 150])
            .await
            .expect("open");
        let second = tokio::spawn({
            let sink = sink.clone();
            async move { sink.send(&Completion::Line {}, &[b'y'; 150]).await }
        });
        tokio::task::yield_now().await;
        assert!(
            !second.is_finished(),
            "waits for the guest to take the first"
        );
        drop(rx.recv().await.expect("the first"));
        second.await.expect("joins").expect("open");
        assert!(budget.in_use() > 150, "the second now holds its bytes");
    }
}
