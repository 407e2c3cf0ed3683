//! The figures per variant and N (median and p99 over runs), and the wasm variants against
//! native computed pair by pair (run r of a wasm variant against run r of native).

use serde::Serialize;

use super::measured::Measured;
use crate::fleet::Variant;
use crate::stats::{self, Summary, pairwise_differences, pairwise_ratios};
use crate::workloads::{ChurnRun, RingRun};

/// The ring/idle figures of one variant at one N, over runs.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The variant.
    pub variant: Variant,
    /// Controllers.
    pub n: usize,
    /// Idle PSS of all its processes, KiB.
    pub idle_pss_kib: Option<Summary>,
    /// Idle RSS of all its processes, KiB (shared pages counted per process).
    pub idle_rss_kib: Option<Summary>,
    /// PSS under load (median of the samples during the cycles), KiB.
    pub load_pss_kib: Option<Summary>,
    /// Per-run p50 of event→reconcile latency, ms.
    pub reconcile_p50_ms: Option<Summary>,
    /// Per-run p99 of event→reconcile latency, ms.
    pub reconcile_p99_ms: Option<Summary>,
    /// Per-run p50 of ring latency, ms.
    pub ring_p50_ms: Option<Summary>,
    /// Per-run p99 of ring latency, ms.
    pub ring_p99_ms: Option<Summary>,
    /// Time to the end of the first cycle, ms.
    pub startup_ms: Option<Summary>,
    /// Upstream requests of the launch (audit log).
    pub requests: Option<Summary>,
    /// Upstream `watch` requests of the launch.
    pub watches: Option<Summary>,
    /// Upstream `list` requests of the launch.
    pub lists: Option<Summary>,
    /// Mean linear memory per module when idle (host metrics), bytes.
    pub linear_bytes_per_module: Option<Summary>,
    /// Upstream watches open when idle (host metrics).
    pub open_upstream_watches: Option<Summary>,
}

/// A wasm variant against native at one N, pair by pair.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The wasm variant.
    pub variant: Variant,
    /// Controllers.
    pub n: usize,
    /// Idle PSS ratio wasm/native.
    pub idle_ratio: Option<Summary>,
    /// Loaded PSS ratio wasm/native.
    pub load_ratio: Option<Summary>,
    /// Event→reconcile p50 difference wasm − native, ms.
    pub reconcile_p50_delta_ms: Option<Summary>,
    /// Event→reconcile p99 difference, ms.
    pub reconcile_p99_delta_ms: Option<Summary>,
    /// Ring p50 difference, ms.
    pub ring_p50_delta_ms: Option<Summary>,
    /// Ring p99 difference, ms.
    pub ring_p99_delta_ms: Option<Summary>,
}

/// Churn of one variant.
#[derive(Debug, Clone, Serialize)]
pub struct ChurnCell {
    /// The variant.
    pub variant: Variant,
    /// Copies per second.
    pub per_second: Option<Summary>,
    /// Ratio to native, pair by pair.
    pub ratio_to_native: Option<Summary>,
    /// Upstream requests of the launch.
    pub requests: Option<Summary>,
}

fn runs_of(m: &Measured, v: Variant, n: usize) -> Vec<&RingRun> {
    let mut runs: Vec<&RingRun> = m
        .ring
        .iter()
        .filter(|r| r.variant == v && r.n == n)
        .collect();
    runs.sort_by_key(|r| r.run);
    runs
}

/// Per-run values of `f` for the runs present in both `a` and `b`, paired by run index.
fn paired<T>(
    a: &[&T],
    b: &[&T],
    run: impl Fn(&T) -> usize,
    f: impl Fn(&T) -> Option<f64>,
) -> (Vec<f64>, Vec<f64>) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for x in a {
        if let Some(y) = b.iter().find(|y| run(y) == run(x))
            && let (Some(fx), Some(fy)) = (f(x), f(y))
        {
            xs.push(fx);
            ys.push(fy);
        }
    }
    (xs, ys)
}

fn p(values: &[f64], q: f64) -> Option<f64> {
    stats::percentile(values, q)
}

fn summary(runs: &[&RingRun], f: impl Fn(&RingRun) -> Option<f64>) -> Option<Summary> {
    Summary::of(runs.iter().filter_map(|r| f(r)).collect())
}

/// KiB per MiB (memory figures are kept in KiB).
pub const MIB: f64 = 1024.0;
/// Bytes per MiB.
pub const MIB_BYTES: f64 = 1024.0 * 1024.0;

/// The figures computed from the measurements.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Per variant and N.
    pub cells: Vec<Cell>,
    /// Per wasm variant and N, against native.
    pub comparisons: Vec<Comparison>,
    /// Per variant: idle memory per extra controller, in KiB (least-squares slope over N).
    pub marginal_kib: Vec<(Variant, Option<f64>)>,
    /// Per variant: churn.
    pub churn: Vec<ChurnCell>,
}

