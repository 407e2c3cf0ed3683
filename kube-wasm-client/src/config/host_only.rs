//! Marker traits for kube 5.0 items that only the host can have: the connection, the
//! certificates and the credentials. None is implemented for anything, so calling an item
//! bounded by one is a compile-time error whose message says what to use instead (through
//! `#[diagnostic::on_unimplemented]`), rather than "no function or associated item".
//!
//! The lifetime parameter keeps a bound such as `for<'a> Self: InClusterDns<'a>` from being
//! a trivially false where-clause, which Rust rejects where the item is defined.

/// Bounds [`Config::incluster_dns`](super::Config::incluster_dns).
#[diagnostic::on_unimplemented(
    message = "`Config::incluster_dns` is not available in a kube-wasm guest: the host connects to the API server",
    label = "a guest has no service-account token, certificates or cluster DNS",
    note = "use `Config::infer().await` or `Config::incluster()`: they read the cluster URL and default namespace the host passes on"
)]
pub trait InClusterDns<'a> {}

/// Bounds [`Config::apply_debug_overrides`](super::Config::apply_debug_overrides).
#[diagnostic::on_unimplemented(
    message = "`Config::apply_debug_overrides` is not available in a kube-wasm guest: impersonation is part of the host's credentials",
    label = "a guest's Config carries no auth info to override",
    note = "set `KUBE_RS_DEBUG_IMPERSONATE_USER` / `KUBE_RS_DEBUG_IMPERSONATE_GROUP` for the host process instead"
)]
pub trait DebugOverrides<'a> {}

/// Bounds [`Client::new`](crate::Client::new).
#[diagnostic::on_unimplemented(
    message = "`Client::new` over a tower service is not available in a kube-wasm guest: the host is the transport",
    label = "a guest cannot send requests through its own service stack",
    note = "use `Client::try_default().await`, `Client::try_from(config)` or `Client::for_host(namespace)`"
)]
pub trait TowerService<B> {}
