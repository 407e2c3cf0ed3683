//! The `kube` 5.0 facade for Kubernetes controllers compiled to `wasm32-wasip1` and run by
//! a kube-wasm host.
//!
//! **Replaces** `kube` 5.0 in a controller's wasm32 build, under the name `kube`. The port guide is
//! the kube-wasm book's *Porting a Rust controller* (`docs/src/porting/rust.md` in the repository;
//! `scripts/book.sh build` renders the book).
//!
//! A controller switches by changing its Cargo.toml only:
//!
//! ```toml
//! kube = { package = "kube-wasm", version = "0.1", features = ["runtime", "derive"] }
//! tokio = { package = "kube-wasm-tokio", version = "0.1", features = ["full"] }
//! ```
//!
//! The paths are kube 5.0's: [`Api`], [`Client`], [`Config`], [`Error`], [`Result`],
//! [`Resource`], [`ResourceExt`], [`CustomResourceExt`], [`core`] (kube-core itself),
//! [`api`], [`client`], [`config`], [`error`], [`prelude`], and with `derive`
//! `#[derive(CustomResource, Resource, KubeSchema)]` (kube-derive itself, whose generated
//! `::kube::core::…` paths resolve here). The client parts come from `kube-wasm-client`,
//! which sends every request through the host; kube-core and kube-derive are used as they
//! are.
//!
//! # Features
//!
//! Every feature name of kube 5.0 is accepted, with kube's default set (`client`,
//! `rustls-tls`, `ring`):
//!
//! - `client`, `config`: as in kube (the client and config modules).
//! - `derive`, `admission`, `jsonpatch`, `cel`: forwarded to kube-core / kube-derive as in
//!   kube.
//! - `kubelet-debug`: as in kube, `Client::kubelet_node_{logs,attach,exec,portforward}` and
//!   kube-core's `kubelet_debug`; a guest reaches the kubelet through the API server's node
//!   proxy, with a client whose `Config::cluster_url` is `{host URL}/api/v1/nodes/{node}/proxy`.
//! - `ws`: as in kube, `Api::exec`, `Api::attach`, `Api::portforward`, `Client::connect`,
//!   `client::UpgradeConnectionError` and `Error::UpgradeConnection`, over a websocket the
//!   host opens with kube's own client and relays message by message.
//! - `runtime`: [`runtime`] is `kube-runtime-wasm` (watcher, reflector, `WatchStreamExt`,
//!   predicates, `Controller`, `applier`, scheduler, finalizer, events, wait), as kube's is
//!   kube-runtime. `unstable-runtime` implies it and turns on kube-runtime-wasm's
//!   `unstable-runtime` (as kube's does kube-runtime's): shared stores
//!   (`reflector::store_shared`, `Writer::subscribe`, `ReflectHandle`, `reflect_shared`),
//!   `Controller::for_stream`/`owns_stream`/`watches_stream`, their `*_shared_stream`
//!   forms, and `reconcile_on`.
//! - `unstable-client`: as in kube, `Client::get`, `Client::list`, `Client::fetch`,
//!   `client::scope::{Cluster, Namespace, NamespacedRef}`, `Error::RefResolve` and
//!   `prelude::NamespacedRef`.
//! - `rustls-tls`, `openssl-tls`, `ring`, `aws-lc-rs`, `webpki-roots`, `gzip`,
//!   `http-proxy`, `socks5`, `proxy`, `oauth`, `oidc`, `hyper-util-tracing`: no-ops — the
//!   host owns the transport, TLS and credentials.
//!
//! Not provided: `client::ConfigExt` and `ClientBuilder` (tower layers): the host owns the
//! HTTP stack. `Client::send` and `client::Body` are there, with whole bodies.
//!
//! # Porting
//!
//! Only `Cargo.toml` changes (the port guide, tried on kube-rs's own examples, has the whole
//! of it):
//!
//! 1. kube and tokio move into a pair of target tables of the **same kind** as the table they
//!    were in — `[target.'cfg(not(target_arch = "wasm32"))'.dependencies]` as they were, and
//!    `[target.'cfg(target_arch = "wasm32")'.dependencies]` renamed to `kube-wasm` and
//!    `kube-wasm-tokio`; for `[dev-dependencies]` (examples, tests), the `dev-dependencies`
//!    target tables. The feature lists stay as they are.
//! 2. The workspace needs `resolver = "2"` (or `"3"`): resolver 1 merges the native tokio's
//!    features into the wasm32 build, and tokio refuses to compile for wasm32.
//! 3. Dependencies that open sockets, spawn threads or drive a terminal (hyper-util's legacy
//!    client, axum, tokio-stream's `net`, crossterm) move into the native table; programs
//!    that use them stay native.
//! 4. What a guest cannot do has a replacement: `tokio::spawn` for threads, the host's own
//!    metrics endpoint for a served one, `Client::try_default()` for a custom client (the host
//!    holds the connection and the credentials).
//!
//! `compat-tests/ported/` in the repository holds kube-rs examples ported this way, source
//! unchanged; the end-to-end tests run each natively and in the host and compare them.
//!
//! The rest of this page is the crate's README.
#![doc = include_str!("../README.md")]

