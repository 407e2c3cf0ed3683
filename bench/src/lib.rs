//! The benchmark's and the soak's pieces, one concept a module: the apiserver's audit log
//! ([`audit`]), memory budgets under cgroup limits and idle CPU ([`budget`], [`cgroup`]; the edge and
//! mixed fleets' [`fleet_budget`], answered as [`reactions`] say; run in order by [`budget_stage`]), the driver's side of the cluster ([`cluster`]), a launch's controllers
//! ([`fleet`]), the memory levers before/after ([`levers`]), the cold start ([`cold_start`]), fleets of
//! distinct controllers ([`mixed`]), Go controllers ([`go`]), process memory ([`memory`]), the
//! machine's global memory reclaim ([`pressure`]), sample
//! statistics ([`stats`]), the static figures ([`statics`]), the workloads ([`workloads`]),
//! host replicas sharing a fleet ([`replicas`]), suspended modules by the thousand
//! ([`suspended_scale`]) and the report ([`report`]) of
//! `kube-wasm-bench`; and the chaos soak of `kube-wasm-soak` ([`soak`]).

// Not published: its docs describe the internals too, so they link private items (which
// resolve with `cargo doc --document-private-items`).
#![allow(rustdoc::private_intra_doc_links)]

pub mod audit;
pub mod budget;
pub mod budget_stage;
pub mod cgroup;
pub mod cluster;
pub mod cold_start;
pub mod cpu;
pub mod fleet;
pub mod fleet_budget;
pub mod go;
pub mod levers;
pub mod memory;
pub mod mixed;
pub mod pressure;
pub mod reactions;
pub mod replicas;
pub mod report;
pub mod soak;
pub mod statics;
pub mod stats;
pub mod suspended_scale;
pub mod workloads;
