//! The host's Prometheus metrics (served by [`crate::fleet::metrics_server`]), kept with the
//! `prometheus-client` crate. Every series of a module carries a `module` label.
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `kube_wasm_module_state` | gauge | module, state | 1 for the module's current state (`running`, `suspended`, `backoff`, `stopped`), 0 for the others |
//! | `kube_wasm_module_memory_bytes` | gauge | module | linear memory size after the last guest entry, in bytes; 0 while suspended |
//! | `kube_wasm_module_entries_total` | counter | module | calls into the guest (`_start`, `kube_wasm_alloc`, `kube_wasm_complete`, …) |
//! | `kube_wasm_module_op_duration_seconds` | histogram | module, kind | time from an op's start to the delivery of its final completion (`http`, `watch`, `delay`, `stop_signal`); cancelled ops are not observed |
//! | `kube_wasm_module_restarts_total` | counter | module | restarts by the supervisor |
//! | `kube_wasm_module_suspends_total` | counter | module | suspends to disk (see [`crate::runtime::suspend`]) |
//! | `kube_wasm_module_suspend_failures_total` | counter | module | snapshots that could not be written (the module stayed resident) |
//! | `kube_wasm_module_resumes_total` | counter | module | resumes from disk |
//! | `kube_wasm_module_suspend_duration_seconds` | histogram | module | time to write a snapshot and release the instance |
//! | `kube_wasm_module_resume_duration_seconds` | histogram | module | time from the waking completion to a restored instance (before the delivery) |
//! | `kube_wasm_module_snapshot_bytes` | gauge | module | size of the module's snapshot file while it is suspended, in bytes; 0 while resident |
//! | `kube_wasm_upstream_watches` | gauge | | upstream watches open now (all modules, and the shared watches) |
//! | `kube_wasm_shared_watches` | gauge | | shared upstream LIST+WATCHes alive ([`crate::upstream::watch_cache`]) |
//! | `kube_wasm_shared_watch_subscribers` | gauge | | module watches and lists served by them now |
//! | `kube_wasm_watch_cache_objects`, `kube_wasm_watch_cache_events`, `kube_wasm_watch_cache_bytes` | gauge | | objects, history events and their bytes held by the shared watches, read at each scrape |
//! | `kube_wasm_cache_entries`, `kube_wasm_cache_bytes` | gauge | | precompiled modules in the cache folder and their size, read at each scrape |
//! | `kube_wasm_instance_slots` | gauge | | module instances that may be resident at once ([`crate::runtime::instance_slots`]) |
//! | `kube_wasm_instance_slot_waits` | gauge | | modules waiting for an instance slot now, to start or to resume |
//! | `kube_wasm_memory_pressure` | gauge | | 1 while the host's memory cgroup is nearly full and idle modules are suspended at once ([`crate::runtime::suspend::pressure`]), else 0 |
//! | `kube_wasm_upstream_http2_connections`, `kube_wasm_upstream_http2_streams` | gauge | | HTTP/2 connections to the API server (shared by every module and identity, see [`crate::upstream::http2`]) and the requests and watches open on them, read at each scrape |

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::upstream::http2::Http2Stats;

/// A module's lifecycle state, as the `state` label shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModuleState {
    /// Its instance runs (`running`).
    Running,
    /// It is suspended to disk: no instance, no linear memory (`suspended`).
    Suspended,
    /// It ended and waits for its restart delay (`backoff`).
    Backoff,
    /// It ended for good (`stopped`).
    Stopped,
}

impl ModuleState {
    /// The `state` label value.
    pub fn label(self) -> &'static str {
        match self {
            ModuleState::Running => "running",
            ModuleState::Suspended => "suspended",
            ModuleState::Backoff => "backoff",
            ModuleState::Stopped => "stopped",
        }
    }
}

