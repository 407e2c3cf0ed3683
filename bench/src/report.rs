//! The report: figures per variant and N (median and p99 over runs), wasm/native ratios
//! computed pair by pair (run r of a wasm variant against run r of native), the goals
//! with whether each holds, written as `report.md`, `report.json` and PNG plots.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use plotters::prelude::*;
use serde::Serialize;

use crate::fleet::Variant;
use crate::statics::Statics;
use crate::stats::{self, Summary, pairwise_differences, pairwise_ratios};
use crate::workloads::{ChurnRun, ResumePoint, RingRun};

/// A variant that was asked for but could not run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Unavailable {
    /// The variant.
    pub variant: Variant,
    /// Why.
    pub reason: String,
}

/// Everything measured, and the parameters.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    /// When the run started (RFC 3339-ish, from `date`), and the machine.
    pub context: Vec<(String, String)>,
    /// Variants run.
    pub variants: Vec<Variant>,
    /// Variants asked for that could not run.
    pub unavailable: Vec<Unavailable>,
    /// Controller counts of the ring.
    pub ns: Vec<usize>,
    /// Ring launches.
    pub ring: Vec<RingRun>,
    /// Churn launches.
    pub churn: Vec<ChurnRun>,
    /// The resume curve, by linear-memory size (empty when it did not run).
    pub resume: Vec<ResumePoint>,
    /// Figures without a cluster.
    pub statics: Option<Statics>,
}

/// A goal of issue #6 and whether it holds.
#[derive(Debug, Clone, Serialize)]
pub struct Goal {
    /// What is compared.
    pub goal: String,
    /// The target, as the issue states it.
    pub target: String,
    /// The measured figure(s).
    pub measured: String,
    /// `Some(true)`: holds; `Some(false)`: fails; `None`: not measured (with the reason in
    /// `measured`).
    pub holds: Option<bool>,
}

/// The whole report, as written to `report.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The goals.
    pub goals: Vec<Goal>,
    /// Per variant and N.
    pub cells: Vec<Cell>,
    /// Per wasm variant and N, against native.
    pub comparisons: Vec<Comparison>,
    /// Per variant: idle memory per extra controller, in KiB (least-squares slope over N).
    pub marginal_kib: Vec<(Variant, Option<f64>)>,
    /// Per variant: churn.
    pub churn: Vec<ChurnCell>,
    /// The raw measurements.
    pub measured: Measured,
}

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

impl Report {
    /// Computes the report from the measurements.
    pub fn new(measured: Measured) -> Self {
        let m = &measured;
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
        let mut report = Self {
            goals: Vec::new(),
            cells,
            comparisons,
            marginal_kib,
            churn,
            measured,
        };
        report.goals = goals(&report);
        report
    }

    fn cell(&self, v: Variant, n: usize) -> Option<&Cell> {
        self.cells.iter().find(|c| c.variant == v && c.n == n)
    }

    fn comparison(&self, v: Variant, n: usize) -> Option<&Comparison> {
        self.comparisons.iter().find(|c| c.variant == v && c.n == n)
    }

    fn unavailable(&self, v: Variant) -> Option<&str> {
        self.measured
            .unavailable
            .iter()
            .find(|u| u.variant == v)
            .map(|u| u.reason.as_str())
    }

    /// Writes `report.md`, `report.json` and the plots into `dir`; returns the files.
    ///
    /// # Errors
    /// If a file cannot be written or a plot drawn.
    pub fn write(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut files = Vec::new();
        let json = dir.join("report.json");
        std::fs::write(&json, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("writing {}", json.display()))?;
        files.push(json);
        let plots = self.plots(dir)?;
        let md = dir.join("report.md");
        std::fs::write(&md, self.markdown(&plots))
            .with_context(|| format!("writing {}", md.display()))?;
        files.push(md);
        files.extend(plots);
        Ok(files)
    }
}

/// KiB per MiB (memory figures are kept in KiB).
const MIB: f64 = 1024.0;
/// Bytes per MiB.
const MIB_BYTES: f64 = 1024.0 * 1024.0;

