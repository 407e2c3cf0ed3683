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
        }
    }
}
