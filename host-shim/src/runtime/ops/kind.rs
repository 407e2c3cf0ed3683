//! What kind of operation an op is, for logs and metrics labels.

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
    /// A reactor module's next timer (ABI 1.4): the host's own op, never seen by the guest,
    /// whose completion the module loop delivers by calling `kube_wasm_wake`.
    Wake,
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
            OpKind::Wake => "wake",
        }
    }

    /// Whether an op of this kind answers a request of the module, due soon: an HTTP request
    /// or a stream send. The other kinds stand waiting for what happens outside the module —
    /// a timer, a watch event, the stop signal, a stream's next message — and may wait for
    /// ever; a module whose live ops all stand is idle between its deliveries.
    pub fn answers_a_request(self) -> bool {
        matches!(self, OpKind::Http | OpKind::StreamSend)
    }

    /// Whether a completion of an op of this kind is something that happened outside the
    /// module and that it could not foresee: a watch event, the stop signal, a stream's
    /// message. Neither a timer (due when the module asked) nor an answer to its own request.
    pub fn is_unforeseen(self) -> bool {
        matches!(self, OpKind::Watch | OpKind::StopSignal | OpKind::Stream)
    }

    pub(crate) fn noun(self, count: usize) -> &'static str {
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
            (OpKind::Wake, true) => "timer",
            (OpKind::Wake, false) => "timers",
        }
    }
}