fn verdict(holds: Option<bool>) -> &'static str {
    match holds {
        Some(true) => "holds",
        Some(false) => "**fails**",
        None => "not measured",
    }
}

fn fmt_summary(s: Option<&Summary>, scale: f64, digits: usize) -> String {
    match s {
        Some(s) if s.runs.len() > 1 => format!(
            "{:.*} (p99 {:.*})",
            digits,
            s.median / scale,
            digits,
            s.p99 / scale
        ),
        Some(s) => format!("{:.*}", digits, s.median / scale),
        None => "–".into(),
    }
}

fn fmt_pct(s: Option<&Summary>) -> String {
    match s {
        Some(s) if s.runs.len() > 1 => {
            format!("{:.1} % (p99 {:.1} %)", s.median * 100.0, s.p99 * 100.0)
        }
        Some(s) => format!("{:.1} %", s.median * 100.0),
        None => "–".into(),
    }
}

/// The bytes of "2 MB" in the resume goal.
const TWO_MB: f64 = 2_000_000.0;

/// Resume at 2 MB: judged at the smallest size of the resume curve with at least 2 MB of
/// linear memory (resume time grows with memory, so this errs against us); without a curve,
/// from the resumes of the ring's wasm-suspend launches (at whatever memory they had);
/// `not_run` says why neither exists.
fn resume_goal(m: &Measured, not_run: String) -> Goal {
    let goal = "resume from disk at 2 MB of linear memory".to_string();
    let target = "≤ 5 ms".to_string();
    if !m.resume.is_empty() {
        let at_2mb = m
            .resume
            .iter()
            .filter(|p| p.linear_memory_bytes as f64 >= TWO_MB)
            .min_by_key(|p| p.linear_memory_bytes);
        return match at_2mb.and_then(|p| Some((p, stats::median(&p.resume_ms)?))) {
            Some((p, ms)) => Goal {
                goal,
                target,
                measured: format!(
                    "resume p50 {ms:.2} ms at {:.2} MiB of linear memory ({:.2} MiB snapshot; the curve's smallest size ≥ 2 MB)",
                    p.linear_memory_bytes as f64 / MIB_BYTES,
                    p.snapshot_bytes as f64 / MIB_BYTES
                ),
                holds: Some(ms <= 5.0),
            },
            None => Goal {
                goal,
                target,
                measured: "not measured: no size of the resume curve reached 2 MB".into(),
                holds: None,
            },
        };
    }
    let resumes: Vec<(f64, f64)> = m
        .ring
        .iter()
        .filter(|r| r.variant == Variant::WasmSuspend)
        .filter_map(|r| {
            let h = r.host_end.as_ref()?;
            (h.resumes > 0 && h.modules > 0).then(|| {
                (
                    h.resume_seconds * 1000.0 / h.resumes as f64,
                    h.linear_memory_bytes as f64 / h.modules as f64,
                )
            })
        })
        .collect();
    if resumes.is_empty() {
        return Goal {
            goal,
            target,
            measured: not_run,
            holds: None,
        };
    }
    let ms: Vec<f64> = resumes.iter().map(|x| x.0).collect();
    let bytes: Vec<f64> = resumes.iter().map(|x| x.1).collect();
    let med = stats::median(&ms).unwrap_or_default();
    Goal {
        goal,
        target,
        measured: format!(
            "mean resume {med:.2} ms at {:.2} MiB linear memory per module (ring launches; the resume curve did not run)",
            stats::median(&bytes).unwrap_or_default() / MIB_BYTES
        ),
        holds: Some(med <= 5.0),
    }
}

