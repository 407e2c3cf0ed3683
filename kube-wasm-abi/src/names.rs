//! Names of the wasm imports and exports that make up the ABI (SPEC.md, "Imports" and
//! "Exports").
//!
//! Each name is spelled once, in [`abi_name!`](crate::abi_name); the constants below are
//! defined with it. Code uses the constants; attributes that accept only a literal
//! (`#[link_name = …]`, `#[unsafe(export_name = …)]`) use the macro.

/// Expands to the string literal of one ABI name, given the name of its constant in
/// [`names`](crate::names): `abi_name!(IMPORT_WATCH)` is `"watch"`.
///
/// For attributes that take only a literal, where a `const` cannot go:
///
/// ```
/// # #[cfg(target_arch = "wasm32")]
/// #[link(wasm_import_module = "kube_wasm_v1")]
/// unsafe extern "C" {
///     #[link_name = kube_wasm_abi::abi_name!(IMPORT_DELAY)]
///     fn delay(millis: i64) -> i64;
/// }
/// assert_eq!(kube_wasm_abi::abi_name!(IMPORT_DELAY), kube_wasm_abi::names::IMPORT_DELAY);
/// ```
///
/// (`#[link(wasm_import_module = …)]` takes no macro either; spell [`IMPORT_MODULE`] there and
/// check it against the constant at compile time.) An unknown constant name does not compile.
#[macro_export]
macro_rules! abi_name {
    (IMPORT_MODULE) => {
        "kube_wasm_v1"
    };
    (IMPORT_HTTP_REQUEST) => {
        "http_request"
    };
    (IMPORT_WATCH) => {
        "watch"
    };
    (IMPORT_DELAY) => {
        "delay"
    };
    (IMPORT_STOP_SIGNAL) => {
        "stop_signal"
    };
    (IMPORT_CANCEL) => {
        "cancel"
    };
    (IMPORT_STREAM_OPEN) => {
        "stream_open"
    };
    (IMPORT_STREAM_SEND) => {
        "stream_send"
    };
    (IMPORT_STREAM_CREDIT) => {
        "stream_credit"
    };
    (EXPORT_ABI_VERSION) => {
        "kube_wasm_abi_version"
    };
    (EXPORT_ALLOC) => {
        "kube_wasm_alloc"
    };
    (EXPORT_COMPLETE) => {
        "kube_wasm_complete"
    };
    (EXPORT_START) => {
        "_start"
    };
    (EXPORT_INITIALIZE) => {
        "_initialize"
    };
    (EXPORT_REACTOR_START) => {
        "kube_wasm_start"
    };
    (EXPORT_WAKE) => {
        "kube_wasm_wake"
    };
}

/// The wasm import module every host function lives in. The suffix is [`crate::ABI_MAJOR`].
pub const IMPORT_MODULE: &str = abi_name!(IMPORT_MODULE);

/// `http_request(ptr: i32, len: i32) -> i64`: submit one HTTP request; the argument is a
/// [`crate::HttpRequest`] frame in guest memory. Returns the op id.
pub const IMPORT_HTTP_REQUEST: &str = abi_name!(IMPORT_HTTP_REQUEST);

/// `watch(ptr: i32, len: i32) -> i64`: start a watch; the argument is a
/// [`crate::WatchRequest`] frame in guest memory. Returns the op id.
pub const IMPORT_WATCH: &str = abi_name!(IMPORT_WATCH);

/// `delay(millis: i64) -> i64`: a timer that completes after `millis` milliseconds
/// (negative counts as 0). Returns the op id.
pub const IMPORT_DELAY: &str = abi_name!(IMPORT_DELAY);

/// `stop_signal() -> i64`: an op that completes when the host asks the module to stop.
/// Returns the op id.
pub const IMPORT_STOP_SIGNAL: &str = abi_name!(IMPORT_STOP_SIGNAL);

/// `cancel(op: i64) -> i32`: cancel a live op. Returns 1 if the op was live, 0 if the host
/// did not know it (already finished or never issued). No completion follows a cancel.
pub const IMPORT_CANCEL: &str = abi_name!(IMPORT_CANCEL);

