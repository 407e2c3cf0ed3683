//! The behavioural parity suite: each scenario controller of `parity-scenarios` runs twice
//! against the same real apiserver — its native build (kube 5.0 + tokio) and its wasm32-wasip1
//! build (kube-wasm, in the host shim) — each in a fresh namespace, driven through the same
//! scripted steps, and the harness compares what the two runs did.
//!
//! # Steps and quiescence
//! A step applies the same action to both runs, waits until the step's effect shows in each
//! (its done condition), then until neither run printed an observation nor sent a request for
//! [`parity::QUIET`]. Only then the next step starts, so everything a run does is attributed to
//! the step that caused it. A restart step's done condition is that every run again has an
//! still-open watch of each kind it watches (read from the audit log), still true
//! after settling: a first watch may get 410 Gone and the watcher relist after its backoff.
//!
//! # What is compared
//! - **state**: after the last step, every object of the scenario's kinds in each namespace,
//!   normalised (no uid, resourceVersion, timestamps, managedFields, namespace name; Events
//!   keyed by what they say). Labels, annotations, data, spec, status and finalizers count.
//! - **requests**: per step, the program's requests from the audit log (the harness
//!   impersonates its own user, so its requests are left out), each projected to verb,
//!   resource, group, subresource, name, the sorted query parameters (`continue` tokens and
//!   non-zero resourceVersions replaced by placeholders; see [`Parity::label_versions`]), a
//!   patch body's shape, and the response code. *Writes* (create, update, patch, delete) are
//!   compared in the order the apiserver received them — or as a sorted list in a step where
//!   several objects are reconciled concurrently (`start`, [`Parity::unordered_step`],
//!   [`Parity::restart_step`]). *Reads* (get, list, watch) are compared as a set: how often a
//!   controller re-reads depends on how its triggers batch, which Kubernetes does not fix.
//!   A restart step's reads are not compared: whether a cut watch resumes or gets 410 Gone
//!   and relists depends on cluster-wide writes. A scenario whose watches time out on their
//!   own compares its reads over the whole run ([`Parity::whole_run_reads`]).
//! - **observations**: per step and per stream, the lines `obs <stream> <text>` a program
//!   prints, in order; interleaving across streams (concurrent tasks) is not compared.
//!
//! Scenario programs are written so that these projections are deterministic for a correct
//! runtime: they write only when something is missing or different, decide from fresh reads
//! where a queued reconcile could act twice, and print observations without uids or
//! resourceVersions.
//!
//! # Builds
//! `KUBE_WASM_PARITY_BUILDS=native,native` runs the native build against itself, the check
//! that the projections above are deterministic; the default is `native,wasm`.
//!
//! # Failing
//! Any difference fails the scenario's test with a table `scenario | aspect | native | wasm`,
//! unless `allowlist.toml` lists it (see [`allowlist`]); a listed difference that no longer
//! occurs fails it too.

pub mod allowlist;
pub mod audit;
pub mod crds;
pub mod parity;
pub mod report;
pub mod run;
pub mod state;

pub use kube_wasm_e2e::side_by_side::Build;
pub use parity::Parity;
pub use run::Run;