impl Figures {
    /// Computes the figures from the measurements.
    pub fn new(m: &Measured) -> Self {
        let mut cells = Vec::new();
        let mut comparisons = Vec::new();
        for &v in &m.variants {
            for &n in &m.ns {
                let runs = runs_of(m, v, n);
                if runs.is_empty() {
                    continue;
                }
                cells.push(Cell {
                    variant: v,
                    n,
                    idle_pss_kib: summary(&runs, |r| Some(r.idle.pss_kib as f64)),
                    idle_rss_kib: summary(&runs, |r| Some(r.idle.rss_kib as f64)),
                    load_pss_kib: summary(&runs, |r| Some(r.load.pss_kib as f64)),
                    reconcile_p50_ms: summary(&runs, |r| p(&r.reconcile_ms, 50.0)),
                    reconcile_p99_ms: summary(&runs, |r| p(&r.reconcile_ms, 99.0)),
                    ring_p50_ms: summary(&runs, |r| p(&r.ring_ms, 50.0)),
                    ring_p99_ms: summary(&runs, |r| p(&r.ring_ms, 99.0)),
                    startup_ms: summary(&runs, |r| Some(r.startup_ms)),
                    requests: summary(&runs, |r| r.requests.as_ref().map(|q| q.total as f64)),
                    watches: summary(&runs, |r| {
                        r.requests.as_ref().map(|q| q.verb("watch") as f64)
                    }),
                    lists: summary(&runs, |r| {
                        r.requests.as_ref().map(|q| q.verb("list") as f64)
                    }),
                    linear_bytes_per_module: summary(&runs, |r| {
                        let h = r.host_idle.as_ref()?;
                        (h.modules > 0).then(|| h.linear_memory_bytes as f64 / h.modules as f64)
                    }),
                    open_upstream_watches: summary(&runs, |r| {
                        r.host_idle.as_ref().map(|h| h.upstream_watches as f64)
                    }),
                });
                if v == Variant::Native {
                    continue;
                }
                let native = runs_of(m, Variant::Native, n);
                if native.is_empty() {
                    continue;
                }
                let ratio = |f: &dyn Fn(&RingRun) -> Option<f64>| {
                    let (a, b) = paired(&runs, &native, |r| r.run, f);
                    Summary::of(pairwise_ratios(&a, &b))
                };
                let delta = |f: &dyn Fn(&RingRun) -> Option<f64>| {
                    let (a, b) = paired(&runs, &native, |r| r.run, f);
                    Summary::of(pairwise_differences(&a, &b))
                };
                comparisons.push(Comparison {
                    variant: v,
                    n,
                    idle_ratio: ratio(&|r| Some(r.idle.pss_kib as f64)),
                    load_ratio: ratio(&|r| Some(r.load.pss_kib as f64)),
                    reconcile_p50_delta_ms: delta(&|r| p(&r.reconcile_ms, 50.0)),
                    reconcile_p99_delta_ms: delta(&|r| p(&r.reconcile_ms, 99.0)),
                    ring_p50_delta_ms: delta(&|r| p(&r.ring_ms, 50.0)),
                    ring_p99_delta_ms: delta(&|r| p(&r.ring_ms, 99.0)),
                });
            }
        }
        let marginal_kib = m
            .variants
            .iter()
            .map(|&v| {
                let points: Vec<(f64, f64)> = m
                    .ring
                    .iter()
                    .filter(|r| r.variant == v)
                    .map(|r| (r.n as f64, r.idle.pss_kib as f64))
                    .collect();
                (v, stats::slope(&points))
            })
            .collect();
        let churn_of = |v: Variant| {
            let mut runs: Vec<&ChurnRun> = m.churn.iter().filter(|c| c.variant == v).collect();
            runs.sort_by_key(|c| c.run);
            runs
        };
        let native_churn = churn_of(Variant::Native);
        let churn = m
            .variants
            .iter()
            .map(|&v| {
                let runs = churn_of(v);
                let (a, b) = paired(&runs, &native_churn, |c| c.run, |c| Some(c.per_second));
                ChurnCell {
                    variant: v,
                    per_second: Summary::of(runs.iter().map(|c| c.per_second).collect()),
                    ratio_to_native: (v != Variant::Native)
                        .then(|| Summary::of(pairwise_ratios(&a, &b)))
                        .flatten(),
                    requests: Summary::of(
                        runs.iter()
                            .filter_map(|c| c.requests.as_ref().map(|q| q.total as f64))
                            .collect(),
                    ),
                }
            })
            .collect();
        Self {
            cells,
            comparisons,
            marginal_kib,
            churn,
        }
    }

    /// The figures of `v` at `n`, if it ran.
    pub fn cell(&self, v: Variant, n: usize) -> Option<&Cell> {
        self.cells.iter().find(|c| c.variant == v && c.n == n)
    }

    /// `v` against native at `n`, if both ran.
    pub fn comparison(&self, v: Variant, n: usize) -> Option<&Comparison> {
        self.comparisons.iter().find(|c| c.variant == v && c.n == n)
    }
}
