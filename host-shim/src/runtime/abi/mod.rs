//! The host side of the kube-wasm ABI v1 (SPEC.md): the imports of module `kube_wasm_v1`, one
//! file per op family, plus guest memory access and the guest's exports.
//!
//! Every import is synchronous and quick: it copies its argument out of guest memory, decodes
//! it, registers an op in the module's op table, spawns a tokio task
//! doing the work and returns the op id (one way for all: `op.rs`; the completions that answer
//! a request: `respond.rs`). It never calls into the guest. A malformed argument
//! is a [`BadAbiCall`]: the import returns it as an error, which traps the guest, and the
//! module loop ends the module with that error.

pub(crate) mod cancel;
pub mod exports;
pub(crate) mod http;
pub mod memory;
mod op;
pub(crate) use op::spawn_op;
pub(crate) mod respond;
pub(crate) mod shared_watch;
pub(crate) mod signal;
pub(crate) mod stream;
pub(crate) mod timer;
pub(crate) mod watch;

// How `stream_open` and `stream_send` read their headers, for the fuzz targets (`fuzz/`).
pub use stream::{build_upgrade_request, to_message};

use wasmtime::Linker;

use crate::runtime::state::HostState;

/// A malformed call to an import (SPEC.md, "Imports"): out-of-bounds memory, an undecodable
/// frame or a header of the wrong shape. Ends the module that made it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad ABI call to `{import}`: {reason}")]
pub struct BadAbiCall {
    /// The import that was called.
    pub import: &'static str,
    /// What was wrong with the call.
    pub reason: String,
}

impl BadAbiCall {
    /// A bad call to `import` because of `reason`.
    pub fn new(import: &'static str, reason: impl Into<String>) -> Self {
        Self {
            import,
            reason: reason.into(),
        }
    }
}

/// Adds every `kube_wasm_v1` import to `linker`.
///
/// # Errors
/// If an import is already defined.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    http::add_to_linker(linker)?;
    watch::add_to_linker(linker)?;
    timer::add_to_linker(linker)?;
    signal::add_to_linker(linker)?;
    cancel::add_to_linker(linker)?;
    stream::add_to_linker(linker)?;
    Ok(())
}

/// The imports this host provides in module `kube_wasm_v1`: every one the ABI defines.
pub const PROVIDED_IMPORTS: &[&str] = kube_wasm_abi::names::IMPORTS;

/// Op ids cross the ABI as `i64` and are read as unsigned (SPEC.md, "Types").
pub(crate) fn op_to_wasm(id: kube_wasm_abi::OpId) -> i64 {
    id as i64
}

/// See [`op_to_wasm`].
pub(crate) fn op_from_wasm(raw: i64) -> kube_wasm_abi::OpId {
    raw as u64
}
