//! Helpers for watcher streams, as kube-runtime 5.0's `kube_runtime::utils`: the
//! [`WatchStreamExt`] combinators, backoffs, and predicates.

mod backoff_reset_timer;
mod cancelable_join_handle;
mod event_decode;
mod event_modify;
mod predicate;
mod reflect;
mod stream_backoff;
mod watch_ext;

pub use backoff_reset_timer::{Backoff, ResetTimerBackoff};
pub use cancelable_join_handle::CancelableJoinHandle;
pub use event_decode::EventDecode;
pub use event_modify::EventModify;
pub use predicate::{Config as PredicateConfig, Predicate, PredicateFilter, predicates};
pub use reflect::Reflect;
pub use stream_backoff::StreamBackoff;
pub use watch_ext::WatchStreamExt;