fn goals(r: &Report) -> Vec<Goal> {
    let mut goals = Vec::new();
    let m = &r.measured;
    let n_big = if m.ns.contains(&100) {
        Some(100)
    } else {
        m.ns.iter().copied().max()
    };
    let not_run = |v: Variant| -> String {
        match r.unavailable(v) {
            Some(reason) => format!("not available: {reason}"),
            None if !m.variants.contains(&v) => {
                format!("not available: variant {} not run", v.label())
            }
            None => "not available: no measurement".into(),
        }
    };
    let at = |n: usize| {
        if n == 100 {
            String::new()
        } else {
            format!(" (measured at N={n}: N=100 was not run)")
        }
    };
    for (v, target) in [(Variant::Wasm, 0.10), (Variant::WasmSuspend, 0.05)] {
        let goal = format!(
            "memory of 100 idle modules, host included, vs 100 native processes{}",
            if v == Variant::WasmSuspend {
                ", idle modules suspended"
            } else {
                ""
            }
        );
        let target_text = format!("≤ {:.0} %", target * 100.0);
        match n_big.and_then(|n| Some((n, r.comparison(v, n)?.idle_ratio.clone()?))) {
            Some((n, ratio)) => {
                let host = r.cell(v, n).and_then(|c| c.idle_pss_kib.as_ref());
                let native = r
                    .cell(Variant::Native, n)
                    .and_then(|c| c.idle_pss_kib.as_ref());
                goals.push(Goal {
                    goal,
                    target: target_text,
                    measured: format!(
                        "{:.1} % (p99 {:.1} %): host {} MiB vs native {} MiB PSS{}",
                        ratio.median * 100.0,
                        ratio.p99 * 100.0,
                        fmt_summary(host, MIB, 1),
                        fmt_summary(native, MIB, 1),
                        at(n)
                    ),
                    holds: Some(ratio.median <= target),
                });
            }
            None => goals.push(Goal {
                goal,
                target: target_text,
                measured: not_run(v),
                holds: None,
            }),
        }
    }
    for (v, limit_bytes, target) in [
        (Variant::Wasm, 500_000.0, "≤ 0.5 MB"),
        (Variant::WasmSuspend, 50_000.0, "≤ 50 KB"),
    ] {
        let goal = format!(
            "marginal memory per idle module{}",
            if v == Variant::WasmSuspend {
                ", suspended"
            } else {
                ""
            }
        );
        let slope = r
            .marginal_kib
            .iter()
            .find(|(x, _)| *x == v)
            .and_then(|(_, s)| *s);
        goals.push(match slope {
            Some(kib) => Goal {
                goal,
                target: target.into(),
                measured: format!(
                    "{kib:.0} KiB ({:.0} kB): slope of the host's idle PSS over N = {:?}",
                    kib * 1.024,
                    m.ns
                ),
                holds: Some(kib * 1024.0 <= limit_bytes),
            },
            None if m.variants.contains(&v) => Goal {
                goal,
                target: target.into(),
                measured: "not available: needs at least two values of N".into(),
                holds: None,
            },
            None => Goal {
                goal,
                target: target.into(),
                measured: not_run(v),
                holds: None,
            },
        });
    }
    for (label, limit, pick) in [
        (
            "p50",
            1.0,
            (|c: &Comparison| c.reconcile_p50_delta_ms.clone())
                as fn(&Comparison) -> Option<Summary>,
        ),
        ("p99", 5.0, |c: &Comparison| {
            c.reconcile_p99_delta_ms.clone()
        }),
    ] {
        let deltas: Vec<(usize, Summary)> =
            m.ns.iter()
                .filter_map(|&n| Some((n, pick(r.comparison(Variant::Wasm, n)?)?)))
                .collect();
        let goal = format!("event→reconcile latency {label}, wasm vs native");
        let target = format!("≤ native + {limit} ms");
        if deltas.is_empty() {
            goals.push(Goal {
                goal,
                target,
                measured: not_run(Variant::Wasm),
                holds: None,
            });
            continue;
        }
        let text: Vec<String> = deltas
            .iter()
            .map(|(n, d)| format!("N={n}: {:+.2} ms", d.median))
            .collect();
        goals.push(Goal {
            goal,
            target,
            measured: format!("wasm − native (median over run pairs): {}", text.join(", ")),
            holds: Some(deltas.iter().all(|(_, d)| d.median <= limit)),
        });
    }
    let churn = r
        .churn
        .iter()
        .find(|c| c.variant == Variant::Wasm)
        .and_then(|c| c.ratio_to_native.clone());
    goals.push(match churn {
        Some(ratio) => Goal {
            goal: "churn throughput, wasm vs native".into(),
            target: "≥ 0.8×".into(),
            measured: format!("{:.2}× (p99 {:.2}×)", ratio.median, ratio.p99),
            holds: Some(ratio.median >= 0.8),
        },
        None => Goal {
            goal: "churn throughput, wasm vs native".into(),
            target: "≥ 0.8×".into(),
            measured: not_run(Variant::Wasm),
            holds: None,
        },
    });
    goals.push(match &m.statics {
        Some(s) => Goal {
            goal: "instantiate from the precompiled module".into(),
            target: "≤ 1 ms".into(),
            measured: format!(
                "p50 {:.3} ms, p99 {:.3} ms ({} instantiations of ring-controller)",
                s.instantiate.p50_ms, s.instantiate.p99_ms, s.instantiate.count
            ),
            holds: Some(s.instantiate.p50_ms <= 1.0),
        },
        None => Goal {
            goal: "instantiate from the precompiled module".into(),
            target: "≤ 1 ms".into(),
            measured: "not available: static figures were skipped".into(),
            holds: None,
        },
    });
    goals.push(resume_goal(m, not_run(Variant::WasmSuspend)));
    goals.push(match &m.statics {
        Some(s) if !s.wasm.is_empty() => {
            let largest = s
                .wasm
                .iter()
                .max_by_key(|w| w.bytes)
                .map(|w| (w.name.clone(), w.bytes))
                .unwrap_or_default();
            Goal {
                goal: "example `.wasm` size (release)".into(),
                target: "≤ 2 MiB each".into(),
                measured: format!(
                    "largest: {} at {:.2} MiB ({} files)",
                    largest.0,
                    largest.1 as f64 / (1024.0 * 1024.0),
                    s.wasm.len()
                ),
                holds: Some(s.wasm.iter().all(|w| w.bytes <= 2 << 20)),
            }
        }
        _ => Goal {
            goal: "example `.wasm` size (release)".into(),
            target: "≤ 2 MiB each".into(),
            measured: "not available: static figures were skipped".into(),
            holds: None,
        },
    });
    goals
}

