//! The **budget** workload: the smallest memory limit a fleet still runs in, as an edge
//! operator sizes a device. Each variant's fleet runs in a control group of its own
//! ([`crate::cgroup`]: N native processes together, or the one host) under a memory limit,
//! without swap; a limit **holds** when nothing is OOM-killed, every controller reconciles
//! every change (each ring cycle passes through all N controllers within the cycle timeout),
//! and event→reconcile p99 stays within twice the same variant's p99 without a limit (in a
//! fleet of distinct kinds, [`crate::fleet_budget`], each kind's p99 within twice its own).
//! Bisection finds the smallest limit that holds, to [`TOLERANCE`]:
//!
//! 1. one launch in a group without a limit measures the unconstrained p99 and what the
//!    kernel charged (peak, and anonymous/file-backed at idle);
//! 2. the search starts between half the idle anonymous memory (below which nothing can
//!    run: the kernel cannot drop anonymous pages without swap) and 1.25 × the peak (doubled
//!    until it holds);
//! 3. each probe halves the interval geometrically. A probe that failed only by its p99
//!    (no kill, every cycle through) is launched once more and counts as that second launch:
//!    with few cycles the p99 is nearly the slowest event, and one slow event is chance. A
//!    limit at or above the unconstrained peak constrains nothing, so there a slow p99 does
//!    not fail it.
//!
//! Page cache is dropped before every launch (`/proc/sys/vm/drop_caches`), so that the
//! binaries' and compiled modules' pages are charged to the launch that maps them, not to
//! whichever process read them first. The **idle CPU** workload runs the same fleet
//! unconstrained and reports the group's CPU time over a long settle, per hour.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::cgroup::Cgroup;
use crate::fleet::{Setup, Variant};
use crate::stats;
use crate::workloads::{Bench, CgroupFigures, Params, RingRun};

/// The bisection stops when the limit that holds is within this factor of the one that does
/// not (5 %).
pub const TOLERANCE: f64 = 1.05;
/// At most this many probes a budget after the unconstrained launch.
pub const MAX_PROBES: usize = 8;
/// Limits are rounded to this many bytes (1 MiB).
const GRANULE: u64 = 1 << 20;
/// How often a launch under a limit is checked for OOM kills.
const OOM_POLL: Duration = Duration::from_millis(250);
/// A probe's start-up and each of its ring cycles may take this many times as long as the
/// unconstrained launch's (its start-up, its slowest cycle), and at least [`MIN_PROBE_TIMEOUT`]:
/// a fleet that slow is thrashing, far outside the p99 bound, so the probe fails without
/// waiting for the workload's own timeouts.
const PROBE_SLOWDOWN: f64 = 10.0;
/// See [`PROBE_SLOWDOWN`].
const MIN_PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// One probe: a launch under a memory limit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Probe {
    /// The limit, in bytes.
    pub limit: u64,
    /// Whether the fleet ran within it (see the module docs).
    pub held: bool,
    /// Why not, or the p99 it reached.
    pub note: String,
}

/// The budget of one fleet in one variant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Budget {
    /// `ring`, `edge` (the five examples) or `mixed` (every kind of the mixed fleet; both
    /// [`crate::fleet_budget`]).
    pub fleet: String,
    /// How the controllers ran.
    pub variant: Variant,
    /// Controllers.
    pub n: usize,
    /// The launch without a limit.
    pub unconstrained: RingRun,
    /// Its event→reconcile p99, in ms; a probe holds only within twice it.
    pub unconstrained_p99_ms: f64,
    /// Every probe, in order.
    pub probes: Vec<Probe>,
    /// The smallest limit that held, in bytes (`None`: none of those tried).
    pub budget_bytes: Option<u64>,
}

impl Budget {
    /// The budget of `n` controllers as `variant` among `budgets`, if there is one.
    pub fn find(budgets: &[Budget], variant: Variant, n: usize) -> Option<&Budget> {
        budgets.iter().find(|b| b.variant == variant && b.n == n)
    }
}

