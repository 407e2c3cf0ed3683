//! The API server side: the [`client`] every request leaves through (kube's own
//! `kube::Client`, over the shared [`http2`] connections where it can), the [`identity`] each module acts as, the [`permissions`] it is held to —
//! judged on the [`request_info`] of its [`request_uri`], as kube-apiserver judges it — and the
//! [`watch_cache`] that lets modules share upstream LIST+WATCHes.

pub mod client;
pub mod http2;
pub mod identity;
pub mod limits;
pub mod permissions;
pub mod request_info;
pub mod request_uri;
pub mod watch_cache;
