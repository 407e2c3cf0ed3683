//! Names of the wasm imports and exports that make up the ABI (SPEC.md, "Imports" and
//! "Exports").

/// The wasm import module every host function lives in. The suffix is [`crate::ABI_MAJOR`].
pub const IMPORT_MODULE: &str = "kube_wasm_v1";

/// `http_request(ptr: i32, len: i32) -> i64`: submit one HTTP request; the argument is a
/// [`crate::HttpRequest`] frame in guest memory. Returns the op id.
pub const IMPORT_HTTP_REQUEST: &str = "http_request";

/// `watch(ptr: i32, len: i32) -> i64`: start a watch; the argument is a
/// [`crate::WatchRequest`] frame in guest memory. Returns the op id.
pub const IMPORT_WATCH: &str = "watch";

/// `delay(millis: i64) -> i64`: a timer that completes after `millis` milliseconds
/// (negative counts as 0). Returns the op id.
pub const IMPORT_DELAY: &str = "delay";

/// `stop_signal() -> i64`: an op that completes when the host asks the module to stop.
/// Returns the op id.
pub const IMPORT_STOP_SIGNAL: &str = "stop_signal";

/// `cancel(op: i64) -> i32`: cancel a live op. Returns 1 if the op was live, 0 if the host
/// did not know it (already finished or never issued). No completion follows a cancel.
pub const IMPORT_CANCEL: &str = "cancel";

/// `stream_open(ptr: i32, len: i32) -> i64` (ABI 1.1): open a websocket to the API server;
/// the argument is a [`crate::StreamOpen`] frame. Returns the stream's op id.
pub const IMPORT_STREAM_OPEN: &str = "stream_open";

/// `stream_send(stream: i64, ptr: i32, len: i32) -> i64` (ABI 1.1): queue one message on a
/// stream; the argument is a [`crate::StreamSend`] frame. Returns the id of the send op,
/// which completes with `sent` once the host handed the message to the websocket.
pub const IMPORT_STREAM_SEND: &str = "stream_send";

/// `stream_credit(stream: i64, n: i32) -> i32` (ABI 1.1): allow the host to deliver `n` more
/// `message` completions on a stream. Returns 1 if the stream is live, else 0.
pub const IMPORT_STREAM_CREDIT: &str = "stream_credit";

/// `kube_wasm_abi_version() -> i32`: the guest's packed ABI version
/// (`major << 16 | minor`, see [`crate::pack_version`]).
pub const EXPORT_ABI_VERSION: &str = "kube_wasm_abi_version";

/// `kube_wasm_alloc(len: i32) -> i32`: the guest allocates `len` bytes for the host to
/// write a completion into and returns the address, or 0 if it cannot.
pub const EXPORT_ALLOC: &str = "kube_wasm_alloc";

/// `kube_wasm_complete(op: i64, ptr: i32, len: i32)`: deliver one completion frame for `op`
/// in a buffer from `kube_wasm_alloc`; the guest takes ownership of the buffer, runs its
/// executor until stalled and returns.
pub const EXPORT_COMPLETE: &str = "kube_wasm_complete";

/// The WASI command entry point: runs `main`, which starts the root task and runs the
/// executor until stalled.
pub const EXPORT_START: &str = "_start";
