//! The wasmtime engine: its configuration, and the epoch ticker that bounds each guest entry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use wasmtime::{Config, Engine, EngineWeak, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::fiber_stacks::ReleasableStacks;

/// The size of a pooling instance allocator: how many modules may be instantiated at once
/// and how large one linear memory may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSize {
    /// Instances (and memories, tables, fiber stacks) the pool holds: at least the number of
    /// modules that run at once. A module's slot is returned when its store is dropped,
    /// before it is restarted.
    pub instances: u32,
    /// The largest linear memory in bytes (at most 4 GiB, the wasm32 limit): the largest
    /// memory limit of any module.
    pub max_memory_bytes: u64,
}

/// A wasmtime engine for kube-wasm modules: Cranelift, async calls (guests run on fibers
/// inside tokio tasks), epoch interruption (so a guest looping inside one entry can be
/// stopped) and copy-on-write memory initialisation (a module's data segments are mapped,
/// not copied, at each instantiation). With a `pool`, instances come from wasmtime's
/// pooling allocator: memories and stacks are reserved once and reused, so instantiating
/// (and restarting) a module costs a few page-table updates rather than fresh mappings.
///
/// Without a pool, fiber stacks come from `stacks`: an idle module's stack pages can be
/// released (see [`crate::runtime::fiber_stacks`]).
///
/// Async stacks are zeroed when they go back to the pool: a `Store` keeps its last fiber
/// stack for its whole life, so this happens only when a store is dropped (a module
/// suspended, restarted or ended), and it hands the stack's touched pages back to the
/// kernel (`madvise`) instead of keeping them resident in a free slot. It also keeps one
/// module's stack contents from the next module that gets the slot.
///
/// # Errors
/// If wasmtime rejects the configuration on this platform.
pub fn new_engine(pool: Option<PoolSize>, stacks: &ReleasableStacks) -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config.epoch_interruption(true);
    config.memory_init_cow(true);
    // Applies to pooled stacks only: with `async_stack_keep_resident` at its default (0),
    // a returned stack is decommitted rather than memset.
    config.async_stack_zeroing(true);
    if let Some(pool) = pool {
        let mut pooling = PoolingAllocationConfig::new();
        let n = pool.instances.max(1);
        let max_memory = usize::try_from(pool.max_memory_bytes.min(4 << 30)).unwrap_or(usize::MAX);
        pooling
            .total_core_instances(n)
            .total_memories(n)
            .total_tables(n)
            .total_stacks(n)
            .max_memories_per_module(1)
            .max_tables_per_module(1)
            // Rust modules with many trait objects have large function tables.
            .table_elements(1 << 17)
            .max_memory_size(max_memory);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
    } else {
        config.with_host_stack(Arc::new(stacks.clone()));
    }
    Engine::new(&config)
}

/// Advances an engine's epoch every `tick` on its own OS thread while a guest is inside an
/// entry (while an [`EntryTicks`] guard from [`EpochTicker::enter`] lives), so that the tick
/// goes on even when every tokio worker is busy running a guest. Between entries the thread
/// waits without a timeout: an idle host does not wake every tick. The thread ends once the
/// ticker or the engine is dropped.
#[derive(Debug)]
pub struct EpochTicker {
    tick: Duration,
    gate: Arc<TickGate>,
}

/// How many guest entries are in progress, and whether the ticker is gone.
#[derive(Debug, Default)]
struct TickGate {
    state: Mutex<GateState>,
    changed: Condvar,
    ticks: AtomicU64,
}

#[derive(Debug, Default)]
struct GateState {
    entries: usize,
    closed: bool,
}

impl TickGate {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        // Every update leaves the state consistent; a panic elsewhere cannot break it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until an entry is in progress; `false` once the ticker is dropped.
    fn wait_for_entry(&self) -> bool {
        let mut state = self.lock();
        loop {
            if state.closed {
                return false;
            }
            if state.entries > 0 {
                return true;
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// One guest entry in progress (see [`EpochTicker::enter`]): the epoch ticks while one lives.
#[derive(Debug)]
pub struct EntryTicks(Arc<TickGate>);

impl Drop for EntryTicks {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.entries = state.entries.saturating_sub(1);
    }
}

impl EpochTicker {
    /// Starts the thread that ticks `engine` every `tick` while an entry is in progress.
    ///
    /// # Errors
    /// If the OS refuses to start a thread.
    pub fn start(engine: &Engine, tick: Duration) -> std::io::Result<Self> {
        let weak: EngineWeak = engine.weak();
        let gate = Arc::new(TickGate::default());
        let waits = gate.clone();
        std::thread::Builder::new()
            .name("kube-wasm-epoch".into())
            .spawn(move || {
                while waits.wait_for_entry() {
                    std::thread::sleep(tick);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                    waits.ticks.fetch_add(1, Ordering::Relaxed);
                }
            })?;
        Ok(Self { tick, gate })
    }

    /// Counts a guest entry as in progress until the guard is dropped: hold it across every
    /// entry (a start, a resume, a delivery), or the entry's deadline never comes.
    pub fn enter(&self) -> EntryTicks {
        let mut state = self.gate.lock();
        state.entries += 1;
        if state.entries == 1 {
            self.gate.changed.notify_one();
        }
        EntryTicks(self.gate.clone())
    }

    /// The tick period.
    pub fn tick(&self) -> Duration {
        self.tick
    }

    /// How many times the epoch advanced.
    pub fn ticks(&self) -> u64 {
        self.gate.ticks.load(Ordering::Relaxed)
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.gate.lock().closed = true;
        self.gate.changed.notify_one();
    }
}

#[cfg(test)]
mod ticker_tests {
    use super::*;

    #[test]
    fn the_epoch_advances_only_while_an_entry_is_in_progress() {
        let engine = Engine::default();
        let ticker = EpochTicker::start(&engine, Duration::from_millis(5)).expect("thread");
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(ticker.ticks(), 0, "no entry, no tick");

        let entry = ticker.enter();
        let nested = ticker.enter();
        std::thread::sleep(Duration::from_millis(100));
        drop(entry);
        std::thread::sleep(Duration::from_millis(50));
        let during = ticker.ticks();
        assert!(during >= 5, "ticked {during} times in 150 ms of entries");
        drop(nested);
        std::thread::sleep(Duration::from_millis(20));
        let after = ticker.ticks();
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(ticker.ticks(), after, "stopped with the last entry");

        drop(ticker.enter());
        drop(ticker);
    }
}