/// The idle CPU of one fleet in one variant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdleCpu {
    /// How the controllers ran.
    pub variant: Variant,
    /// Controllers.
    pub n: usize,
    /// CPU seconds the fleet's processes used per hour over the whole measured time, the
    /// fleet going idle included (see [`IdleCpu::settled_rate`]). Reports written on
    /// 2026-11-29 before the mean hold the median window here; the windows stand.
    pub cpu_s_per_hour: f64,
    /// Over how long it was measured, in s.
    pub window_s: f64,
    /// The same rate in each of [`crate::workloads::SETTLE_WINDOWS`] equal parts of that time
    /// (empty in reports written before it was measured).
    #[serde(default)]
    pub windows_s_per_hour: Vec<f64>,
}

/// Rounds `bytes` up to the granule.
fn round_up(bytes: f64) -> u64 {
    ((bytes / GRANULE as f64).ceil() as u64).max(1) * GRANULE
}

/// The next limit to probe between `low` (did not hold) and `high` (held): their geometric
/// mean, rounded; `None` once they are within [`TOLERANCE`] or a granule of each other.
pub fn next_limit(low: u64, high: u64) -> Option<u64> {
    if high as f64 <= low as f64 * TOLERANCE || high <= low + GRANULE {
        return None;
    }
    let mid = round_up(((low as f64) * (high as f64)).sqrt());
    (mid > low && mid < high).then_some(mid)
}

/// Drops the kernel's clean page cache (root only; without it a launch may find pages already
/// charged elsewhere, which only makes its budget smaller).
fn drop_page_cache() {
    let _ = std::process::Command::new("sync").status();
    if let Err(err) = std::fs::write("/proc/sys/vm/drop_caches", "1") {
        eprintln!("bench: the page cache was not dropped ({err}); budgets may read low");
    }
}

/// How one launch under a limit went.
#[derive(Debug, Clone, PartialEq)]
enum Attempt {
    /// Within the limit and the latency bound.
    Held(String),
    /// Within the limit, but its p99 above the bound: launched once more.
    Slow(String),
    /// Killed, stalled, or no latency.
    Failed(String),
}

/// A launch's event→reconcile latencies in the groups its p99 is judged by: each kind's in a
/// fleet of distinct kinds (a kind that answers on a timer, such as store-reader's one-second
/// summary, would otherwise set the fleet's p99 and hide the others'), else all of them as one
/// group named `""`.
fn latency_groups(run: &RingRun) -> BTreeMap<&str, &[f64]> {
    if run.reconcile_by_kind_ms.is_empty() {
        BTreeMap::from([("", run.reconcile_ms.as_slice())])
    } else {
        run.reconcile_by_kind_ms
            .iter()
            .map(|(kind, latencies)| (kind.as_str(), latencies.as_slice()))
            .collect()
    }
}

/// Each group's latency bound, in ms: twice its p99 without a limit.
///
/// # Errors
/// If a group measured no latency.
fn latency_bounds(unconstrained: &RingRun) -> anyhow::Result<BTreeMap<String, f64>> {
    latency_groups(unconstrained)
        .into_iter()
        .map(|(kind, latencies)| {
            let p99 = stats::percentile(latencies, 99.0)
                .with_context(|| format!("no event→reconcile latency measured {kind}"))?;
            Ok((kind.to_owned(), 2.0 * p99))
        })
        .collect()
}

/// The group of `run` whose p99 is furthest above its bound (or nearest below it): its
/// kind, p99 and bound in ms; `None` if a group of `bounds` measured nothing in `run`.
fn worst_group(run: &RingRun, bounds: &BTreeMap<String, f64>) -> Option<(String, f64, f64)> {
    let groups = latency_groups(run);
    let mut worst: Option<(String, f64, f64)> = None;
    for (kind, &bound) in bounds {
        let p99 = stats::percentile(groups.get(kind.as_str())?, 99.0)?;
        if worst.as_ref().is_none_or(|w| p99 / bound > w.1 / w.2) {
            worst = Some((kind.clone(), p99, bound));
        }
    }
    worst
}

/// Judges a launch that reached every cycle without a kill by its `worst` latency group (its
/// kind, event→reconcile p99 and bound, in ms). A limit at or above the unconstrained
/// launch's peak (`above_peak`) constrained nothing: a slow p99 there is the run's own
/// variance, and the limit holds.
fn judge_probe(worst: Option<(String, f64, f64)>, above_peak: bool) -> Attempt {
    let Some((kind, p99, bound)) = worst else {
        return Attempt::Failed("no latency measured".to_owned());
    };
    let of = if kind.is_empty() {
        String::new()
    } else {
        format!(" ({kind})")
    };
    if p99 <= bound {
        Attempt::Held(format!("p99 {p99:.1} ms{of}"))
    } else if above_peak {
        Attempt::Held(format!(
            "p99 {p99:.1} ms > {bound:.1} ms{of}, at or above the unconstrained peak"
        ))
    } else {
        Attempt::Slow(format!("p99 {p99:.1} ms > {bound:.1} ms{of}"))
    }
}

