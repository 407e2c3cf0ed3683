//! `host-shim`: runs kube-wasm controller modules (`wasm32-wasip1`) and serves them the
//! kube-wasm ABI v1 (`kube-wasm-abi/SPEC.md`) with kube's own authenticated client.
//!
//! The embedding reads as a sentence: an [`engine`] compiles modules; a [`Host`] links the
//! ABI imports ([`abi`]) and WASI; each [`module`] runs as one tokio task that owns its wasmtime
//! `Store` (whose data is a [`state::HostState`]); the [`supervisor`] runs them all and handles
//! stopping. Every request to the API server goes through [`upstream::Upstream`], a thin layer
//! over `kube::Client`, so authentication and TLS always come from kube.
//!
//! Many modules share one host: a [`manifest`] lists them with their [`ModuleOptions`]
//! (environment, arguments, namespace, memory cap, [`RestartPolicy`]). Each distinct wasm is
//! compiled once (or loaded from the host's own [`cache`] of precompiled modules) and
//! pre-instantiated once; instances come from wasmtime's pooling allocator with copy-on-write
//! memory initialisation ([`engine`]). A module is isolated by its memory cap
//! ([`memory_cap`]), the per-entry epoch deadline, the HTTP response timeout
//! ([`state::OpLimits`]); whatever ends it releases all its ops, and the supervisor restarts
//! it with [`backoff`] if its policy says so.
//!
//! Each module acts as its own [`identity`] (a ServiceAccount the host impersonates) and may
//! be held to an allowlist of [`permissions`], checked on the [`request_info`] of every
//! request before it leaves the host.
//!
//! Modules that watch the same collection with the same selectors share one upstream
//! LIST+WATCH: the [`watch_cache`] serves their watches (and `resourceVersion=0` lists) with
//! kube-apiserver's resourceVersion semantics.
//!
//! An idle module may be [`suspend`]ed to disk: its memory written to a snapshot file and its
//! instance dropped, until the next completion restores it.

pub mod abi;
pub mod backoff;
pub mod cache;
pub mod cli;
pub mod config;
pub mod engine;
pub mod host;
pub mod identity;
pub mod manifest;
pub mod memory_cap;
pub mod metrics;
pub mod metrics_server;
pub mod module;
pub mod ops;
pub mod options;
pub mod output;
pub mod permissions;
pub mod request_info;
pub mod request_uri;
pub mod restart;
pub mod run_config;
pub mod state;
pub mod stop;
pub mod supervisor;
pub mod suspend;
pub mod units;
pub mod upstream;
pub mod wasi;
pub mod watch_cache;

pub use host::{Host, Settings};
pub use module::{LoadedModule, ModuleError, ModuleOutcome};
pub use options::ModuleOptions;
pub use output::OutputTarget;
pub use restart::RestartPolicy;
pub use stop::{Phase, StopHandle};
pub use supervisor::{ModuleReport, Supervisor};
pub use upstream::Upstream;
