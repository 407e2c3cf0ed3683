//! The guest-facing ends of a module's live streams (ABI 1.1, `stream_open`): what
//! `stream_send` and `stream_credit` reach, by the op id of the stream.

use std::collections::HashMap;
use std::sync::Arc;

use kube_wasm_abi::{OpError, OpId};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

use super::OpTable;

/// One message the guest queued, and where to report that it went out.
pub struct Outgoing {
    /// The message.
    pub message: Message,
    /// Told once the websocket took it, or why not.
    pub done: oneshot::Sender<Result<(), OpError>>,
}

/// The guest-facing ends of one live stream.
pub struct StreamHandle {
    /// Where `stream_send` queues messages for the stream's task.
    pub outgoing: mpsc::UnboundedSender<Outgoing>,
    /// The guest's credit: one permit per `message` completion the task may deliver.
    pub credit: Arc<Semaphore>,
}

/// The streams of one module, by the op id of their `stream_open`.
#[derive(Default)]
pub struct StreamTable {
    streams: HashMap<OpId, StreamHandle>,
}

impl StreamTable {
    /// Forgets the handles of streams whose op is no longer live.
    pub fn forget_finished(&mut self, ops: &OpTable) {
        self.streams.retain(|id, _| ops.is_live(*id));
    }

    /// Keeps the handles of the stream opened as op `id`.
    pub fn insert(&mut self, id: OpId, handle: StreamHandle) {
        self.streams.insert(id, handle);
    }

    /// The handles of the stream opened as op `id`, if it is known.
    pub fn get(&self, id: OpId) -> Option<&StreamHandle> {
        self.streams.get(&id)
    }
}