/// Runs `launch` in a fresh group `tag` with `limit` (`None`: unlimited), the page cache
/// dropped first; the launch and the group's OOM kills. A kill fails the launch at once: what
/// is left of the fleet would only thrash until its timeouts (dropping the launch's future
/// stops its processes).
pub(crate) async fn in_group(
    tag: &str,
    limit: Option<u64>,
    launch: impl AsyncFnOnce(&Cgroup) -> anyhow::Result<RingRun>,
) -> anyhow::Result<(RingRun, u64)> {
    drop_page_cache();
    let group = Cgroup::create(tag, limit)?;
    let killed = async {
        while group.oom_kills().unwrap_or_default() == 0 {
            tokio::time::sleep(OOM_POLL).await;
        }
    };
    let run = tokio::select! {
        run = launch(&group) => run,
        () = killed => Err(anyhow::anyhow!("the fleet was cut short")),
    };
    let kills = group.oom_kills().unwrap_or_default();
    run.map(|run| (run, kills)).map_err(|err| {
        if kills > 0 {
            err.context(format!("{kills} process(es) OOM-killed"))
        } else {
            err
        }
    })
}

/// Finds the memory budget of the `fleet` of `n` controllers as `variant` (see the module
/// docs): `launch(tag, params, limit)` runs the fleet once in a fresh group and returns the
/// launch (a cycle: one change through every controller) and its OOM kills.
///
/// # Errors
/// If the unconstrained launch fails or measured no latency.
pub(crate) async fn bisect(
    fleet: &str,
    variant: Variant,
    n: usize,
    p: &Params,
    tag: &str,
    launch: impl AsyncFn(&str, &Params, Option<u64>) -> anyhow::Result<(RingRun, u64)>,
) -> anyhow::Result<Budget> {
    let (unconstrained, _) = launch(&format!("{tag}-free"), p, None)
        .await
        .context("the launch without a limit")?;
    let figures = unconstrained
        .cgroup
        .clone()
        .context("the unconstrained launch ran in a group")?;
    let p99 = stats::percentile(&unconstrained.reconcile_ms, 99.0)
        .context("no event→reconcile latency measured")?;
    let bounds = latency_bounds(&unconstrained)?;
    let scaled = |ms: f64| {
        Duration::from_secs_f64(ms.max(0.0) * PROBE_SLOWDOWN / 1000.0).max(MIN_PROBE_TIMEOUT)
    };
    let slowest_cycle = unconstrained.ring_ms.iter().copied().fold(0.0, f64::max);
    let p = &Params {
        startup_timeout: scaled(unconstrained.startup_ms).min(p.startup_timeout),
        cycle_timeout: scaled(slowest_cycle).min(p.cycle_timeout),
        ..p.clone()
    };
    let mut probes = Vec::new();
    let mut probe = async |limit: u64, i: usize| -> bool {
        eprintln!(
            "bench: budget {fleet} {} N={n}: probe {} MiB",
            variant.label(),
            limit / GRANULE
        );
        let attempt = async |again: bool| {
            let tag = format!("{tag}-{i}{}", if again { "r" } else { "" });
            match launch(&tag, p, Some(limit)).await {
                Ok((run, 0)) => judge_probe(worst_group(&run, &bounds), limit >= figures.peak),
                Ok((_, kills)) => Attempt::Failed(format!("{kills} OOM kill(s)")),
                Err(err) => Attempt::Failed(format!("{err:#}")),
            }
        };
        let (held, note) = match attempt(false).await {
            Attempt::Held(note) => (true, note),
            Attempt::Failed(note) => (false, note),
            Attempt::Slow(note) => {
                // A few slow events fail a p99 of few cycles by chance (a resume that read
                // its snapshot from the disk); a limit that is too small fails again.
                match attempt(true).await {
                    Attempt::Held(again) => (true, format!("{note}; again: {again}")),
                    Attempt::Failed(again) | Attempt::Slow(again) => {
                        (false, format!("{note}; again: {again}"))
                    }
                }
            }
        };
        eprintln!("bench:   {}: {note}", if held { "held" } else { "failed" });
        probes.push(Probe { limit, held, note });
        held
    };
    let mut low = round_up(figures.idle.anon as f64 / 2.0);
    let mut high = round_up(figures.peak as f64 * 1.25);
    let mut i = 0;
    let mut held_high = false;
    while i < 3 && !held_high {
        held_high = probe(high, i).await;
        i += 1;
        if !held_high {
            low = high;
            high *= 2;
        }
    }
    if held_high {
        while i < MAX_PROBES
            && let Some(mid) = next_limit(low, high)
        {
            if probe(mid, i).await {
                high = mid;
            } else {
                low = mid;
            }
            i += 1;
        }
    }
    Ok(Budget {
        fleet: fleet.into(),
        variant,
        n,
        unconstrained,
        unconstrained_p99_ms: p99,
        probes,
        budget_bytes: held_high.then_some(high),
    })
}

