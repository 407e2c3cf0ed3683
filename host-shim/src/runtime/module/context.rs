//! What a module runs on, lent by the host for the module's run: the engine, the API server
//! as each identity, the metrics, the shared watches, the snapshot folder, and the settings a
//! module reads.

use std::time::Duration;

use wasmtime::Engine;

use crate::metrics::Metrics;
use crate::runtime::engine::EpochTicker;
use crate::runtime::instance_slots::InstanceSlots;
use crate::runtime::output::OutputTarget;
use crate::runtime::suspend::{LazySnapshotDir, MemoryPressure, SuspendCost};
use crate::upstream::identity::Identities;
use crate::upstream::limits::OpLimits;
use crate::upstream::watch_cache::WatchCache;

/// The parts of the host one module's run reads (see [`crate::Host::run_module`]).
pub(crate) struct ModuleContext<'a> {
    /// The engine the module's `Store`s are made in.
    pub(crate) engine: &'a Engine,
    /// Its epoch ticker, which ticks while a guest entry is in progress.
    pub(crate) ticker: &'a EpochTicker,
    /// The API server as each identity a module may act as; its own one also gives the
    /// default namespace and the cluster URL.
    pub(crate) identities: &'a Identities,
    /// The host's metrics.
    pub(crate) metrics: &'a Metrics,
    /// The shared watches, if the host shares them.
    pub(crate) watch_cache: Option<&'a WatchCache>,
    /// Where snapshots of suspended modules go.
    pub(crate) snapshots: &'a LazySnapshotDir,
    /// Environment variables of every module.
    pub(crate) env: &'a [(String, String)],
    /// Where module stdout and stderr go.
    pub(crate) output: &'a OutputTarget,
    /// How many completions may wait for delivery.
    pub(crate) completion_queue: usize,
    /// Size limits of op results.
    pub(crate) limits: OpLimits,
    /// The longest time of one guest entry.
    pub(crate) entry_deadline: Duration,
    /// The same in epoch ticks.
    pub(crate) entry_tick_budget: u64,
    /// How long the module may go unentered before its idle stacks are released; `None`:
    /// never.
    pub(crate) release_idle_stacks: Option<Duration>,
    /// One per resident instance: taken before instantiating, given back with the `Store`.
    pub(crate) slots: &'a InstanceSlots,
    /// The host's suspend and resume times, which every suspending module records and reads.
    pub(crate) suspend_cost: &'a SuspendCost,
    /// Whether the host is under memory pressure.
    pub(crate) pressure: &'a MemoryPressure,
}
