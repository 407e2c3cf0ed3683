//! `host-shim`: runs kube-wasm controller modules (`wasm32-wasip1`) and serves them the
//! kube-wasm ABI v1 (`kube-wasm-abi/SPEC.md`) with kube's own authenticated client.
//!
//! The embedding reads as a sentence: an [`engine`] compiles modules; a [`Host`] links the
//! ABI imports ([`abi`]) and WASI; each [`module`] runs as one tokio task that owns its wasmtime
//! `Store` (whose data is a [`state::HostState`]); the [`supervisor`] runs them all and handles
//! stopping. Every request to the API server goes through [`upstream::Upstream`], a thin layer
//! over `kube::Client`, so authentication and TLS always come from kube.

pub mod abi;
pub mod backoff;
pub mod cache;
pub mod cli;
pub mod config;
pub mod engine;
pub mod host;
pub mod manifest;
pub mod memory_cap;
pub mod module;
pub mod ops;
pub mod options;
pub mod output;
pub mod restart;
pub mod state;
pub mod stop;
pub mod supervisor;
pub mod units;
pub mod upstream;
pub mod wasi;

pub use host::{Host, Settings};
pub use module::{LoadedModule, ModuleError, ModuleOutcome};
pub use options::ModuleOptions;
pub use output::OutputTarget;
pub use restart::RestartPolicy;
pub use stop::{Phase, StopHandle};
pub use supervisor::{ModuleReport, Supervisor};
pub use upstream::Upstream;
