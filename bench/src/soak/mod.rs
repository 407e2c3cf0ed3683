//! The chaos soak (`kube-wasm-soak`, run by `scripts/soak.sh`): many healthy modules under
//! steady traffic in one host, beside hostile modules, while kube-apiserver and etcd are
//! restarted, connections cut and the host killed; it checks that nothing was lost, the host's
//! memory stayed bounded and no healthy module stalled.
//!
//! One concept a file: [`run`] (one run, start to end), [`traffic`] (the driver's changes),
//! [`observer`] (what the driver sees of the mirrors), [`ledger`] (changes, observations and
//! when each change was reconciled), [`schedule`] and [`chaos`] (the disruptions, planned and
//! carried out), [`downtime`] (when the API server was down), [`host`] (the manifest and the
//! host process), [`sampler`] (its memory and exits), [`trend`] (whether memory grew),
//! [`report`] (the checks and the text), [`clock`] (the run's time base).

pub mod chaos;
pub mod clock;
pub mod downtime;
pub mod host;
pub mod ledger;
pub mod observer;
pub mod report;
pub mod run;
pub mod sampler;
pub mod schedule;
pub mod traffic;
pub mod trend;
