//! The marker trait that turns a socket call in a guest into a clear compile error.

/// Bounds `TcpListener::bind` and `TcpStream::connect`. Nothing implements it, so a call is a
/// compile-time error whose message (through `#[diagnostic::on_unimplemented]`) says what to
/// do instead. The lifetime parameter keeps the `for<'a>` bound from being a trivially false
/// where-clause, which Rust rejects where the function is defined.
#[diagnostic::on_unimplemented(
    message = "a kube-wasm module has no network access: `tokio::net` cannot open a socket in a guest",
    label = "a guest cannot bind, accept or connect sockets",
    note = "the host makes every API server request: use `kube::Client` and `kube::Api` for the cluster",
    note = "for an HTTP endpoint (metrics, health probes), keep the listener out of the wasm32 build (`#[cfg(not(target_arch = \"wasm32\"))]`): the host process runs the module and owns its network"
)]
pub trait NoNetworkAccess<'a> {}
