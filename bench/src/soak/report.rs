//! The soak's verdict: the figures of a run and its four checks — nothing lost (every change
//! reconciled, every mirror equal to its source at the end), host memory bounded (no growth
//! trend within any host incarnation), no healthy module stalled longer than the bound (API
//! server downtime left out), and the host never exited by itself — rendered as a short text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::chaos::Event;
use super::downtime::Downtime;
use super::host::mirror_name;
use super::ledger::Outcome;
use super::sampler::HostLog;
use super::trend::{self, Tolerance, Trend};
use crate::stats;

/// What a run measured: the report's input.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Lines describing the run's parameters.
    pub parameters: Vec<String>,
    /// Healthy modules (configmap-mirror, each in its own namespace).
    pub modules: usize,
    /// How long the traffic and the chaos ran, in seconds.
    pub duration_secs: f64,
    /// Every change with when it was reconciled (the sources' creation included: sequence
    /// number 0).
    pub outcomes: Vec<Outcome>,
    /// Seconds from the host's first start until every source was mirrored.
    pub startup_secs: Option<f64>,
    /// Seconds from the end of the traffic until every last change was reconciled; `None`:
    /// not within the timeout.
    pub converge_secs: Option<f64>,
    /// When the run's measurements end (run seconds): changes not reconciled by then are lost.
    pub end: f64,
    /// Sources whose mirror differs from the source in a final listing (one line each).
    pub mismatches: Vec<String>,
    /// Sources in all.
    pub sources: usize,
    /// The disruptions.
    pub events: Vec<Event>,
    /// When the API server was down.
    pub downtime: Downtime,
    /// The host's memory, exits and restart counters.
    pub host: HostLog,
    /// Names of the hostile modules (`hostile-<i>`) with their spec.
    pub hostile: Vec<(String, String)>,
    /// Write attempts the API server did not answer.
    pub failed_writes: u64,
    /// Lists and watches of the driver that failed.
    pub watch_errors: u64,
    /// The stall bound, in seconds.
    pub stall_bound: f64,
    /// The memory trend's warm-up per incarnation, in seconds.
    pub warmup: f64,
    /// The memory trend's tolerance.
    pub tolerance: Tolerance,
}

/// One check and whether it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What is checked.
    pub name: String,
    /// The figure it rests on.
    pub figure: String,
    /// Whether it holds.
    pub holds: bool,
}

/// A run's figures and checks as `report.json` holds them, for the benchmark's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Healthy modules.
    pub modules: usize,
    /// How long the traffic and the chaos ran, in seconds.
    pub duration_secs: f64,
    /// The run's parameters, one line each (as the text report's head).
    pub parameters: Vec<String>,
    /// Changes made after the sources were created.
    pub changes: usize,
    /// Changes (the sources' creation included) never reconciled.
    pub lost: usize,
    /// Event→reconcile latency of the traffic's changes, p50 and p99, in seconds.
    pub latency_p50_secs: Option<f64>,
    /// The same, p99.
    pub latency_p99_secs: Option<f64>,
    /// Disruptions carried out or tried.
    pub disruptions: usize,
    /// Seconds the API server was down.
    pub downtime_secs: f64,
    /// The host's PSS per incarnation: `(incarnation, trend)`; `None`: too few samples.
    pub memory: Vec<(usize, Option<Trend>)>,
    /// Restarts of healthy modules by the host, summed over incarnations.
    pub healthy_restarts: u64,
    /// The checks, in report order.
    pub checks: Vec<Check>,
    /// Whether every check holds.
    pub passed: bool,
}

impl Summary {
    /// The summary a soak wrote to `path` (its `report.json`).
    ///
    /// # Errors
    /// If the file cannot be read or holds no summary.
    pub fn read(path: &std::path::Path) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let text = std::fs::read(path)
            .with_context(|| format!("reading the soak report {}", path.display()))?;
        serde_json::from_slice(&text)
            .with_context(|| format!("parsing the soak report {}", path.display()))
    }
}

/// The figures and checks of a run.
#[derive(Debug, Clone)]
pub struct Report {
    measured: Measured,
    /// The checks, in report order.
    pub checks: Vec<Check>,
}

