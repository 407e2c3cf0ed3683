//! The runtime core, embeddable as a library: an [`engine`] compiles modules (in a child
//! process, [`compiler`], when the host runs as `host-shim run`; their identical functions
//! merged first, [`merge_functions`]; the func refs their idle instances write placed
//! together, [`func_refs`]), a [`Host`]
//! links the ABI imports ([`abi`]) and WASI, each [`module`] runs as one tokio task
//! owning its wasmtime `Store` (whose data is a `HostState` with its op table), idle
//! modules are [`suspend`]ed to disk and release their fiber stacks ([`fiber_stacks`]) and
//! the dead pages of their shadow stacks ([`shadow_stack`]), as are the host threads' unused
//! stacks ([`idle_stack`]), and the [`supervisor`] runs them all, restarting each as its
//! [`restart`] policy says, with [`backoff`](crate::backoff). Each module's [`quota`]s bound
//! what it can make the host hold, and [`instance_slots`] how many instances are resident
//! at once.
//!
//! [`Host`]: host::Host

pub mod abi;
pub mod cache;
pub mod compiler;
pub mod engine;
pub mod fiber_stacks;
pub mod file_digests;
pub mod func_refs;
pub mod host;
pub(crate) mod idle;
pub mod idle_stack;
pub(crate) mod idle_state;
pub mod instance_slots;
pub(crate) mod memory_cap;
pub mod merge_functions;
pub mod module;
pub(crate) mod ops;
pub mod options;
pub mod output;
pub(crate) mod page_size;
pub mod quota;
pub mod restart;
pub mod shadow_stack;
pub(crate) mod state;
pub mod stop;
pub mod supervisor;

// How a request is judged before it leaves the host, for the fuzz targets (`fuzz/`).
pub use state::{Access, Judged};
pub mod suspend;
pub(crate) mod wasi;
#[cfg(test)]
mod wasm_fixture;