impl Bench {
    /// One launch of the ring of `n` controllers as `variant` in a fresh group with `limit`
    /// (`None`: unlimited).
    async fn ring_in_group(
        &self,
        setup: &Setup,
        variant: Variant,
        n: usize,
        tag: &str,
        p: &Params,
        limit: Option<u64>,
    ) -> anyhow::Result<(RingRun, u64)> {
        in_group(tag, limit, async |group| {
            self.ring_in(setup, variant, n, 0, tag, p, Some(group))
                .await
        })
        .await
    }

    /// Finds the memory budget of the ring of `n` controllers as `variant` (see the module
    /// docs); `tag` makes its namespaces and groups unique.
    ///
    /// # Errors
    /// If the unconstrained launch fails.
    pub async fn budget(
        &self,
        variant: Variant,
        n: usize,
        p: &Params,
        tag: &str,
    ) -> anyhow::Result<Budget> {
        self.budget_with(&self.setup, variant, n, p, tag).await
    }

    /// [`Bench::budget`] with the binaries and settings of `setup`.
    ///
    /// # Errors
    /// If the unconstrained launch fails.
    pub async fn budget_with(
        &self,
        setup: &Setup,
        variant: Variant,
        n: usize,
        p: &Params,
        tag: &str,
    ) -> anyhow::Result<Budget> {
        bisect("ring", variant, n, p, tag, async |tag, p, limit| {
            self.ring_in_group(setup, variant, n, tag, p, limit).await
        })
        .await
    }

    /// The CPU the ring of `n` idle controllers as `variant` uses, per hour: one launch
    /// without a limit whose settle time is `window`.
    ///
    /// # Errors
    /// If the launch fails.
    pub async fn idle_cpu(
        &self,
        variant: Variant,
        n: usize,
        window: Duration,
        tag: &str,
    ) -> anyhow::Result<IdleCpu> {
        self.idle_cpu_with(&self.setup, variant, n, window, tag)
            .await
    }

    /// [`Bench::idle_cpu`] with the binaries and settings of `setup`.
    ///
    /// # Errors
    /// If the launch fails.
    pub async fn idle_cpu_with(
        &self,
        setup: &Setup,
        variant: Variant,
        n: usize,
        window: Duration,
        tag: &str,
    ) -> anyhow::Result<IdleCpu> {
        let p = Params {
            settle: window,
            cycles: 1,
            ..self.params.clone()
        };
        let (run, _) = self.ring_in_group(setup, variant, n, tag, &p, None).await?;
        let figures = run.cgroup.context("the launch ran in a group")?;
        let (cpu_s_per_hour, windows_s_per_hour) = idle_rates(&figures);
        Ok(IdleCpu {
            variant,
            n,
            cpu_s_per_hour,
            window_s: figures.settle_ms as f64 / 1000.0,
            windows_s_per_hour,
        })
    }
}

/// The windows of an idle time after the first, which holds the fleet going idle (a
/// suspended fleet's suspends).
fn settled(windows: &[f64]) -> &[f64] {
    windows.get(1..).unwrap_or_default()
}

impl IdleCpu {
    /// CPU seconds per hour once the fleet is idle: the mean of the windows after the first
    /// (periodic work — watch bookmarks, renewals — comes in bursts, so the mean, not the
    /// median); the whole time's without windows.
    pub fn settled_rate(&self) -> f64 {
        stats::mean_and_variance_of_mean(settled(&self.windows_s_per_hour))
            .map_or(self.cpu_s_per_hour, |(mean, _)| mean)
    }

