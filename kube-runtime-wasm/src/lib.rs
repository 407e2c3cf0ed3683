//! kube-runtime 5.0's controller, scheduler, watcher, reflector, stream utilities, `wait`,
//! `finalizer` and `events` for Kubernetes controllers compiled to `wasm32-wasip1` and run
//! by a kube-wasm host.
//!
//! **Replaces** `kube-runtime` 5.0, reached through the `kube-wasm` facade as `kube::runtime`. The
//! port guide is the kube-wasm book's *Porting a Rust controller* (`docs/src/porting/rust.md` in
//! the repository; `scripts/book.sh build` renders the book).
//!
//! Controllers reach this crate as `kube::runtime` through the `kube-wasm` facade (feature
//! `runtime`), so the paths are kube-runtime 5.0's:
//!
//! - [`watcher()`](watcher::watcher) / [`metadata_watcher()`](watcher::metadata_watcher) /
//!   [`watcher::watch_object`]: a self-healing stream of [`watcher::Event`]s — paginated LIST,
//!   then WATCH from the list's `resourceVersion`, resuming from the last seen version
//!   (bookmarks included) and relisting after `410 Gone`;
//! - [`reflector()`](reflector::reflector) and [`reflector::store()`]: a cache of the watched
//!   objects ([`reflector::Store`]) fed by a watcher stream;
//! - [`WatchStreamExt`]: `default_backoff`, `backoff`, `applied_objects`, `touched_objects`,
//!   `modify`, `predicate_filter` and `reflect` on watcher streams, with [`predicates`];
//! - [`wait`]: [`await_condition`](wait::await_condition) with [`conditions`], and
//!   [`delete_and_finalize`](wait::delete::delete_and_finalize);
//! - [`finalizer()`]: reconciling behind a finalizer, returning a [`controller::Action`];
//! - [`events`]: a [`Recorder`](events::Recorder) publishing `events.k8s.io/v1` events;
//! - [`scheduler()`](scheduler::scheduler): delaying and deduplicating requests on host timers;
//! - [`Controller`] and [`applier()`]: the reconcile loop, with [`controller::Action`]s,
//!   error policies, owned/related triggers, debounce, a concurrency limit and graceful
//!   shutdown (on the host's stop request with `shutdown_on_signal`).
//!
//! Timers are `delay` operations of the kube-wasm ABI (through `kube-wasm-tokio`), and
//! requests go through `kube-wasm-client`'s [`Api`](kube_wasm_client::Api); the streams
//! and futures keep kube-runtime's `Send` bounds, so they can be moved into `tokio::spawn`.
//!
//! # Features
//!
//! kube-runtime 5.0's unstable features, gating the same items (`kube-wasm`'s
//! `unstable-runtime` turns all three on, as kube's does):
//!
//! - `unstable-runtime-subscribe`: shared stores — [`reflector::store_shared`],
//!   `store::Writer::new_shared` and `Writer::subscribe` giving [`reflector::ReflectHandle`]
//!   streams, [`WatchStreamExt::reflect_shared`], and `Controller::for_shared_stream`,
//!   `owns_shared_stream` and `watches_shared_stream` (with their `_with` forms);
//! - `unstable-runtime-stream-control`: `Controller::for_stream`, `owns_stream` and
//!   `watches_stream` (with their `_with` forms);
//! - `unstable-runtime-reconcile-on`: `Controller::reconcile_on`;
//! - `unstable-runtime`: all three.
//!
//! The rest of this page is the crate's README.
#![doc = include_str!("../README.md")]

pub mod controller;
pub mod events;
pub mod finalizer;
pub mod reflector;
pub mod scheduler;
pub mod utils;
pub mod wait;
pub mod watcher;

pub use controller::{Config, Controller, applier};
pub use finalizer::finalizer;
pub use reflector::reflector;
pub use scheduler::scheduler;
pub use utils::WatchStreamExt;
pub use utils::{Predicate, PredicateConfig, predicates};
pub use wait::conditions;
#[allow(deprecated)]
pub use watcher::{metadata_watcher, watcher};