const STATES: [ModuleState; 4] = [
    ModuleState::Running,
    ModuleState::Suspended,
    ModuleState::Backoff,
    ModuleState::Stopped,
];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ModuleLabels {
    module: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    module: String,
    state: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct QuotaLabels {
    module: String,
    quota: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OpLabels {
    module: String,
    kind: &'static str,
}

fn op_histogram() -> Histogram {
    // 1 ms … ~4.4 min: quick GETs to long watches.
    Histogram::new(exponential_buckets(0.001, 4.0, 10))
}

fn swap_histogram() -> Histogram {
    // 0.5 ms … ~4 s: small modules to large memories.
    Histogram::new(exponential_buckets(0.0005, 2.0, 14))
}

/// The metrics of one host. Cheap to clone; clones share the series.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    state: Family<StateLabels, Gauge>,
    memory: Family<ModuleLabels, Gauge>,
    entries: Family<ModuleLabels, Counter>,
    op_seconds: Family<OpLabels, Histogram, fn() -> Histogram>,
    restarts: Family<ModuleLabels, Counter>,
    quota_refusals: Family<QuotaLabels, Counter>,
    log_lines_dropped: Family<ModuleLabels, Counter>,
    suspend: SuspendMetrics,
    replica: ReplicaMetrics,
    watches: Gauge,
    cache_entries: Gauge,
    cache_bytes: Gauge,
    shared_watches: Gauge,
    shared_subscribers: Gauge,
    watch_cache_objects: Gauge,
    watch_cache_events: Gauge,
    watch_cache_bytes: Gauge,
    http2_connections: Gauge,
    http2_streams: Gauge,
    instance_slots: Gauge,
    instance_slot_waits: Gauge,
    memory_pressure: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics, registered under the `kube_wasm` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("kube_wasm");
        let metrics = Self {
            registry: Arc::default(),
            state: Family::default(),
            memory: Family::default(),
            entries: Family::default(),
            op_seconds: Family::new_with_constructor(op_histogram),
            restarts: Family::default(),
            quota_refusals: Family::default(),
            log_lines_dropped: Family::default(),
            suspend: SuspendMetrics::default(),
            replica: ReplicaMetrics::default(),
            watches: Gauge::default(),
            cache_entries: Gauge::default(),
            cache_bytes: Gauge::default(),
            shared_watches: Gauge::default(),
            shared_subscribers: Gauge::default(),
            watch_cache_objects: Gauge::default(),
            watch_cache_events: Gauge::default(),
            watch_cache_bytes: Gauge::default(),
            http2_connections: Gauge::default(),
            http2_streams: Gauge::default(),
            instance_slots: Gauge::default(),
            instance_slot_waits: Gauge::default(),
            memory_pressure: Gauge::default(),
        };
        for (name, help, gauge) in [
            (
                "shared_watches",
                "Shared upstream LIST+WATCHes alive",
                &metrics.shared_watches,
            ),
            (
                "shared_watch_subscribers",
                "Module watches and lists served by shared watches now",
                &metrics.shared_subscribers,
            ),
            (
                "watch_cache_objects",
                "Objects held by the shared watches",
                &metrics.watch_cache_objects,
            ),
            (
                "watch_cache_events",
                "History events held by the shared watches",
                &metrics.watch_cache_events,
            ),
            (
                "watch_cache_bytes",
                "Bytes of objects and history events held by the shared watches",
                &metrics.watch_cache_bytes,
            ),
            (
                "upstream_http2_connections",
                "HTTP/2 connections to the API server, shared by every module and identity",
                &metrics.http2_connections,
            ),
            (
                "upstream_http2_streams",
                "Requests and watches open as streams on those connections",
                &metrics.http2_streams,
            ),
            (
                "instance_slots",
                "Module instances that may be resident at once (the kernel's bound on memory \
                 mappings, vm.max_map_count, or the host's setting)",
                &metrics.instance_slots,
            ),
            (
                "instance_slot_waits",
                "Modules waiting for an instance slot now, to start or to resume",
                &metrics.instance_slot_waits,
            ),
            (
                "memory_pressure",
                "1 while the host's memory cgroup is nearly full and idle modules are suspended \
                 at once, else 0",
                &metrics.memory_pressure,
            ),
        ] {
            registry.register(name, help, gauge.clone());
        }
        registry.register(
            "module_state",
            "1 for the module's current state, 0 for the others",
            metrics.state.clone(),
        );
        registry.register(
            "module_memory_bytes",
            "Linear memory size after the last guest entry, in bytes",
            metrics.memory.clone(),
        );
        registry.register(
            "module_entries",
            "Calls into the guest",
            metrics.entries.clone(),
        );
        registry.register(
            "module_op_duration_seconds",
            "Time from an op's start to the delivery of its final completion",
            metrics.op_seconds.clone(),
        );
        registry.register(
            "module_restarts",
            "Restarts of the module by the supervisor",
            metrics.restarts.clone(),
        );
        registry.register(
            "module_quota_refusals",
            "Ops refused because the module was at a quota (label `quota`: pending_ops, \
             concurrent_requests, watches, streams, buffered_bytes)",
            metrics.quota_refusals.clone(),
        );
        registry.register(
            "log_lines_dropped",
            "Lines of the module's stdout and stderr dropped over its log-lines quota",
            metrics.log_lines_dropped.clone(),
        );
        metrics.suspend.register(&mut registry);
        metrics.replica.register(&mut registry);
        registry.register(
            "upstream_watches",
            "Upstream watches open now",
            metrics.watches.clone(),
        );
        registry.register(
            "cache_entries",
            "Precompiled modules in the cache folder",
            metrics.cache_entries.clone(),
        );
        registry.register(
            "cache_bytes",
            "Size of the precompiled modules in the cache folder, in bytes",
            metrics.cache_bytes.clone(),
        );
        Self {
            registry: Arc::new(registry),
            ..metrics
        }
    }

    /// This host replica's placement series.
    pub fn replica(&self) -> &ReplicaMetrics {
        &self.replica
    }

    fn module(module: &str) -> ModuleLabels {
        ModuleLabels {
            module: module.to_owned(),
        }
    }

    /// Sets `module`'s state (and clears its other states).
    pub fn set_state(&self, module: &str, state: ModuleState) {
        for s in STATES {
            let labels = StateLabels {
                module: module.to_owned(),
                state: s.label(),
            };
            self.state.get_or_create(&labels).set(i64::from(s == state));
        }
    }

    /// `module`'s current state, if it has one.
    pub fn module_state(&self, module: &str) -> Option<ModuleState> {
        STATES.into_iter().find(|s| {
            let labels = StateLabels {
                module: module.to_owned(),
                state: s.label(),
            };
            self.state.get(&labels).is_some_and(|g| g.get() == 1)
        })
    }

    /// `module`'s linear memory after its last entry, in bytes, if recorded.
    pub fn module_memory(&self, module: &str) -> Option<u64> {
        self.memory
            .get(&Self::module(module))
            .and_then(|g| u64::try_from(g.get()).ok())
    }

    /// Records `module`'s linear memory size.
    pub fn set_memory(&self, module: &str, bytes: usize) {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        self.memory.get_or_create(&Self::module(module)).set(bytes);
    }

    /// Counts one call into `module`.
    pub fn count_entry(&self, module: &str) {
        self.entries.get_or_create(&Self::module(module)).inc();
    }

    /// Records an op of `module` that took `took` from start to final delivery; `kind` is
    /// its kind's label (`OpKind::label`: `http`, `watch`, `delay`, …).
    pub fn observe_op(&self, module: &str, kind: &'static str, took: Duration) {
        let labels = OpLabels {
            module: module.to_owned(),
            kind,
        };
        self.op_seconds
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Counts one op of `module` refused at `quota` (a [`crate::runtime::quota::Quota`]
    /// label).
    pub fn count_quota_refusal(&self, module: &str, quota: &'static str) {
        let labels = QuotaLabels {
            module: module.to_owned(),
            quota,
        };
        self.quota_refusals.get_or_create(&labels).inc();
    }

    /// Counts one line of `module`'s output dropped over its log-lines quota.
    pub fn count_log_line_dropped(&self, module: &str) {
        self.log_lines_dropped
            .get_or_create(&Self::module(module))
            .inc();
    }

    /// Counts one restart of `module` (and makes its counter exist at 0 if `by` is 0).
    pub fn count_restarts(&self, module: &str, by: u64) {
        self.restarts
            .get_or_create(&Self::module(module))
            .inc_by(by);
    }

    /// Records a suspend of `module` that took `took` and wrote `snapshot_bytes` to disk; its
    /// memory gauge drops to 0.
    pub fn suspended(&self, module: &str, took: Duration, snapshot_bytes: u64) {
        let labels = Self::module(module);
        self.suspend.suspends.get_or_create(&labels).inc();
        self.suspend
            .suspend_seconds
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        self.suspend
            .snapshot_bytes
            .get_or_create(&labels)
            .set(i64::try_from(snapshot_bytes).unwrap_or(i64::MAX));
        self.set_memory(module, 0);
        self.set_state(module, ModuleState::Suspended);
    }

    /// Counts a snapshot of `module` that could not be written.
    pub fn suspend_failed(&self, module: &str) {
        self.suspend
            .failures
            .get_or_create(&Self::module(module))
            .inc();
    }

    /// Records a resume of `module` that took `took`, or the end of a suspended module
    /// (`took` is `None`): its snapshot is gone.
    pub fn resumed(&self, module: &str, took: Option<Duration>) {
        let labels = Self::module(module);
        self.suspend.snapshot_bytes.get_or_create(&labels).set(0);
        if let Some(took) = took {
            self.suspend.resumes.get_or_create(&labels).inc();
            self.suspend
                .resume_seconds
                .get_or_create(&labels)
                .observe(took.as_secs_f64());
            self.set_state(module, ModuleState::Running);
        }
    }

    /// Records how late a timer reached its module: from when it fell due to the entry that
    /// delivered it.
    pub fn observe_timer_lateness(&self, late: Duration) {
        self.suspend.timer_lateness.observe(late.as_secs_f64());
    }

    /// Counts a suspended module resumed ahead of its earliest timer.
    pub fn count_resume_ahead(&self) {
        self.suspend.resumes_ahead.inc();
    }

    /// Counts an upstream watch as open until the returned guard is dropped.
    pub fn watch_opened(&self) -> GaugeHold {
        self.watches.inc();
        GaugeHold(self.watches.clone())
    }

    /// Sets how many module instances may be resident at once (see
    /// [`crate::runtime::instance_slots`]).
    pub fn set_instance_slots(&self, slots: usize) {
        self.instance_slots
            .set(i64::try_from(slots).unwrap_or(i64::MAX));
    }

    /// Records whether the host is under memory pressure (see
    /// [`crate::runtime::suspend::pressure`]).
    pub fn set_memory_pressure(&self, under: bool) {
        self.memory_pressure.set(i64::from(under));
    }

    /// Counts a module as waiting for an instance slot until the returned guard is dropped.
    pub fn waiting_for_instance_slot(&self) -> GaugeHold {
        self.instance_slot_waits.inc();
        GaugeHold(self.instance_slot_waits.clone())
    }

    /// How many modules wait for an instance slot now.
    pub fn instance_slot_waits(&self) -> u64 {
        u64::try_from(self.instance_slot_waits.get()).unwrap_or(0)
    }

    /// Sets the cache folder's entry count and size in bytes.
    pub fn set_cache(&self, entries: u64, bytes: u64) {
        self.cache_entries
            .set(i64::try_from(entries).unwrap_or(i64::MAX));
        self.cache_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    /// Sets the shared-watch figures.
    pub fn set_watch_cache(&self, totals: &CacheTotals) {
        let set = |gauge: &Gauge, n: usize| gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        set(&self.shared_watches, totals.informers);
        set(&self.shared_subscribers, totals.subscribers);
        set(&self.watch_cache_objects, totals.objects);
        set(&self.watch_cache_events, totals.events);
        set(&self.watch_cache_bytes, totals.bytes);
    }

    /// Sets the HTTP/2 connection and stream counts.
    pub fn set_http2(&self, stats: Http2Stats) {
        let set = |gauge: &Gauge, n: usize| gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        set(&self.http2_connections, stats.connections);
        set(&self.http2_streams, stats.streams);
    }

    /// The metrics in the Prometheus text format (OpenMetrics flavour, ending in `# EOF`).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Totals over every shared watch (the host's [`crate::upstream::watch_cache`]), as the metrics
/// report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheTotals {
    /// Shared watches (informers) alive.
    pub informers: usize,
    /// Module watches and lists subscribed to them.
    pub subscribers: usize,
    /// Objects held in the stores.
    pub objects: usize,
    /// Events held in the stores' histories.
    pub events: usize,
    /// Bytes of object JSON plus bytes of event lines in the stores (an upper bound of the
    /// memory they hold).
    pub bytes: usize,
}

/// This replica's share of the fleet (`host-shim run --controllers`): modules owned, handoffs,
/// failovers and its Lease. Cheap to clone; clones share the series.
#[derive(Clone)]
pub struct ReplicaMetrics {
    owned: Gauge,
    handoffs: Counter,
    failovers: Counter,
    fences: Counter,
    renew_failures: Counter,
    renew_seconds: Histogram,
}

impl Default for ReplicaMetrics {
    fn default() -> Self {
        Self {
            owned: Gauge::default(),
            handoffs: Counter::default(),
            failovers: Counter::default(),
            fences: Counter::default(),
            renew_failures: Counter::default(),
            renew_seconds: Histogram::new(exponential_buckets(0.002, 2.0, 12)),
        }
    }
}

impl ReplicaMetrics {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "replica_modules_owned",
            "WasmControllers whose module runs on this replica",
            self.owned.clone(),
        );
        registry.register(
            "replica_handoffs",
            "Modules this replica stopped and released to another replica",
            self.handoffs.clone(),
        );
        registry.register(
            "replica_failovers",
            "Modules this replica took over from a replica whose Lease expired",
            self.failovers.clone(),
        );
        registry.register(
            "replica_lease_losses",
            "Times this replica stopped its modules because it could not renew its Lease",
            self.fences.clone(),
        );
        registry.register(
            "replica_lease_renew_failures",
            "Lease renewals that failed or timed out",
            self.renew_failures.clone(),
        );
        registry.register(
            "replica_lease_renew_duration_seconds",
            "Time a successful Lease renewal took",
            self.renew_seconds.clone(),
        );
    }

    /// Sets the number of modules running on this replica.
    pub fn set_owned(&self, modules: usize) {
        self.owned.set(i64::try_from(modules).unwrap_or(i64::MAX));
    }

    /// Counts a module released to another replica.
    pub fn count_handoff(&self) {
        self.handoffs.inc();
    }

    /// Counts a module taken over from a replica whose Lease expired.
    pub fn count_failover(&self) {
        self.failovers.inc();
    }

    /// Counts a loss of the Lease that stopped this replica's modules.
    pub fn count_fence(&self) {
        self.fences.inc();
    }

    /// Counts a failed or timed-out renewal.
    pub fn count_renew_failure(&self) {
        self.renew_failures.inc();
    }

    /// Records how long a successful renewal took.
    pub fn observe_renew(&self, took: Duration) {
        self.renew_seconds.observe(took.as_secs_f64());
    }
}

/// The per-module series of suspends and resumes.
#[derive(Clone)]
struct SuspendMetrics {
    suspends: Family<ModuleLabels, Counter>,
    failures: Family<ModuleLabels, Counter>,
    resumes: Family<ModuleLabels, Counter>,
    suspend_seconds: Family<ModuleLabels, Histogram, fn() -> Histogram>,
    resume_seconds: Family<ModuleLabels, Histogram, fn() -> Histogram>,
    snapshot_bytes: Family<ModuleLabels, Gauge>,
    timer_lateness: Histogram,
    resumes_ahead: Counter,
}

impl Default for SuspendMetrics {
    fn default() -> Self {
        Self {
            suspends: Family::default(),
            failures: Family::default(),
            resumes: Family::default(),
            suspend_seconds: Family::new_with_constructor(swap_histogram),
            resume_seconds: Family::new_with_constructor(swap_histogram),
            snapshot_bytes: Family::default(),
            timer_lateness: swap_histogram(),
            resumes_ahead: Counter::default(),
        }
    }
}

impl SuspendMetrics {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "module_suspends",
            "Suspends of the module to disk",
            self.suspends.clone(),
        );
        registry.register(
            "module_suspend_failures",
            "Snapshots of the module that could not be written (it stayed resident)",
            self.failures.clone(),
        );
        registry.register(
            "module_resumes",
            "Resumes of the module from disk",
            self.resumes.clone(),
        );
        registry.register(
            "module_suspend_duration_seconds",
            "Time to write the module's snapshot and release its instance",
            self.suspend_seconds.clone(),
        );
        registry.register(
            "module_resume_duration_seconds",
            "Time to restore the module's instance from its snapshot",
            self.resume_seconds.clone(),
        );
        registry.register(
            "module_snapshot_bytes",
            "Size of the module's snapshot file while it is suspended, in bytes",
            self.snapshot_bytes.clone(),
        );
        registry.register(
            "timer_lateness_seconds",
            "Time from a module's timer falling due to its delivery into the module, every module",
            self.timer_lateness.clone(),
        );
        registry.register(
            "timer_resumes",
            "Suspended modules resumed ahead of their earliest timer, every module",
            self.resumes_ahead.clone(),
        );
    }
}