    /// CPU seconds per hour over the whole measured time: the mean of its equal windows
    /// (whatever `cpu_s_per_hour` was written as), or `cpu_s_per_hour` without windows.
    pub fn whole_rate(&self) -> f64 {
        stats::mean_and_variance_of_mean(&self.windows_s_per_hour)
            .map_or(self.cpu_s_per_hour, |(mean, _)| mean)
    }
}

/// The idle CPU of a launch's settle time, in CPU s per hour: over the whole time, and in
/// each window.
fn idle_rates(figures: &CgroupFigures) -> (f64, Vec<f64>) {
    let secs = figures.settle_ms as f64 / 1000.0;
    let per_hour = |ns: u64, secs: f64| ns as f64 / 1e9 / secs * 3600.0;
    let windows = figures.settle_cpu_windows_ns.len().max(1) as f64;
    let rates: Vec<f64> = figures
        .settle_cpu_windows_ns
        .iter()
        .map(|&ns| per_hour(ns, secs / windows))
        .collect();
    (per_hour(figures.settle_cpu_ns, secs), rates)
}

/// A memory lever judged again under the budget (issue #44): on in the host by default,
/// each one off in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetLever {
    /// `releaseIdleCode`, judged on 2026-11-29 (the host released the compiled code of
    /// modules no instance ran, and its own, every 2 s, and with it idle modules' stacks):
    /// removed, the code release with it; kept here so that reports that judged it read back.
    #[value(skip)]
    ReleaseIdleCode,
    /// `releaseIdleStacks`: the host releases an idle module's fiber stack and the dead pages
    /// of its shadow stack after 2 s.
    ReleaseIdleStacks,
    /// `funcRefProfile`: a module's func refs ordered by its first run's profile.
    FuncRefProfile,
    /// `suspendUnderPressure`: while the host's memory cgroup is nearly at its limit, idle
    /// modules are suspended at once (judged with suspension, the wasm-suspend variant).
    SuspendUnderPressure,
    /// `host-shim/hot-text.order`, judged on 2026-11-29 (the host's hot functions linked
    /// together): removed; kept here so that reports that judged it read back.
    #[value(skip)]
    HotText,
    /// `-no-pie`, judged on 2026-11-29 (the host linked position-dependent): removed; kept
    /// here so that reports that judged it read back.
    #[value(skip)]
    PositionDependent,
}

impl BudgetLever {
    /// Every lever, in report order.
    pub const ALL: [BudgetLever; 3] = [
        BudgetLever::ReleaseIdleStacks,
        BudgetLever::FuncRefProfile,
        BudgetLever::SuspendUnderPressure,
    ];

    /// The variant it is judged in: the one whose fleet it can change.
    pub fn variant(self) -> Variant {
        match self {
            BudgetLever::SuspendUnderPressure => Variant::WasmSuspend,
            _ => Variant::Wasm,
        }
    }

    /// Its name in the report.
    pub fn label(self) -> &'static str {
        match self {
            BudgetLever::ReleaseIdleCode => "releaseIdleCode (removed)",
            BudgetLever::ReleaseIdleStacks => "releaseIdleStacks",
            BudgetLever::FuncRefProfile => "funcRefProfile",
            BudgetLever::SuspendUnderPressure => "suspendUnderPressure",
            BudgetLever::HotText => "hot-text order (removed)",
            BudgetLever::PositionDependent => "position-dependent link (-no-pie, removed)",
        }
    }

    /// `setup` with the lever off (a host setting); `None` for a lever that was removed.
    pub fn off(self, setup: &Setup) -> Option<Setup> {
        let mut off = setup.clone();
        match self {
            BudgetLever::ReleaseIdleStacks => off.release_idle_stacks = false,
            BudgetLever::FuncRefProfile => off.func_ref_profile = false,
            BudgetLever::SuspendUnderPressure => off.suspend_under_pressure = false,
            BudgetLever::ReleaseIdleCode
            | BudgetLever::HotText
            | BudgetLever::PositionDependent => return None,
        }
        Some(off)
    }
}

