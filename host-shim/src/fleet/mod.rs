//! The fleet and its operation: the command line ([`cli`]), the [`manifest`], both resolved
//! into one [`run_config`], where the cluster is ([`config`]), sizes and durations
//! ([`units`]), the HTTP endpoint of the host's [`metrics`](crate::metrics) ([`metrics_server`]),
//! and modules pulled from OCI registries ([`oci`]).

pub mod cli;
pub mod config;
pub mod exit;
pub mod manifest;
pub mod metrics_server;
pub mod module_fields;
pub mod oci;
pub mod operator;
pub mod placement;
pub mod run_config;
pub mod units;
pub mod wasm_controller;