/// Seconds as the report writes them: `250 ms` under a second, else `1.5 s`.
pub(crate) fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else {
        format!("{s:.1} s")
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

impl Report {
    /// Judges `measured`.
    pub fn new(measured: Measured) -> Self {
        let mut report = Self {
            measured,
            checks: Vec::new(),
        };
        report.checks = vec![
            report.nothing_lost(),
            report.memory_bounded(),
            report.no_stall(),
            report.host_stayed_up(),
            report.chaos_done(),
        ];
        report
    }

    /// Whether every check holds.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.holds)
    }

    /// Changes made after the sources were created.
    fn traffic(&self) -> impl Iterator<Item = &Outcome> {
        self.measured.outcomes.iter().filter(|o| o.change.seq > 0)
    }

    fn lost(&self) -> usize {
        self.measured
            .outcomes
            .iter()
            .filter(|o| o.reconciled_at.is_none())
            .count()
    }

    fn nothing_lost(&self) -> Check {
        let m = &self.measured;
        let lost = self.lost();
        Check {
            name: "nothing lost".into(),
            figure: format!(
                "{} of {} changes reconciled, {lost} lost; {} of {} mirrors equal to their source at the end",
                m.outcomes.len() - lost,
                m.outcomes.len(),
                m.sources - m.mismatches.len(),
                m.sources
            ),
            holds: lost == 0 && m.mismatches.is_empty() && !m.outcomes.is_empty(),
        }
    }

    /// The memory verdict of each incarnation: `(incarnation, samples, trend)`.
    pub fn trends(&self) -> Vec<(usize, usize, Option<Trend>)> {
        let mut by: BTreeMap<usize, Vec<(f64, u64)>> = BTreeMap::new();
        for s in &self.measured.host.samples {
            by.entry(s.incarnation)
                .or_default()
                .push((s.since_start, s.pss_kib));
        }
        by.into_iter()
            .map(|(i, samples)| {
                let judged = trend::judge(&samples, self.measured.warmup, self.measured.tolerance);
                (i, samples.len(), judged)
            })
            .collect()
    }

    fn memory_bounded(&self) -> Check {
        let trends = self.trends();
        let judged: Vec<&Trend> = trends.iter().filter_map(|t| t.2.as_ref()).collect();
        let worst = judged
            .iter()
            .max_by(|a, b| a.growth_percent.total_cmp(&b.growth_percent));
        let t = self.measured.tolerance;
        Check {
            name: "host memory bounded".into(),
            figure: match worst {
                Some(w) => format!(
                    "largest growth {:+.1} % ({:+} KiB, {} → {} PSS, median of the last third vs the first) in {} judged incarnation(s); tolerance {} % or {} KiB",
                    w.growth_percent,
                    w.growth_kib,
                    mib(w.first_kib),
                    mib(w.last_kib),
                    judged.len(),
                    t.percent,
                    t.floor_kib
                ),
                None => format!(
                    "no incarnation had {} samples after the warm-up",
                    trend::MIN_SAMPLES
                ),
            },
            holds: !judged.is_empty() && judged.iter().all(|t| t.bounded),
        }
    }

    /// The longest stall of each healthy module (seconds), by module index.
    pub fn stalls(&self) -> BTreeMap<usize, f64> {
        let mut worst: BTreeMap<usize, f64> = BTreeMap::new();
        for o in self.traffic() {
            let stall = o.stall(&self.measured.downtime, self.measured.end);
            let w = worst.entry(o.change.source.module).or_default();
            *w = w.max(stall);
        }
        worst
    }

    fn no_stall(&self) -> Check {
        let stalls = self.stalls();
        let worst = stalls
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(m, s)| (*m, *s));
        let bound = self.measured.stall_bound;
        Check {
            name: "no healthy module stalled".into(),
            figure: match worst {
                Some((module, stall)) => format!(
                    "longest wait of a change {} ({}), API server downtime left out; bound {}",
                    secs(stall),
                    mirror_name(module),
                    secs(bound)
                ),
                None => "no changes after the start".into(),
            },
            holds: worst.is_some_and(|(_, s)| s <= bound),
        }
    }

    fn host_stayed_up(&self) -> Check {
        let exits = &self.measured.host.unexpected_exits;
        Check {
            name: "host never exited by itself".into(),
            figure: match exits.first() {
                Some((at, status)) => {
                    format!("{} exit(s), first at {at:.1} s: {status}", exits.len())
                }
                None => "0 exits besides the chaos's kills".into(),
            },
            holds: exits.is_empty(),
        }
    }

    fn chaos_done(&self) -> Check {
        let failed: Vec<&Event> = self
            .measured
            .events
            .iter()
            .filter(|e| e.error.is_some())
            .collect();
        Check {
            name: "every disruption carried out".into(),
            figure: match failed.first() {
                Some(e) => format!(
                    "{} of {} failed, first {} at {:.1} s: {}",
                    failed.len(),
                    self.measured.events.len(),
                    e.kind,
                    e.at,
                    e.error.as_deref().unwrap_or_default()
                ),
                None => format!(
                    "{} of {}",
                    self.measured.events.len(),
                    self.measured.events.len()
                ),
            },
            holds: failed.is_empty(),
        }
    }

    /// Latencies of the traffic's changes that were reconciled, in seconds.
    fn latencies(&self) -> Vec<f64> {
        self.traffic().filter_map(Outcome::latency).collect()
    }

    /// Restarts of healthy modules (`(healthy, by hostile spec)`), summed over incarnations.
    fn restarts(&self) -> (u64, BTreeMap<&str, u64>) {
        let m = &self.measured;
        let mut healthy = 0;
        let mut hostile: BTreeMap<&str, u64> = BTreeMap::new();
        for counters in m.host.restarts.values() {
            for (module, n) in counters {
                match m.hostile.iter().find(|(name, _)| name == module) {
                    Some((_, spec)) => *hostile.entry(spec).or_default() += n,
                    None => healthy += n,
                }
            }
        }
        (healthy, hostile)
    }

    /// The figures and checks for `report.json`.
    pub fn summary(&self) -> Summary {
        let m = &self.measured;
        let latencies = self.latencies();
        Summary {
            modules: m.modules,
            duration_secs: m.duration_secs,
            parameters: m.parameters.clone(),
            changes: self.traffic().count(),
            lost: self.lost(),
            latency_p50_secs: stats::percentile(&latencies, 50.0),
            latency_p99_secs: stats::percentile(&latencies, 99.0),
            disruptions: m.events.len(),
            downtime_secs: m.downtime.total(),
            memory: self
                .trends()
                .into_iter()
                .map(|(incarnation, _, trend)| (incarnation, trend))
                .collect(),
            healthy_restarts: self.restarts().0,
            checks: self.checks.clone(),
            passed: self.passed(),
        }
    }

    /// The report as text.
    pub fn text(&self) -> String {
        let m = &self.measured;
        let mut t = String::from("kube-wasm soak\n");
        for line in &m.parameters {
            let _ = writeln!(t, "  {line}");
        }

        let _ = writeln!(
            t,
            "\nchaos ({} events; API server down {} in all, left out of stalls):",
            m.events.len(),
            secs(m.downtime.total())
        );
        for e in &m.events {
            let _ = writeln!(
                t,
                "  {:>7.1} s  {:<9}  took {:>8}  {}",
                e.at,
                e.kind.label(),
                secs(e.took),
                e.error
                    .as_deref()
                    .map_or(e.detail.clone(), |err| format!("FAILED: {err}"))
            );
        }

        let latencies = self.latencies();
        let pct = |p: f64| stats::percentile(&latencies, p).map_or("-".into(), secs);
        let _ = writeln!(t, "\nchanges:");
        let _ = writeln!(
            t,
            "  startup: every source mirrored {} after the host started",
            m.startup_secs.map_or("never".into(), secs)
        );
        let _ = writeln!(
            t,
            "  traffic: {} changes, reconcile latency p50 {}, p99 {}, max {}",
            self.traffic().count(),
            pct(50.0),
            pct(99.0),
            pct(100.0)
        );
        let _ = writeln!(
            t,
            "  after the traffic stopped: every last change reconciled {}",
            m.converge_secs
                .map_or("never (timed out)".into(), |s| format!(
                    "within {}",
                    secs(s)
                ))
        );
        for line in m.mismatches.iter().take(10) {
            let _ = writeln!(t, "  mismatch: {line}");
        }
        let mut stalls: Vec<(usize, f64)> = self.stalls().into_iter().collect();
        stalls.sort_by(|a, b| b.1.total_cmp(&a.1));
        let worst: Vec<String> = stalls
            .iter()
            .take(3)
            .map(|(module, s)| format!("{} {}", mirror_name(*module), secs(*s)))
            .collect();
        let _ = writeln!(t, "  longest stalls: {}", worst.join(", "));
        let _ = writeln!(
            t,
            "  driver: {} unanswered write attempts (retried), {} failed lists/watches (retried)",
            m.failed_writes, m.watch_errors
        );

        let _ = writeln!(
            t,
            "\nhost memory (PSS; trend after {} warm-up per incarnation: median of the last third vs the first):",
            secs(m.warmup)
        );
        for (incarnation, samples, trend) in self.trends() {
            let line = match trend {
                Some(tr) => format!(
                    "{} → {} ({:+.1} %, slope {:+.0} KiB/min, peak {}) over {} samples{}",
                    mib(tr.first_kib),
                    mib(tr.last_kib),
                    tr.growth_percent,
                    tr.slope_kib_per_min,
                    mib(tr.peak_kib),
                    tr.samples,
                    if tr.bounded { "" } else { " — GROWS" }
                ),
                None => format!("{samples} samples: too few after the warm-up to judge"),
            };
            let _ = writeln!(t, "  incarnation {incarnation}: {line}");
        }
        let (healthy, hostile) = self.restarts();
        let hostile: Vec<String> = hostile.iter().map(|(s, n)| format!("{s} {n}")).collect();
        let _ = writeln!(
            t,
            "  module restarts by the host (summed over incarnations): healthy {healthy}; hostile {}",
            if hostile.is_empty() {
                "none".into()
            } else {
                hostile.join(", ")
            }
        );

        let _ = writeln!(t, "\nchecks:");
        for c in &self.checks {
            let _ = writeln!(
                t,
                "  [{}] {}: {}",
                if c.holds { "ok" } else { "FAIL" },
                c.name,
                c.figure
            );
        }
        let _ = writeln!(
            t,
            "\nresult: {}",
            if self.passed() { "PASS" } else { "FAIL" }
        );
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soak::ledger::{Change, ChangeKind, SourceId};
    use crate::soak::sampler::MemorySample;

    fn outcome(module: usize, seq: u64, sent: f64, reconciled_at: Option<f64>) -> Outcome {
        Outcome {
            change: Change {
                source: SourceId { module, index: 0 },
                seq,
                kind: ChangeKind::Put,
                first_try: sent,
                sent,
            },
            reconciled_at,
        }
    }

    fn measured() -> Measured {
        let samples = (0..30)
            .map(|i| MemorySample {
                incarnation: 1,
                at: f64::from(i) * 2.0,
                since_start: f64::from(i) * 2.0,
                pss_kib: 50_000,
                rss_kib: 60_000,
            })
            .collect();
        Measured {
            outcomes: vec![
                outcome(0, 0, 0.0, Some(3.0)),
                outcome(0, 1, 10.0, Some(10.25)),
                outcome(1, 2, 20.0, Some(35.0)),
            ],
            end: 100.0,
            sources: 2,
            host: HostLog {
                samples,
                ..HostLog::default()
            },
            stall_bound: 30.0,
            warmup: 10.0,
            tolerance: Tolerance {
                percent: 10.0,
                floor_kib: 1024,
            },
            ..Measured::default()
        }
    }

    fn holds(report: &Report) -> Vec<bool> {
        report.checks.iter().map(|c| c.holds).collect()
    }

    #[test]
    fn a_clean_run_passes() {
        let r = Report::new(measured());
        assert_eq!(holds(&r), [true; 5], "{}", r.text());
        assert!(r.passed());
        assert_eq!(r.stalls(), [(0, 0.25), (1, 15.0)].into());
        assert!(r.text().contains("result: PASS"));
    }

    #[test]
    fn a_lost_change_a_long_stall_and_growth_fail() {
        let mut m = measured();
        m.outcomes.push(outcome(0, 3, 50.0, None));
        let r = Report::new(m.clone());
        // Lost, and waiting since 50 s to the end at 100 s: a 50 s stall.
        assert_eq!(holds(&r), [false, true, false, true, true]);
        assert_eq!(r.stalls()[&0], 50.0);
        assert!(r.text().contains("result: FAIL"));
        // The API server down 60..90 s: the stall is 20 s, within the bound; still lost.
        m.downtime.add(60.0, 90.0);
        assert_eq!(
            holds(&Report::new(m.clone())),
            [false, true, true, true, true]
        );
        // Memory climbing 1 MiB a sample.
        m.outcomes.pop();
        for (i, s) in m.host.samples.iter_mut().enumerate() {
            s.pss_kib += i as u64 * 1024;
        }
        assert_eq!(holds(&Report::new(m)), [true, false, true, true, true]);
    }

    #[test]
    fn the_summary_holds_the_figures_and_round_trips_through_json() {
        let mut m = measured();
        m.modules = 2;
        m.duration_secs = 90.0;
        m.outcomes.push(outcome(0, 3, 50.0, None));
        let r = Report::new(m);
        let summary = r.summary();
        assert_eq!((summary.modules, summary.duration_secs), (2, 90.0));
        // Three changes after the sources' creation, one never reconciled.
        assert_eq!((summary.changes, summary.lost), (3, 1));
        // Nearest rank over the two reconciled: 0.25 s and 15 s.
        assert_eq!(
            (summary.latency_p50_secs, summary.latency_p99_secs),
            (Some(0.25), Some(15.0))
        );
        assert_eq!(summary.memory.len(), 1);
        assert!(summary.memory[0].1.as_ref().is_some_and(|t| t.bounded));
        assert_eq!(summary.checks, r.checks);
        assert!(!summary.passed);
        let json = serde_json::to_string(&summary).expect("serialises");
        assert_eq!(
            serde_json::from_str::<Summary>(&json).expect("deserialises"),
            summary
        );
    }
}
