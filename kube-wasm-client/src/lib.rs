//! kube-client 5.0's `Api`, `Client`, `Config` and `Error` for Kubernetes controllers
//! compiled to `wasm32-wasip1` and run by a kube-wasm host.
//!
//! **Replaces** `kube-client` 5.0, reached through the `kube-wasm` facade as `kube::Client`,
//! `kube::Api`, … The port guide is the kube-wasm book's *Porting a Rust controller*
//! (`docs/src/porting/rust.md` in the repository; `scripts/book.sh build` renders the book).
//!
//! The surface is kube 5.0's — same paths, names, generics, bounds, return types and error
//! semantics — so a controller moves to wasm by changing its Cargo.toml only (through the
//! `kube-wasm` facade, used as `kube`). The guest never touches the network: every request
//! is built with kube-core's `Request` builders, sent to the host as an ABI op
//! (`kube-wasm-abi/SPEC.md`), and its completion turned back into kube's types:
//!
//! - a non-2xx response is [`Error::Api`] with the server's `Status` (or one synthesised
//!   from the status code and body text, as kube does), so `is_not_found()` and friends
//!   work;
//! - a host failure maps per the SPEC's error-code table ([`Error::Service`],
//!   [`Error::ReadEvents`], …);
//! - [`Api::watch`] is a `watch` op yielding one `WatchEvent` per event.
//!
//! Every public future and stream is `Send` where kube's is, so
//! `tokio::spawn(async move { api.get("x").await })` compiles; dropping one early cancels
//! its op on the host.
//!
//! Natively (not wasm32) the crate builds against `kube_wasm_guest::fake::FakeHost`, which
//! tests use to script the host.
//!
//! [`discovery`] (with [`Discovery`]) is kube's, its requests going through the host too;
//! [`Client::request_stream`] and `Api::log_stream` stream a body line by line (`lines`
//! mode); [`Client::send`] is kube's raw `http::Request<Body>` → `http::Response<Body>`
//! path (every status comes back as a response; the body arrives whole). With the `ws`
//! feature, [`Client::connect`], `Api::exec`, `Api::attach` and `Api::portforward` run over
//! a websocket the host opens and relays, failing as kube's do
//! ([`Error::Api`], `Error::UpgradeConnection`).
//!
//! Not provided: `ClientBuilder` and tower layers (the host owns the HTTP stack).
//!
//! The rest of this page is the crate's README.
#![doc = include_str!("../README.md")]

pub mod api;
mod box_error;
pub mod client;
pub mod config;
pub mod discovery;
pub mod error;

#[doc(inline)]
pub use api::Api;
#[doc(inline)]
pub use client::Client;
#[doc(inline)]
pub use config::Config;
#[doc(inline)]
pub use discovery::Discovery;
#[doc(inline)]
pub use error::Error;

/// Convenient alias for `Result<T, Error>`, as kube's.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub use kube_core as core;
pub use kube_core::{CustomResourceExt, Resource, ResourceExt};
