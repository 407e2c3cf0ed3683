//! How an op's work task hands its completions to the module loop, in order.

use kube_wasm_abi::{Completion, OpId, encode_frame};
use tokio::sync::mpsc;

/// One completion on its way to the guest: the op it belongs to and its encoded frame.
#[derive(Debug)]
pub struct QueuedCompletion {
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
    tx: mpsc::Sender<QueuedCompletion>,
}

impl CompletionSink {
    /// A sink for the completions of `op`.
    pub fn new(op: OpId, tx: mpsc::Sender<QueuedCompletion>) -> Self {
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
        let delivery = QueuedCompletion {
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
