//! What the scenario controllers of the parity suite share: their custom resources and the
//! way they report what they observe.
//!
//! Every scenario is one program under `src/bin/`, plain kube-rs 5.0 code. Besides doing its
//! job it prints *observations*: lines `obs <stream> <text>` on stdout, where `<stream>` names
//! one sequential source (a watcher, a reconciler, a store) and `<text>` holds names and
//! labels only — never uids, resourceVersions, timestamps or the namespace — so that two runs
//! of the same steps print the same lines. The parity harness compares them stream by stream.

pub mod types;

use std::fmt::Display;

/// Prints the observation `obs <stream> <text>` (one line on stdout).
pub fn observe(stream: &str, text: impl Display) {
    println!("obs {stream} {text}");
}
