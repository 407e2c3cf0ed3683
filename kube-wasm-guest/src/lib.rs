//! The guest side of the kube-wasm ABI (see `kube-wasm-abi/SPEC.md`).
//!
//! This crate is the machinery beneath `kube-wasm-tokio` and `kube-wasm-client`; controller
//! authors never use it directly.
//!
//! - [`imports`]: the ABI imports (or, natively, the [`fake`] host that tests drive);
//! - [`clock`]: the monotonic clock (virtual under the fake host);
//! - [`delivery`]: one completion as the guest received it;
//! - [`op`]: an operation in flight, as a stream of completions that cancels on drop;
//! - [`reactor`]: completions that arrived but were not yet polled, per op, in order;
//! - [`executor`]: the single-threaded task executor, run until stalled after every entry;
//! - [`entry`]: what `main` and the `kube_wasm_complete` export do.
//!
//! Between entries nothing runs and nothing is on the stack: all state lives in the
//! executor's task table and the reactor.
//!
//! The rest of this page is the crate's README.
#![doc = include_str!("../README.md")]

pub mod clock;
pub mod delivery;
pub mod entry;
pub mod executor;
#[cfg(not(target_arch = "wasm32"))]
pub mod fake;
pub mod imports;
pub mod op;
pub mod reactor;

#[cfg(target_arch = "wasm32")]
mod exports;

pub use delivery::Delivery;
pub use executor::{AbortHandle, JoinError, JoinHandle, spawn_local};
pub use op::Op;