/// One lever off against every lever on, under the budget, at one N.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LeverJudgement {
    /// The lever.
    pub lever: BudgetLever,
    /// How the controllers ran.
    pub variant: Variant,
    /// Controllers.
    pub n: usize,
    /// The budget with the lever off.
    pub off: Budget,
    /// The idle CPU with the lever off.
    pub off_cpu: IdleCpu,
}

/// A lever stays when turning it off moves the budget or the idle CPU by at least this
/// much (2 %).
pub const LEVER_PAYS: f64 = 0.02;

/// Fewer idle-CPU windows than this per launch cannot tell a lever from noise.
pub const MIN_CPU_WINDOWS: usize = 3;

/// The first measured cycle's event→reconcile latency of a launch (the event after the idle
/// settle time, when released code must come back), in ms.
pub fn next_event_ms(run: &RingRun) -> Option<f64> {
    run.reconcile_ms.first().copied()
}

/// What one state of a lever measured: its budget and idle CPU.
#[derive(Debug, Clone, Copy)]
pub struct LeverState<'a> {
    /// The budget bisection.
    pub budget: &'a Budget,
    /// The idle-CPU launch.
    pub cpu: &'a IdleCpu,
}

/// Whether a lever pays, and by what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeverVerdict {
    /// Without it the fleet needs more memory: a limit at least [`LEVER_PAYS`] above the
    /// budget with it failed without it (or no limit held without it).
    PaysInBudget,
    /// Without it the idle fleet uses more CPU: the mean of its windows (the first, the fleet
    /// going idle, left out) at least [`LEVER_PAYS`] higher, and by more than twice the
    /// standard error of that difference.
    PaysInCpu,
    /// Without it the fleet needed more memory, but by less than one bisection step could
    /// tell from 2 %, and the idle CPU does not pay: a closer look decides.
    WithinResolution,
    /// Neither: remove it.
    DoesNotPay,
    /// The budget does not move and the idle CPU has too few windows to tell.
    Undetermined,
    /// The budget with the lever on was not found.
    NoBaseline,
}

impl LeverVerdict {
    /// Its text in the report.
    pub fn label(self) -> &'static str {
        match self {
            LeverVerdict::PaysInBudget => "pays (budget): stays",
            LeverVerdict::PaysInCpu => "pays (idle CPU): stays",
            LeverVerdict::WithinResolution => {
                "budget higher without it, within one bisection step; idle CPU does not pay"
            }
            LeverVerdict::DoesNotPay => "does not pay: remove",
            LeverVerdict::Undetermined => "budget unmoved; idle CPU not resolved (too few windows)",
            LeverVerdict::NoBaseline => "no budget with every lever on",
        }
    }
}

/// Judges a lever from its `on` and `off` states. A figure counts only where it is resolved:
/// the budget by a probe (a limit that failed without the lever, 2 % above the limit that held
/// with it, not the bisection's end points, which are 5 % apart), the idle CPU by the mean of
/// its windows against twice the standard error of the difference.
pub fn lever_pays(on: LeverState<'_>, off: LeverState<'_>) -> LeverVerdict {
    let Some(on_bytes) = on.budget.budget_bytes else {
        return LeverVerdict::NoBaseline;
    };
    let needs_more = off.budget.budget_bytes.is_none()
        || off
            .budget
            .probes
            .iter()
            .any(|p| !p.held && p.limit as f64 >= on_bytes as f64 * (1.0 + LEVER_PAYS));
    if needs_more {
        return LeverVerdict::PaysInBudget;
    }
    let (on_w, off_w) = (
        settled(&on.cpu.windows_s_per_hour),
        settled(&off.cpu.windows_s_per_hour),
    );
    if on_w.len() < MIN_CPU_WINDOWS || off_w.len() < MIN_CPU_WINDOWS {
        return LeverVerdict::Undetermined;
    }
    let (Some((on_mean, on_var)), Some((off_mean, off_var))) = (
        stats::mean_and_variance_of_mean(on_w),
        stats::mean_and_variance_of_mean(off_w),
    ) else {
        return LeverVerdict::Undetermined;
    };
    let more = off_mean - on_mean;
    if more >= on_mean * LEVER_PAYS && more > 2.0 * (on_var + off_var).sqrt() {
        LeverVerdict::PaysInCpu
    } else if off
        .budget
        .budget_bytes
        .is_some_and(|off_bytes| off_bytes > on_bytes)
    {
        LeverVerdict::WithinResolution
    } else {
        LeverVerdict::DoesNotPay
    }
}