impl Report {
    fn markdown(&self, plots: &[PathBuf]) -> String {
        let m = &self.measured;
        let mut s =
            String::from("# kube-wasm benchmark: wasm controllers vs native kube-rs 5.0\n\n");
        for (k, v) in &m.context {
            let _ = writeln!(s, "- {k}: {v}");
        }
        let _ = writeln!(
            s,
            "\nVariants (the same `ring-controller` source each time):\n"
        );
        for v in Variant::ALL {
            let state = if m.variants.contains(&v) {
                "run".to_string()
            } else {
                match self.unavailable(v) {
                    Some(reason) => format!("**not available**: {reason}"),
                    None => "not selected".into(),
                }
            };
            let _ = writeln!(s, "- `{}`: {} — {state}", v.label(), v.description());
        }
        s.push_str("\nFigures are the median over runs, with the p99 over runs in brackets where there were several; ratios and differences are computed pair by pair (run r of a wasm variant against run r of native) and then summarised.\n\n## Goals\n\n| goal | target | measured | verdict |\n|---|---|---|---|\n");
        for g in &self.goals {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                g.goal,
                g.target,
                g.measured,
                verdict(g.holds)
            );
        }
        let variants = &m.variants;
        let header = |s: &mut String, first: &str| {
            let _ = write!(s, "| {first} |");
            for v in variants {
                let _ = write!(s, " {} |", v.label());
            }
            s.push_str("\n|---|");
            for _ in variants {
                s.push_str("---|");
            }
            s.push('\n');
        };
        let table = |s: &mut String, title: &str, note: &str, f: &dyn Fn(&Cell) -> String| {
            let _ = writeln!(s, "\n### {title}\n\n{note}\n");
            header(s, "N");
            for &n in &m.ns {
                let _ = write!(s, "| {n} |");
                for &v in variants {
                    let _ = write!(
                        s,
                        " {} |",
                        self.cell(v, n).map(f).unwrap_or_else(|| "–".into())
                    );
                }
                s.push('\n');
            }
        };
        s.push_str("\n## Memory\n");
        table(
            &mut s,
            "Idle fleet: PSS of all processes, MiB",
            "N controllers, each with its own watch and one Ring, nothing changing (after the warm-up cycles and the settle time). Native: the sum over the N processes; wasm: the one host process.",
            &|c| fmt_summary(c.idle_pss_kib.as_ref(), MIB, 1),
        );
        table(
            &mut s,
            "Idle fleet: RSS summed over processes, MiB (for scale only)",
            "RSS counts the pages native processes share (their binary, libraries) once per process; the goals use PSS.",
            &|c| fmt_summary(c.idle_rss_kib.as_ref(), MIB, 1),
        );
        table(
            &mut s,
            "Under load: PSS during the ring cycles, MiB",
            "Median of samples taken every second while the measured cycles ran.",
            &|c| fmt_summary(c.load_pss_kib.as_ref(), MIB, 1),
        );
        let _ = writeln!(
            s,
            "\n### wasm / native PSS ratio (pair by pair)\n\n| variant | N | idle | under load |\n|---|---|---|---|"
        );
        for c in &self.comparisons {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                c.variant.label(),
                c.n,
                fmt_pct(c.idle_ratio.as_ref()),
                fmt_pct(c.load_ratio.as_ref())
            );
        }
        let _ = writeln!(
            s,
            "\n### Marginal memory per controller (slope of idle PSS over N)\n\n| variant | KiB per controller |\n|---|---|"
        );
        for (v, kib) in &self.marginal_kib {
            let _ = writeln!(
                s,
                "| {} | {} |",
                v.label(),
                kib.map(|k| format!("{k:.0}"))
                    .unwrap_or_else(|| "– (needs two N)".into())
            );
        }
        s.push_str("\n## Latency\n");
        table(
            &mut s,
            "Event→reconcile p50 / p99, ms",
            "From the driver's write of nonce j in namespace 0 until controller 0's reconcile started (its stamp, same clock), per run p50 / p99 over the measured cycles.",
            &|c| {
                format!(
                    "{} / {}",
                    fmt_summary(c.reconcile_p50_ms.as_ref(), 1.0, 2),
                    fmt_summary(c.reconcile_p99_ms.as_ref(), 1.0, 2)
                )
            },
        );
        table(
            &mut s,
            "Ring latency p50 / p99, ms",
            "From writing nonce j in namespace 0 until the driver's watch of namespace N sees it (N hops).",
            &|c| {
                format!(
                    "{} / {}",
                    fmt_summary(c.ring_p50_ms.as_ref(), 1.0, 1),
                    fmt_summary(c.ring_p99_ms.as_ref(), 1.0, 1)
                )
            },
        );
        let _ = writeln!(
            s,
            "\n### wasm − native latency differences, ms (pair by pair)\n\n| variant | N | event→reconcile p50 | p99 | ring p50 | ring p99 |\n|---|---|---|---|---|---|"
        );
        for c in &self.comparisons {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                c.variant.label(),
                c.n,
                fmt_summary(c.reconcile_p50_delta_ms.as_ref(), 1.0, 2),
                fmt_summary(c.reconcile_p99_delta_ms.as_ref(), 1.0, 2),
                fmt_summary(c.ring_p50_delta_ms.as_ref(), 1.0, 1),
                fmt_summary(c.ring_p99_delta_ms.as_ref(), 1.0, 1)
            );
        }
        let _ = writeln!(
            s,
            "\n## Churn\n\nOne controller; a burst of K = {} Ring writes in its namespace ({} in flight); copies per second from the first write until every copy arrived.\n\n| variant | copies/s | × native | upstream requests |\n|---|---|---|---|",
            self.measured.churn.first().map(|c| c.k).unwrap_or_default(),
            self.measured
                .churn
                .first()
                .map(|c| c.parallel)
                .unwrap_or_default()
        );
        for c in &self.churn {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                c.variant.label(),
                fmt_summary(c.per_second.as_ref(), 1.0, 0),
                fmt_summary(c.ratio_to_native.as_ref(), 1.0, 2),
                fmt_summary(c.requests.as_ref(), 1.0, 0)
            );
        }
        s.push_str("\n## Upstream requests and watches (apiserver audit log)\n");
        table(
            &mut s,
            "Requests of the controllers over a whole ring launch: total / list / watch",
            "Every request of the launch (start, warm-up, settle, cycles, stop) except the driver's own, counted once per audit ID.",
            &|c| {
                format!(
                    "{} / {} / {}",
                    fmt_summary(c.requests.as_ref(), 1.0, 0),
                    fmt_summary(c.lists.as_ref(), 1.0, 0),
                    fmt_summary(c.watches.as_ref(), 1.0, 0)
                )
            },
        );
        table(
            &mut s,
            "Host: linear memory per module (KiB) / upstream watches open, when idle",
            "From the host's metrics endpoint; native controllers have none.",
            &|c| match (&c.linear_bytes_per_module, &c.open_upstream_watches) {
                (Some(l), Some(w)) => format!(
                    "{} / {}",
                    fmt_summary(Some(l), 1024.0, 0),
                    fmt_summary(Some(w), 1.0, 0)
                ),
                _ => "–".into(),
            },
        );
        table(
            &mut s,
            "Startup: until the first ring cycle completed, ms",
            "Processes started (and, for the host, modules compiled or loaded from its cache) until the first nonce went round.",
            &|c| fmt_summary(c.startup_ms.as_ref(), 1.0, 0),
        );
        if let Some(st) = &m.statics {
            let _ = writeln!(
                s,
                "\n## Modules\n\nWith the host's engine configuration and its cache of precompiled modules. Instantiation: {} instantiations of `ring-controller` from one pre-instantiation, each into a fresh store (stub imports; WASI context not included): p50 {:.3} ms, p99 {:.3} ms; dropping the store afterwards (slot reset): p50 {:.3} ms. (`cargo bench -p host-shim --bench abi` times the host's whole instantiate + `_start` + exit.)\n\n| module | `.wasm` (release) | cold compile, ms | load from cache, ms |\n|---|---|---|---|",
                st.instantiate.count,
                st.instantiate.p50_ms,
                st.instantiate.p99_ms,
                st.instantiate.drop_p50_ms
            );
            for w in &st.wasm {
                let _ = writeln!(
                    s,
                    "| {} | {:.0} KiB | {} | {} |",
                    w.name,
                    w.bytes as f64 / 1024.0,
                    fmt_summary(Summary::of(w.compile_ms.clone()).as_ref(), 1.0, 0),
                    fmt_summary(Summary::of(w.cache_load_ms.clone()).as_ref(), 1.0, 2)
                );
            }
        }
        s.push_str("\n## Resume from disk vs linear memory size\n\n");
        if m.resume.is_empty() {
            let _ = writeln!(
                s,
                "The resume curve did not run: {}",
                self.unavailable(Variant::WasmSuspend)
                    .unwrap_or("it needs the wasm-suspend variant (and no --no-resume-curve)")
            );
        } else {
            s.push_str("One ring-controller module holding `RING_BALLAST_MIB` of written memory, suspended after `idleAfter` and woken by a Ring write, again and again; times are the host's own (`kube_wasm_module_{suspend,resume}_duration_seconds`).\n\n| ballast, MiB | linear memory, MiB | snapshot, MiB | suspend p50, ms | resume p50, ms | resume max, ms | resumes |\n|---|---|---|---|---|---|---|\n");
            for p in &m.resume {
                let _ = writeln!(
                    s,
                    "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
                    p.ballast_mib,
                    p.linear_memory_bytes as f64 / MIB_BYTES,
                    p.snapshot_bytes as f64 / MIB_BYTES,
                    stats::median(&p.suspend_ms).unwrap_or(f64::NAN),
                    stats::median(&p.resume_ms).unwrap_or(f64::NAN),
                    p.resume_ms.iter().copied().fold(f64::NAN, f64::max),
                    p.resume_ms.len()
                );
            }
        }
        let ring_resumes = m
            .ring
            .iter()
            .filter_map(|r| {
                r.host_end
                    .as_ref()
                    .filter(|h| h.resumes > 0)
                    .map(|h| (r.n, h))
            })
            .collect::<Vec<_>>();
        if !ring_resumes.is_empty() {
            s.push_str("\nResumes during the ring launches of wasm-suspend (modules woken by the ring's own writes):\n\n| N | linear memory per module, KiB | resumes | mean resume, ms |\n|---|---|---|---|\n");
            for (n, h) in ring_resumes {
                let _ = writeln!(
                    s,
                    "| {n} | {:.0} | {} | {:.2} |",
                    h.linear_memory_bytes as f64 / h.modules.max(1) as f64 / 1024.0,
                    h.resumes,
                    h.resume_seconds * 1000.0 / h.resumes as f64
                );
            }
        }
        if !plots.is_empty() {
            s.push_str("\n## Plots\n\n");
            for p in plots {
                if let Some(name) = p.file_name() {
                    let name = name.to_string_lossy();
                    let _ = writeln!(s, "![{name}]({name})");
                }
            }
        }
        s.push_str("\n## Method\n\n- One control plane (kube-apiserver v1.20.2 + etcd, loopback) for every variant, in the same run; variants interleaved per N and run, so pair r of two variants ran minutes apart at most.\n- Ring: N controllers, controller i copies the Ring's nonce from namespace i to namespace i+1 (N+1 namespaces; fresh ones per launch). Warm-up cycles first (the first one proves every controller is up), then the settle time, then the idle samples, then the measured cycles one after another.\n- Memory: PSS from `/proc/PID/smaps_rollup`, summed over the native processes; the host is one process.\n- Requests: lines the audit log gained during the launch, less the driver's (its own User-Agent).\n");
        s
    }

    fn plots(&self, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| anyhow::anyhow!("registering the plot font"))?;
        let mut files = Vec::new();
        let series = |f: &dyn Fn(&Cell) -> Option<f64>| -> Vec<Line> {
            self.measured
                .variants
                .iter()
                .map(|&v| {
                    let points = self
                        .measured
                        .ns
                        .iter()
                        .filter_map(|&n| Some((n as f64, f(self.cell(v, n)?)?)))
                        .collect();
                    (v.label().to_string(), points)
                })
                .collect()
        };
        let charts: [(&str, &str, &str, Vec<Line>); 4] = [
            (
                "memory_idle.png",
                "Idle fleet: PSS of all processes",
                "MiB",
                series(&|c| Some(c.idle_pss_kib.as_ref()?.median / MIB)),
            ),
            (
                "memory_load.png",
                "Under load: PSS during the ring cycles",
                "MiB",
                series(&|c| Some(c.load_pss_kib.as_ref()?.median / MIB)),
            ),
            (
                "latency_reconcile.png",
                "Event→reconcile latency, p50 (solid) and p99 (dashed)",
                "ms",
                Vec::new(),
            ),
            (
                "latency_ring.png",
                "Ring latency p50",
                "ms",
                series(&|c| Some(c.ring_p50_ms.as_ref()?.median)),
            ),
        ];
        for (file, title, unit, mut lines) in charts {
            let mut dashed = Vec::new();
            if lines.is_empty() {
                lines = series(&|c| Some(c.reconcile_p50_ms.as_ref()?.median));
                dashed = series(&|c| Some(c.reconcile_p99_ms.as_ref()?.median));
            }
            let path = dir.join(file);
            line_chart(&path, title, "N (controllers)", unit, &lines, &dashed)
                .map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))?;
            files.push(path);
        }
        if !self.measured.resume.is_empty() {
            let curve = |f: &dyn Fn(&ResumePoint) -> Option<f64>| -> Vec<(f64, f64)> {
                self.measured
                    .resume
                    .iter()
                    .filter_map(|p| Some((p.linear_memory_bytes as f64 / MIB_BYTES, f(p)?)))
                    .collect()
            };
            let lines = vec![
                (
                    "resume p50".to_string(),
                    curve(&|p| stats::median(&p.resume_ms)),
                ),
                (
                    "suspend p50".to_string(),
                    curve(&|p| stats::median(&p.suspend_ms)),
                ),
            ];
            let path = dir.join("resume_curve.png");
            line_chart(
                &path,
                "Suspend to / resume from disk vs linear memory",
                "linear memory (MiB)",
                "ms",
                &lines,
                &[],
            )
            .map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))?;
            files.push(path);
        }
        Ok(files)
    }
}