/// One held unit of a gauge (an open upstream watch, a module waiting for an instance slot);
/// dropping it takes the unit back.
#[derive(Debug)]
pub struct GaugeHold(Gauge);

impl Drop for GaugeHold {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_carry_the_module_and_move() {
        let metrics = Metrics::new();
        metrics.set_state("a", ModuleState::Running);
        metrics.set_state("a", ModuleState::Backoff);
        metrics.count_entry("a");
        metrics.count_entry("a");
        metrics.count_restarts("a", 1);
        metrics.set_memory("a", 1 << 20);
        metrics.observe_op("a", "http", Duration::from_millis(3));
        let watch = metrics.watch_opened();
        let _second = metrics.watch_opened();
        drop(watch);
        metrics.set_cache(2, 4096);
        metrics.set_http2(Http2Stats {
            connections: 2,
            streams: 150,
        });
        let text = metrics.encode();
        for line in [
            "kube_wasm_module_state{module=\"a\",state=\"running\"} 0",
            "kube_wasm_module_state{module=\"a\",state=\"backoff\"} 1",
            "kube_wasm_module_entries_total{module=\"a\"} 2",
            "kube_wasm_module_restarts_total{module=\"a\"} 1",
            "kube_wasm_module_memory_bytes{module=\"a\"} 1048576",
            "kube_wasm_module_op_duration_seconds_count{module=\"a\",kind=\"http\"} 1",
            "kube_wasm_upstream_watches 1",
            "kube_wasm_cache_entries 2",
            "kube_wasm_cache_bytes 4096",
            "kube_wasm_upstream_http2_connections 2",
            "kube_wasm_upstream_http2_streams 150",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }

