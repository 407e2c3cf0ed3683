//! `host-shim`: runs kube-wasm controller modules (`wasm32-wasip1`) and serves them the
//! kube-wasm ABI v1 (`kube-wasm-abi/SPEC.md`) with kube's own authenticated client.
//!
//! Three rooms:
//!
//! - [`runtime`] — the runtime core, embeddable as a library: an
//!   [`engine`](runtime::engine) compiles modules (or loads them from the host's own
//!   [`cache`](runtime::cache) of precompiled modules); a [`Host`] links the ABI imports
//!   ([`abi`](runtime::abi), one file per op family) and WASI; each
//!   [`module`](runtime::module) runs as one tokio task owning its wasmtime `Store`, whose data
//!   is a `HostState` with its op table; an idle module
//!   is [`suspend`](runtime::suspend)ed to disk until its next completion; the [`Supervisor`]
//!   runs them all and restarts each as its [`RestartPolicy`] says. A module is isolated by its
//!   memory cap, a per-entry epoch deadline and its op limits; whatever ends it releases all
//!   its ops.
//! - [`upstream`] — the API server side: every request leaves through
//!   [`Upstream`], a thin layer over `kube::Client` (authentication
//!   and TLS always come from kube), as the module's [`identity`](upstream::identity), held to
//!   its [`permissions`](upstream::permissions) judged on the
//!   [`request_info`](upstream::request_info) kube-apiserver would compute; modules watching
//!   the same collection share one upstream LIST+WATCH through the
//!   [`watch_cache`](upstream::watch_cache).
//! - [`fleet`] — running a fleet: the command line ([`cli`](fleet::cli)) and the
//!   [`manifest`](fleet::manifest) resolved into one [`RunConfig`](fleet::run_config::RunConfig),
//!   and the HTTP endpoint of the host's metrics.
//!
//! Beneath all three: the host's [`metrics`] (recorded by the runtime and the watch cache,
//! served by the fleet), the restart [`backoff`] (of modules and of shared watches) and the
//! [`heap`] trims after what frees in bursts (suspends, released watch history).
//!
//! An embedder needs [`Host`], [`Settings`], [`LoadedModule`], [`ModuleOptions`],
//! [`Supervisor`], [`StopHandle`] and [`Upstream`], re-exported here.

// Not published: its docs describe the internals too, so they link private items (which
// resolve with `cargo doc --document-private-items`).
#![allow(rustdoc::private_intra_doc_links)]

pub mod backoff;
pub mod fleet;
pub mod heap;
pub mod metrics;
pub mod runtime;
pub mod upstream;

pub use runtime::host::{Host, Settings};
pub use runtime::module::{LoadedModule, ModuleError, ModuleOutcome};
pub use runtime::options::ModuleOptions;
pub use runtime::output::OutputTarget;
pub use runtime::restart::RestartPolicy;
pub use runtime::stop::{Phase, StopHandle};
pub use runtime::supervisor::{ModuleReport, Supervisor};
pub use upstream::client::Upstream;