impl Bench {
    /// Measures `lever` off (`setup_off`) by budget and idle CPU for `variant` at `n`.
    ///
    /// # Errors
    /// If a launch without a limit fails.
    #[expect(clippy::too_many_arguments, reason = "one judgement's every choice")]
    pub async fn judge_lever(
        &self,
        lever: BudgetLever,
        setup_off: &Setup,
        variant: Variant,
        n: usize,
        p: &Params,
        window: Duration,
        tag: &str,
    ) -> anyhow::Result<LeverJudgement> {
        let off = self
            .budget_with(setup_off, variant, n, p, &format!("{tag}-b"))
            .await?;
        let off_cpu = self
            .idle_cpu_with(setup_off, variant, n, window, &format!("{tag}-c"))
            .await?;
        Ok(LeverJudgement {
            lever,
            variant,
            n,
            off,
            off_cpu,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_p99_fails_a_probe_only_below_the_unconstrained_peak() {
        let group = |p99: f64| Some((String::new(), p99, 8.0));
        assert!(matches!(judge_probe(group(5.0), false), Attempt::Held(_)));
        assert!(matches!(judge_probe(group(20.0), false), Attempt::Slow(_)));
        assert!(matches!(judge_probe(group(20.0), true), Attempt::Held(_)));
        assert!(matches!(judge_probe(None, true), Attempt::Failed(_)));
    }

    fn run_with(kinds: &[(&str, &[f64])]) -> RingRun {
        let mut run = RingRun::empty(Variant::Wasm, kinds.len());
        for (kind, latencies) in kinds {
            run.reconcile_ms.extend_from_slice(latencies);
            if !kind.is_empty() {
                run.reconcile_by_kind_ms
                    .insert((*kind).to_owned(), latencies.to_vec());
            }
        }
        run
    }

    #[test]
    fn each_kind_is_held_to_twice_its_own_unconstrained_p99() {
        let free = run_with(&[("mirror", &[4.0, 5.0]), ("store", &[900.0, 990.0])]);
        let bounds = latency_bounds(&free).unwrap();
        assert_eq!(bounds.len(), 2);
        // The mirror at 40 ms is far above its own 10 ms bound though under the store's.
        let probe = run_with(&[("mirror", &[40.0, 5.0]), ("store", &[950.0, 990.0])]);
        let worst = worst_group(&probe, &bounds).unwrap();
        assert_eq!(worst.0, "mirror");
        assert!(
            matches!(judge_probe(Some(worst), false), Attempt::Slow(note) if note.contains("(mirror)"))
        );
        let calm = run_with(&[("mirror", &[6.0, 5.0]), ("store", &[950.0, 1500.0])]);
        assert!(matches!(
            judge_probe(worst_group(&calm, &bounds), false),
            Attempt::Held(_)
        ));
        let silent = run_with(&[("mirror", &[6.0])]);
        assert_eq!(
            worst_group(&silent, &bounds),
            None,
            "the store answered nothing"
        );
        // A ring's latencies are one group.
        let ring = run_with(&[("", &[3.0, 4.0])]);
        assert_eq!(
            latency_bounds(&ring).unwrap().keys().collect::<Vec<_>>(),
            vec![""]
        );
    }

    #[test]
    fn bisection_halves_geometrically_to_the_tolerance() {
        let mib = |n: u64| n * GRANULE;
        assert_eq!(next_limit(mib(100), mib(400)), Some(mib(200)));
        assert_eq!(next_limit(mib(100), mib(104)), None, "within 5 %");
        assert_eq!(next_limit(mib(1), mib(2)), None, "a granule apart");
        let mid = next_limit(mib(100), mib(110)).expect("10 % apart");
        assert!(mid > mib(100) && mid < mib(110));
        assert_eq!(mid % GRANULE, 0);
    }

    fn state(budget_mib: Option<u64>, failed_mib: &[u64], windows: &[f64]) -> (Budget, IdleCpu) {
        let mib = |n: u64| n * GRANULE;
        let mut probes: Vec<Probe> = failed_mib
            .iter()
            .map(|&f| Probe {
                limit: mib(f),
                held: false,
                note: String::new(),
            })
            .collect();
        if let Some(b) = budget_mib {
            probes.push(Probe {
                limit: mib(b),
                held: true,
                note: String::new(),
            });
        }
        let budget = Budget {
            fleet: "ring".into(),
            variant: Variant::Wasm,
            n: 100,
            unconstrained: RingRun::empty(Variant::Wasm, 100),
            unconstrained_p99_ms: 5.0,
            probes,
            budget_bytes: budget_mib.map(mib),
        };
        let cpu = IdleCpu {
            variant: Variant::Wasm,
            n: 100,
            cpu_s_per_hour: windows.iter().sum::<f64>() / windows.len().max(1) as f64,
            window_s: 60.0,
            windows_s_per_hour: windows.to_vec(),
        };
        (budget, cpu)
    }

    fn judge(on: &(Budget, IdleCpu), off: &(Budget, IdleCpu)) -> LeverVerdict {
        lever_pays(
            LeverState {
                budget: &on.0,
                cpu: &on.1,
            },
            LeverState {
                budget: &off.0,
                cpu: &off.1,
            },
        )
    }

    #[test]
    fn the_settled_idle_cpu_is_the_mean_after_the_first_window() {
        let figures = CgroupFigures {
            limit: None,
            idle: crate::cgroup::Charged::default(),
            peak: 0,
            oom_kills: 0,
            // 60 s in six windows: the suspends of the first, then periodic bursts.
            settle_cpu_windows_ns: vec![500_000_000, 0, 20_000_000, 0, 30_000_000, 0],
            settle_cpu_ns: 550_000_000,
            settle_ms: 60_000,
        };
        let (whole, windows) = idle_rates(&figures);
        assert!((whole - 33.0).abs() < 1e-9, "550 ms in 60 s: {whole}");
        assert_eq!(windows.len(), 6);
        assert!((windows[0] - 180.0).abs() < 1e-9);
        let cpu = IdleCpu {
            variant: Variant::Native,
            n: 100,
            cpu_s_per_hour: whole,
            window_s: 60.0,
            windows_s_per_hour: windows,
        };
        // 50 ms in the last 50 s: 3.6 s per hour, though most windows are idle.
        assert!(
            (cpu.settled_rate() - 3.6).abs() < 1e-9,
            "{}",
            cpu.settled_rate()
        );
        let without = IdleCpu {
            windows_s_per_hour: Vec::new(),
            ..cpu
        };
        assert!((without.settled_rate() - 33.0).abs() < 1e-9);
    }

    #[test]
    fn a_lever_pays_only_by_what_its_off_state_resolves() {
        let calm = [2.0, 2.1, 1.9, 2.0, 2.2, 2.0];
        let on = state(Some(100), &[95], &calm);
        let failed_above = state(Some(104), &[103], &calm);
        assert_eq!(judge(&on, &failed_above), LeverVerdict::PaysInBudget);
        let one_step = state(Some(102), &[101], &calm);
        assert_eq!(
            judge(&on, &one_step),
            LeverVerdict::WithinResolution,
            "101 MiB failed: within 2 % of the 100 that held"
        );
        let same = state(Some(100), &[99], &calm);
        assert_eq!(judge(&on, &same), LeverVerdict::DoesNotPay);
        let none_held = state(None, &[200, 400], &calm);
        assert_eq!(judge(&on, &none_held), LeverVerdict::PaysInBudget);
        let busier = state(Some(100), &[95], &[2.6, 2.5, 2.7, 2.4, 2.6, 2.5]);
        assert_eq!(judge(&on, &busier), LeverVerdict::PaysInCpu);
        let going_idle = state(Some(100), &[95], &[9.0, 2.1, 1.9, 2.0, 2.2, 2.0]);
        assert_eq!(
            judge(&going_idle, &busier),
            LeverVerdict::PaysInCpu,
            "the first window (the fleet going idle) is left out"
        );
        let noisy = state(Some(100), &[95], &[2.6, 0.0, 5.6, 0.0, 6.2, 0.0]);
        assert_eq!(
            judge(&on, &noisy),
            LeverVerdict::DoesNotPay,
            "a higher mean within twice its standard error"
        );
        let one_window = state(Some(100), &[95], &[9.0]);
        assert_eq!(judge(&on, &one_window), LeverVerdict::Undetermined);
        let no_baseline = state(None, &[95], &calm);
        assert_eq!(judge(&no_baseline, &on), LeverVerdict::NoBaseline);
    }
}
