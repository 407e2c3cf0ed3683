//! Reconciling objects as their watches change, as kube-runtime 5.0's
//! `kube_runtime::controller`.
//!
//! - [`Controller`]: watches the main objects (and owned or related ones) and reconciles
//!   each changed object, per [`Action`]s and an error policy;
//! - [`applier`]: the same loop on any queue of [`ReconcileRequest`]s and a [`Store`](crate::reflector::Store);
//! - [`trigger_self`], [`trigger_owners`], [`trigger_with`]: request streams from watches;
//! - [`Config`] (debounce, concurrency) and [`Error`].
//!
//! Requests go through a [`debounced_scheduler`](crate::scheduler::debounced_scheduler) on
//! host timers; one object is never reconciled twice at once.

mod action;
mod applier;
mod builder;
mod config;
mod error;
mod request;
mod runner;
mod trigger;

pub use action::Action;
pub use applier::applier;
pub use builder::Controller;
pub use config::Config;
pub use error::{Error, RunnerError};
pub use request::{ReconcileReason, ReconcileRequest};
pub use trigger::{trigger_owners, trigger_self, trigger_with};

/// The target of the controller's log lines and reconcile spans: kube-runtime's
/// `controller` module path, so a guest's logs read and filter as a native controller's.
pub(crate) const LOG_TARGET: &str = "kube_runtime::controller";
