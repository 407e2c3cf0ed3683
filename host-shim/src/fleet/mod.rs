//! The fleet and its operation: the command line ([`cli`]), the [`manifest`], both resolved
//! into one [`run_config`], where the cluster is ([`config`]), sizes and durations
//! ([`units`]), and the HTTP endpoint of the host's [`metrics`](crate::metrics) ([`metrics_server`]).

pub mod cli;
pub mod config;
pub mod exit;
pub mod manifest;
pub mod metrics_server;
pub mod run_config;
pub mod units;