/// `stream_open(ptr: i32, len: i32) -> i64` (ABI 1.1): open a websocket to the API server;
/// the argument is a [`crate::StreamOpen`] frame. Returns the stream's op id.
pub const IMPORT_STREAM_OPEN: &str = abi_name!(IMPORT_STREAM_OPEN);

/// `stream_send(stream: i64, ptr: i32, len: i32) -> i64` (ABI 1.1): queue one message on a
/// stream; the argument is a [`crate::StreamSend`] frame. Returns the id of the send op,
/// which completes with `sent` once the host handed the message to the websocket.
pub const IMPORT_STREAM_SEND: &str = abi_name!(IMPORT_STREAM_SEND);

/// `stream_credit(stream: i64, n: i32) -> i32` (ABI 1.1): allow the host to deliver `n` more
/// `message` completions on a stream. Returns 1 if the stream is live, else 0.
pub const IMPORT_STREAM_CREDIT: &str = abi_name!(IMPORT_STREAM_CREDIT);

/// Every function of [`IMPORT_MODULE`] this version of the ABI defines, in SPEC.md's order.
/// A host provides all of them; a module may import any subset.
pub const IMPORTS: &[&str] = &[
    IMPORT_HTTP_REQUEST,
    IMPORT_WATCH,
    IMPORT_DELAY,
    IMPORT_STOP_SIGNAL,
    IMPORT_CANCEL,
    IMPORT_STREAM_OPEN,
    IMPORT_STREAM_SEND,
    IMPORT_STREAM_CREDIT,
];

/// `kube_wasm_abi_version() -> i32`: the guest's packed ABI version
/// (`major << 16 | minor`, see [`crate::pack_version`]).
pub const EXPORT_ABI_VERSION: &str = abi_name!(EXPORT_ABI_VERSION);

/// `kube_wasm_alloc(len: i32) -> i32`: the guest allocates `len` bytes for the host to
/// write a completion into and returns the address, or 0 if it cannot.
pub const EXPORT_ALLOC: &str = abi_name!(EXPORT_ALLOC);

/// `kube_wasm_complete(op: i64, ptr: i32, len: i32)`: deliver one completion frame for `op`
/// in a buffer from `kube_wasm_alloc`; the guest takes ownership of the buffer, runs its
/// executor until stalled and returns.
pub const EXPORT_COMPLETE: &str = abi_name!(EXPORT_COMPLETE);

/// The WASI command entry point of a command module: runs `main`, which starts the root task
/// and runs the executor until stalled.
pub const EXPORT_START: &str = abi_name!(EXPORT_START);

/// `_initialize() -> ()` (ABI 1.4): the WASI reactor initialisation of a reactor module
/// (optional), called once, before any other export, and never again (not at a resume).
pub const EXPORT_INITIALIZE: &str = abi_name!(EXPORT_INITIALIZE);

/// `kube_wasm_start() -> ()` (ABI 1.4): the entry of a reactor module, in place of
/// [`EXPORT_START`]: starts `main` and returns once the guest has stalled (see SPEC.md,
/// "Reactor modules and idle polls").
pub const EXPORT_REACTOR_START: &str = abi_name!(EXPORT_REACTOR_START);

/// `kube_wasm_wake() -> ()` (ABI 1.4): a reactor module's next timer (the earliest clock of
/// its last idle poll) fell due; the guest runs until it has stalled again.
pub const EXPORT_WAKE: &str = abi_name!(EXPORT_WAKE);

/// Every export the ABI names, in SPEC.md's order. Every module has the first three; a
/// command module has [`EXPORT_START`], a reactor module [`EXPORT_REACTOR_START`] and
/// [`EXPORT_WAKE`] (and [`EXPORT_INITIALIZE`] if it needs it).
pub const EXPORTS: &[&str] = &[
    EXPORT_ABI_VERSION,
    EXPORT_ALLOC,
    EXPORT_COMPLETE,
    EXPORT_START,
    EXPORT_INITIALIZE,
    EXPORT_REACTOR_START,
    EXPORT_WAKE,
];
