//! The guest side of the kube-wasm ABI (see `kube-wasm-abi/SPEC.md`).
//!
//! **Replaces** what the operating system and tokio's runtime are to a native controller — sockets,
//! threads, the timer driver, the scheduler — with ABI imports, a reactor of host completions and a
//! single-threaded executor. A ported controller never names it; the port guide is the kube-wasm
//! book's *Porting a Rust controller* (`docs/src/porting/rust.md` in the repository;
//! `scripts/book.sh build` renders the book).
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