    #[test]
    fn suspends_and_resumes_move_state_memory_and_snapshot_size() {
        let metrics = Metrics::new();
        metrics.set_state("a", ModuleState::Running);
        metrics.set_memory("a", 2 << 20);
        metrics.suspended("a", Duration::from_millis(3), 4096);
        let text = metrics.encode();
        for line in [
            "kube_wasm_module_state{module=\"a\",state=\"suspended\"} 1",
            "kube_wasm_module_state{module=\"a\",state=\"running\"} 0",
            "kube_wasm_module_memory_bytes{module=\"a\"} 0",
            "kube_wasm_module_snapshot_bytes{module=\"a\"} 4096",
            "kube_wasm_module_suspends_total{module=\"a\"} 1",
            "kube_wasm_module_suspend_duration_seconds_count{module=\"a\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        metrics.resumed("a", Some(Duration::from_millis(5)));
        metrics.suspend_failed("a");
        let text = metrics.encode();
        for line in [
            "kube_wasm_module_state{module=\"a\",state=\"suspended\"} 0",
            "kube_wasm_module_state{module=\"a\",state=\"running\"} 1",
            "kube_wasm_module_snapshot_bytes{module=\"a\"} 0",
            "kube_wasm_module_resumes_total{module=\"a\"} 1",
            "kube_wasm_module_resume_duration_seconds_count{module=\"a\"} 1",
            "kube_wasm_module_suspend_failures_total{module=\"a\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