#[cfg(feature = "client")]
#[doc(inline)]
pub use kube_wasm_client::api;
#[cfg(feature = "client")]
#[doc(inline)]
pub use kube_wasm_client::client;

#[cfg(feature = "client")]
#[doc(inline)]
pub use api::Api;
#[cfg(feature = "client")]
#[doc(inline)]
pub use client::Client;

#[cfg(feature = "client")]
#[doc(inline)]
pub use discovery::Discovery;
#[cfg(feature = "client")]
#[doc(inline)]
pub use kube_wasm_client::discovery;

#[cfg(feature = "config")]
#[doc(inline)]
pub use config::Config;
#[cfg(feature = "config")]
#[doc(inline)]
pub use kube_wasm_client::config;

#[cfg(any(feature = "config", feature = "client"))]
#[doc(inline)]
pub use error::Error;
#[cfg(any(feature = "config", feature = "client"))]
#[doc(inline)]
pub use kube_wasm_client::error;

/// Convenient alias for `Result<T, Error>`, as kube's.
#[cfg(any(feature = "config", feature = "client"))]
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `#[derive(CustomResource)]`: a custom resource type and its CRD from a spec struct
/// (kube-derive, as in kube).
#[cfg(feature = "derive")]
pub use kube_derive::CustomResource;

/// `#[derive(Resource)]`: implements `Resource` for a type by pointing at an existing one
/// (kube-derive, as in kube).
#[cfg(feature = "derive")]
pub use kube_derive::Resource;

/// `#[derive(KubeSchema)]`: a JSON schema with CEL validation rules (kube-derive, as in
/// kube).
#[cfg(feature = "derive")]
pub use kube_derive::KubeSchema;

/// The controller runtime, as kube's `kube::runtime` (kube-runtime): here
/// `kube-runtime-wasm`, on the guest executor and the host's timers.
#[cfg(feature = "runtime")]
#[doc(inline)]
pub use kube_runtime_wasm as runtime;

pub use crate::core::{CustomResourceExt, Resource, ResourceExt};
#[doc(inline)]
pub use kube_core as core;

pub mod prelude {
    //! A prelude for kube, as kube's: the extension traits most code imports, as `_`.
    //!
    //! ```
    //! use kube_wasm::prelude::*;
    //! ```
    //!
    //! With `runtime`, the runtime's `WatchStreamExt` too, as in kube. kube's `ConfigExt`
    //! (tower layers) has no counterpart in a guest.

    #[cfg(feature = "unstable-client")]
    pub use crate::client::scope::NamespacedRef;

    pub use crate::{
        Resource as _, ResourceExt as _,
        core::{PartialObjectMetaExt as _, SelectorExt as _, crd::CustomResourceExt as _},
    };

    #[cfg(feature = "runtime")]
    pub use crate::runtime::utils::WatchStreamExt as _;
}