/// One plotted line: its label and its (x, value) points (x: N, or MiB for the resume curve).
type Line = (String, Vec<(f64, f64)>);

const COLOURS: [RGBColor; 4] = [
    RGBColor(200, 30, 30),
    RGBColor(30, 90, 200),
    RGBColor(20, 150, 60),
    RGBColor(150, 60, 170),
];

fn line_chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    unit: &str,
    lines: &[Line],
    dashed: &[Line],
) -> Result<(), Box<dyn std::error::Error>> {
    let all: Vec<(f64, f64)> = lines
        .iter()
        .chain(dashed)
        .flat_map(|(_, p)| p.iter().copied())
        .collect();
    let xs: BTreeSet<u64> = all.iter().map(|p| p.0 as u64).collect();
    let x_max = xs.iter().copied().max().unwrap_or(1).max(1) as f64;
    let y_max = all.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-3) * 1.1;
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..x_max * 1.05, 0f64..y_max)?;
    chart.configure_mesh().x_desc(x_desc).y_desc(unit).draw()?;
    for (i, (label, points)) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                colour.stroke_width(2),
            ))?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
    }
    for (i, (_, points)) in dashed.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart.draw_series(DashedLineSeries::new(
            points.iter().copied(),
            6,
            4,
            colour.stroke_width(1),
        ))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(mib: u64, linear_mib: f64, resume_ms: &[f64]) -> ResumePoint {
        ResumePoint {
            ballast_mib: mib,
            linear_memory_bytes: (linear_mib * MIB_BYTES) as u64,
            snapshot_bytes: (linear_mib * MIB_BYTES / 2.0) as u64,
            suspend_ms: vec![1.0],
            resume_ms: resume_ms.to_vec(),
        }
    }

    fn measured(resume: Vec<ResumePoint>) -> Measured {
        Measured {
            context: Vec::new(),
            variants: vec![Variant::WasmSuspend],
            unavailable: Vec::new(),
            ns: Vec::new(),
            ring: Vec::new(),
            churn: Vec::new(),
            resume,
            statics: None,
        }
    }

    #[test]
    fn resume_goal_is_judged_at_the_smallest_size_of_at_least_2_mb() {
        // 1.2 MiB is below 2 MB, 2.2 MiB is the one to judge, 9.2 MiB is larger.
        let holds = resume_goal(
            &measured(vec![
                point(0, 1.2, &[0.5]),
                point(8, 9.2, &[9.0, 9.5, 10.0]),
                point(1, 2.2, &[1.0, 2.0, 7.0]),
            ]),
            String::new(),
        );
        assert_eq!(holds.holds, Some(true), "{}", holds.measured);
        assert!(
            holds.measured.contains("p50 2.00 ms at 2.20 MiB"),
            "{}",
            holds.measured
        );

        let fails = resume_goal(
            &measured(vec![point(1, 2.2, &[6.0, 5.5, 7.0])]),
            String::new(),
        );
        assert_eq!(fails.holds, Some(false), "{}", fails.measured);

        let unmeasured = resume_goal(&measured(vec![point(0, 1.2, &[0.5])]), String::new());
        assert_eq!(unmeasured.holds, None, "{}", unmeasured.measured);
        let none = resume_goal(&measured(Vec::new()), "not available: x".into());
        assert_eq!(
            (none.holds, none.measured.as_str()),
            (None, "not available: x")
        );
    }
}
