//! One running module (SPEC.md, "Lifecycle"): instantiate, check the ABI version, call
//! `_start`, then deliver completions until the guest exits or the host ends it.
//!
//! # The module loop
//!
//! The module's task owns its `Store`, so the guest is entered by this task only, and never
//! twice at once. Imports (see [`crate::abi`]) only register ops and spawn their work tasks;
//! work tasks queue `(op, frame)` [`Delivery`]s into the module's channel. The loop takes them
//! one at a time, skips those of ops that are no longer live (cancelled), retires an op on its
//! final completion, and for each one calls `kube_wasm_alloc(len)`, copies the frame into the
//! buffer and calls `kube_wasm_complete(op, ptr, len)`. Completions of one op are produced by
//! one task into one FIFO channel, so they arrive in order, and none is lost or overwritten.
//!
//! Every entry into the guest gets a deadline (see [`Settings::entry_deadline`]): the epoch
//! ticker interrupts the guest every tick, it yields to tokio, and once the budget is spent
//! the entry traps and the module is ended.
//!
//! Whatever way the module ends, all its live ops are aborted: their requests and watches are
//! dropped, which closes them upstream.
//!
//! # Suspended modules
//!
//! A module with a [`SuspendPolicy`](crate::suspend::SuspendPolicy) that has not been entered
//! for its idle threshold, with no completion waiting, is suspended (see [`crate::suspend`]):
//! the loop snapshots it and drops its `Store`, keeping the host state, then waits on the same
//! queue and stop phase. A completion for a live op restores it and is delivered; a stop
//! request ends it exactly as it ends a resident module.
//!
//! [`Settings::entry_deadline`]: crate::Settings::entry_deadline

mod context;
pub(crate) mod outcome;

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use kube_wasm_abi::names::{EXPORT_ABI_VERSION, EXPORT_ALLOC, EXPORT_COMPLETE, EXPORT_START};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::Instrument as _;
use wasmtime::{Engine, Instance, InstancePre, Linker, Store, UpdateDeadline};
use wasmtime_wasi::I32Exit;

use crate::abi::exports::{GuestExports, check_imports, check_version};
use crate::abi::{BadAbiCall, memory, op_to_wasm};
use crate::memory_cap::{MemoryCap, MemoryLimitExceeded};
use crate::ops::{Delivery, OpTable};
use crate::options::ModuleOptions;
use crate::state::{Access, HostState, OpContext};
use crate::stop::{Phase, StopHandle};
use crate::suspend::{self, IdleThreshold, Snapshot, SnapshotLayout, Suspendable};
use crate::wasi;
use crate::watch_cache::ModuleWatches;

pub(crate) use context::ModuleContext;
pub use outcome::{EndReason, ModuleError, ModuleOutcome};

/// A compiled module with its name in the host and its options, ready to run (and to run
/// again: the module is pre-instantiated once, see [`InstancePre`]). Cheap to clone.
#[derive(Clone)]
pub struct LoadedModule {
    name: String,
    module: wasmtime::Module,
    /// The module with its imports resolved against the host's linker, or why that failed.
    pre: Result<InstancePre<HostState>, ModuleError>,
    /// Whether its instances can be suspended to disk.
    suspendable: Suspendable,
    options: ModuleOptions,
}

impl fmt::Debug for LoadedModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedModule")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl LoadedModule {
    pub(crate) fn new(
        name: &str,
        module: wasmtime::Module,
        linker: &Linker<HostState>,
        suspendable: Suspendable,
    ) -> Self {
        let pre = check_imports(&module)
            .map_err(ModuleError::from)
            .and_then(|()| {
                linker
                    .instantiate_pre(&module)
                    .map_err(|e| ModuleError::Instantiate(format!("{e:?}")))
            });
        Self {
            name: name.to_owned(),
            module,
            pre,
            suspendable,
            options: ModuleOptions::default(),
        }
    }

    /// The same compiled module under another `name` with other `options` (shares the
    /// compiled code and the pre-instantiation).
    pub fn named(&self, name: &str, options: ModuleOptions) -> Self {
        Self {
            name: name.to_owned(),
            options,
            ..self.clone()
        }
    }

    /// This module with `options`.
    pub fn with_options(self, options: ModuleOptions) -> Self {
        Self { options, ..self }
    }

    /// Its options.
    pub fn options(&self) -> &ModuleOptions {
        &self.options
    }

    /// Whether `other` shares this module's compiled code.
    pub fn shares_code_with(&self, other: &LoadedModule) -> bool {
        wasmtime::Module::same(&self.module, &other.module)
    }

    /// The module's name in the host (the prefix of its output, `KUBE_WASM_MODULE`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether its instances can be suspended to disk, found when it was loaded.
    pub fn suspendable(&self) -> &Suspendable {
        &self.suspendable
    }
}

/// The epoch callback's error: the current entry ran out of ticks.
#[derive(Debug, thiserror::Error)]
#[error("guest entry deadline exceeded")]
struct EntryDeadlineExceeded;

/// Runs `module` with `cx` until it exits or is ended, and logs how it ended.
pub(crate) async fn run_module(
    cx: &ModuleContext<'_>,
    module: LoadedModule,
    stop: &StopHandle,
) -> ModuleOutcome {
    let name: Arc<str> = module.name.as_str().into();
    let span = tracing::info_span!("module", name = %name);
    let outcome = run_inner(cx, module, stop, name.clone())
        .instrument(span)
        .await;
    match &outcome {
        ModuleOutcome::Exited(0) => tracing::info!("module `{name}` exited cleanly"),
        ModuleOutcome::Exited(status) => {
            tracing::error!("module `{name}` exited with status {status}")
        }
        ModuleOutcome::Failed(err @ ModuleError::Trap { backtrace, .. }) => {
            tracing::error!("module `{name}` {err}; it was ended\n{backtrace}");
        }
        ModuleOutcome::Failed(err) => tracing::error!("module `{name}` {err}; it was ended"),
        ModuleOutcome::Ended(reason) => tracing::warn!("module `{name}` was ended: {reason}"),
    }
    outcome
}

async fn run_inner(
    cx: &ModuleContext<'_>,
    module: LoadedModule,
    stop: &StopHandle,
    name: Arc<str>,
) -> ModuleOutcome {
    let pre = match &module.pre {
        Ok(pre) => pre.clone(),
        Err(err) => return ModuleOutcome::Failed(err.clone()),
    };
    let options = &module.options;
    let namespace = options
        .namespace
        .as_deref()
        .unwrap_or(cx.identities.own().default_namespace());
    let env = wasi::module_env(
        &name,
        namespace,
        cx.identities.own().cluster_url(),
        cx.env.iter().chain(&options.env),
    );
    let Some(upstream) = cx
        .identities
        .upstream_for(options.service_account.as_ref())
        .cloned()
    else {
        return ModuleOutcome::Failed(ModuleError::Internal(format!(
            "the host has no client acting as ServiceAccount {}",
            options
                .service_account
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        )));
    };
    let (tx, rx) = mpsc::channel(cx.completion_queue.max(1));
    let state = HostState {
        name: name.clone(),
        wasi: wasi::module_wasi(&name, &options.args, &env, cx.output),
        memory_cap: MemoryCap::new(options.memory_limit),
        ops: OpTable::new(),
        streams: Default::default(),
        ctx: OpContext {
            upstream,
            access: Arc::new(Access {
                module: name.to_string(),
                permissions: options.permissions.clone(),
            }),
            metrics: cx.metrics.clone(),
            completions: tx,
            phase: stop.subscribe(),
            limits: cx.limits,
            runtime: tokio::runtime::Handle::current(),
            shared_watches: cx.watch_cache.cloned().map(|cache| ModuleWatches {
                cache,
                identity: options.service_account.clone(),
            }),
        },
        asked_for_stop: false,
        entry_ticks: 0,
        entry_tick_budget: cx.entry_tick_budget,
        entry_deadline: cx.entry_deadline,
    };
    let idle = match (options.suspend, &module.suspendable) {
        (None, _) => None,
        (Some(policy), Suspendable::Yes(layout)) => Some(Idle {
            layout: layout.clone(),
            threshold: IdleThreshold::new(policy),
        }),
        (Some(_), Suspendable::No(why)) => {
            tracing::warn!("module `{name}` will not be suspended when idle: {why}");
            None
        }
    };
    let running = Running {
        store: new_store(cx.engine, state),
        instance: None,
        exports: None,
        shell: Shell {
            completions: rx,
            phase: stop.subscribe(),
            phase_open: true,
            warned_idle: false,
            name,
            idle,
            last_entry: Instant::now(),
        },
    };
    live(cx, &pre, running).await
}

/// A `Store` for `state`, with its memory cap and its entry deadline installed.
fn new_store(engine: &Engine, state: HostState) -> Store<HostState> {
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.memory_cap);
    store.epoch_deadline_callback(|mut cx| {
        let state = cx.data_mut();
        state.entry_ticks += 1;
        if state.entry_ticks >= state.entry_tick_budget {
            Err(wasmtime::Error::new(EntryDeadlineExceeded))
        } else {
            // tokio's own yield lets the scheduler poll its timers and I/O before this task
            // runs again, so other modules progress even on a single thread.
            Ok(UpdateDeadline::YieldCustom(
                1,
                Box::pin(tokio::task::yield_now()),
            ))
        }
    });
    store
}

/// Runs a module from `_start` to its end, suspending and resuming it as its policy says,
/// and releases its ops at the end.
///
/// Starting, suspending and resuming are boxed: a task's future is as large as its largest
/// state, held for the module's whole life, while these states (wasmtime's instantiation,
/// the snapshot's blocking tasks) are short and rare. Boxed, their memory exists only while
/// they run: the module task's allocation went from 9.9 to 5.2 KiB per module (heaptrack,
/// 100 idle modules).
async fn live(
    cx: &ModuleContext<'_>,
    pre: &InstancePre<HostState>,
    mut running: Running,
) -> ModuleOutcome {
    if let Err(outcome) = Box::pin(running.start(pre)).await {
        running.finish();
        return outcome;
    }
    loop {
        let outcome = match running.event_loop().await {
            Turn::Ended(outcome) => outcome,
            Turn::Idle => match Box::pin(running.suspend(cx)).await {
                Suspend::Resident(back) => {
                    running = *back;
                    continue;
                }
                Suspend::Lost(outcome) => return outcome,
                Suspend::Done(mut suspended) => match suspended.sleep().await {
                    Wake::Ended(outcome) => {
                        suspended.finish();
                        return outcome;
                    }
                    Wake::Delivery(delivery) => match Box::pin(suspended.resume(cx, pre)).await {
                        Ok(resumed) => {
                            running = resumed;
                            match running.deliver(delivery).await {
                                Ok(()) => continue,
                                Err(outcome) => outcome,
                            }
                        }
                        Err(failed) => match *failed {
                            ResumeFailed {
                                outcome,
                                running: Some(failed),
                            } => {
                                running = failed;
                                outcome
                            }
                            ResumeFailed {
                                outcome,
                                running: None,
                            } => return outcome,
                        },
                    },
                },
            },
        };
        running.finish();
        return outcome;
    }
}

/// Hands the free pages inside malloc's heap back to the kernel (glibc's `malloc_trim`,
/// which also releases free space in the middle of the heap, not only at its top). Called on
/// the blocking thread of a suspend, after the store is dropped: the instance's own
/// allocations (its `VMContext`, tens of KiB) are freed then, but otherwise stay resident as
/// free space between the host state of the modules that are still there.
fn return_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks and releases malloc's own free chunks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// How a turn of the resident event loop ended.
enum Turn {
    /// The module ended.
    Ended(ModuleOutcome),
    /// The module has been idle for its threshold: suspend it.
    Idle,
}

/// What became of a suspend attempt.
enum Suspend {
    /// The module is suspended.
    Done(Box<Suspended>),
    /// The snapshot could not be written: the module stays resident.
    Resident(Box<Running>),
    /// The host lost the module (a panic in the blocking task); its ops are released by the
    /// completion queue closing.
    Lost(ModuleOutcome),
}

/// A resume that failed: how the module ends, and the module to finish if its host state
/// survived.
struct ResumeFailed {
    outcome: ModuleOutcome,
    running: Option<Running>,
}

/// What woke a suspended module.
enum Wake {
    /// A completion of a live op: resume and deliver it.
    Delivery(Delivery),
    /// The host ended the module while it was suspended.
    Ended(ModuleOutcome),
}

/// The suspend state of a module that may be suspended.
struct Idle {
    layout: Arc<SnapshotLayout>,
    threshold: IdleThreshold,
}

/// What a module keeps whether it is resident or suspended.
struct Shell {
    completions: mpsc::Receiver<Delivery>,
    phase: watch::Receiver<Phase>,
    /// Whether the stop handle still exists (a dropped one means no stop will ever come).
    phase_open: bool,
    warned_idle: bool,
    name: Arc<str>,
    /// `None`: never suspended.
    idle: Option<Idle>,
    /// When the guest was last entered.
    last_entry: Instant,
}

impl Shell {
    /// How the host's stop phase ends this module now, if it does.
    fn ended_by_phase(&mut self, asked_for_stop: bool) -> Option<ModuleOutcome> {
        match *self.phase.borrow_and_update() {
            Phase::Kill => Some(ModuleOutcome::Ended(EndReason::StopTimeout)),
            Phase::Stopping if !asked_for_stop => {
                Some(ModuleOutcome::Ended(EndReason::NeverAskedForStop))
            }
            Phase::Running | Phase::Stopping => None,
        }
    }
}

/// A suspended module: its host state and its snapshot, no `Store`.
struct Suspended {
    state: HostState,
    snapshot: Snapshot,
    since: Instant,
    shell: Shell,
}

/// A resident module: between `Store` creation and its end or suspension.
struct Running {
    store: Store<HostState>,
    instance: Option<Instance>,
    exports: Option<GuestExports>,
    shell: Shell,
}

impl Running {
    /// Instantiates the module, checks its ABI version and runs `_start`.
    async fn start(&mut self, pre: &InstancePre<HostState>) -> Result<(), ModuleOutcome> {
        self.arm_deadline();
        let instance = match pre.instantiate_async(&mut self.store).await {
            Ok(instance) => instance,
            Err(err) => {
                return Err(
                    match guest_failure(&err, "start section", self.store.data().entry_deadline) {
                        Some(outcome) => outcome,
                        None => ModuleOutcome::Failed(ModuleError::Instantiate(format!("{err:?}"))),
                    },
                );
            }
        };
        self.instance = Some(instance);
        let exports = GuestExports::resolve(&mut self.store, &instance)
            .map_err(|e| ModuleOutcome::Failed(e.into()))?;
        self.exports = Some(exports.clone());

        self.arm_deadline();
        let packed = exports
            .abi_version
            .call_async(&mut self.store, ())
            .await
            .map_err(|err| self.entry_error(err, EXPORT_ABI_VERSION))?;
        check_version(packed as u32).map_err(|e| ModuleOutcome::Failed(e.into()))?;

        tracing::debug!("calling `_start`");
        self.arm_deadline();
        let started = exports
            .start
            .call_async(&mut self.store, ())
            .await
            .map_err(|err| self.entry_error(err, EXPORT_START));
        self.record_memory();
        started?;
        self.shell.last_entry = Instant::now();
        Ok(())
    }

    /// Delivers completions until the guest exits, fails, or the host ends it, or until the
    /// module has been idle for its threshold.
    async fn event_loop(&mut self) -> Turn {
        loop {
            if let Some(outcome) = self.shell.ended_by_phase(self.store.data().asked_for_stop) {
                return Turn::Ended(outcome);
            }
            let phase = *self.shell.phase.borrow();
            if phase == Phase::Running
                && self.store.data().ops.is_empty()
                && !self.shell.warned_idle
            {
                self.shell.warned_idle = true;
                tracing::warn!(
                    "module `{}` is idle with no pending operation and did not exit: nothing can wake it \
                     any more, so it waits for the host to stop",
                    self.shell.name
                );
            }
            // Only a running host suspends modules; `None` also when the instant overflows.
            let idle_at = match (&self.shell.idle, phase) {
                (Some(idle), Phase::Running) => {
                    self.shell.last_entry.checked_add(idle.threshold.current())
                }
                _ => None,
            };
            tokio::select! {
                biased;
                changed = self.shell.phase.changed(), if self.shell.phase_open => {
                    // A dropped stop handle means no stop will ever come.
                    self.shell.phase_open = changed.is_ok();
                }
                delivery = self.shell.completions.recv() => {
                    // The store holds a sender, so the channel cannot close while we run.
                    let Some(delivery) = delivery else { continue };
                    if let Err(outcome) = self.deliver(delivery).await {
                        return Turn::Ended(outcome);
                    }
                }
                // Biased: reached only when no completion is waiting.
                () = tokio::time::sleep_until(idle_at.unwrap_or_else(Instant::now)), if idle_at.is_some() => {
                    return Turn::Idle;
                }
            }
        }
    }

    /// Snapshots the module and drops its `Store` (see [`crate::suspend`]). The snapshot is
    /// written on a blocking thread.
    async fn suspend(mut self, cx: &ModuleContext<'_>) -> Suspend {
        let Some(instance) = self.instance else {
            // Not instantiated: nothing to snapshot, and no reason to try again.
            self.shell.idle = None;
            return Suspend::Resident(Box::new(self));
        };
        let Some(idle) = &mut self.shell.idle else {
            return Suspend::Resident(Box::new(self));
        };
        let name = self.shell.name.clone();
        let metrics = self.store.data().ctx.metrics.clone();
        let dir = match cx.snapshots.get() {
            Ok(dir) => dir.to_owned(),
            Err(why) => {
                tracing::debug!("module `{name}` stays resident: {why}");
                metrics.suspend_failed(&name);
                idle.threshold.suspend_failed();
                return Suspend::Resident(Box::new(self));
            }
        };
        let started = Instant::now();
        let layout = idle.layout.clone();
        let Running {
            store,
            instance: _,
            exports,
            shell,
        } = self;
        let task_name = name.clone();
        let written = tokio::task::spawn_blocking(move || {
            let mut store = store;
            let captured = std::panic::catch_unwind(AssertUnwindSafe(|| {
                suspend::capture(&mut store, &instance, &layout, &dir, &task_name)
            }))
            .unwrap_or_else(|_| Err("the snapshot writer panicked".into()));
            match captured {
                // Dropping the store here releases the instance and its memory.
                Ok(snapshot) => {
                    let state = store.into_data();
                    return_freed_heap();
                    Ok((state, snapshot))
                }
                Err(why) => Err((store, why)),
            }
        })
        .await;
        match written {
            Ok(Ok((state, snapshot))) => {
                let took = started.elapsed();
                metrics.suspended(&name, took, snapshot.file_bytes());
                tracing::debug!(
                    "module `{name}` suspended: {} bytes of memory in a snapshot of {} bytes, in {took:?}",
                    snapshot.memory_bytes(),
                    snapshot.file_bytes()
                );
                Suspend::Done(Box::new(Suspended {
                    state,
                    snapshot,
                    since: Instant::now(),
                    shell,
                }))
            }
            Ok(Err((store, why))) => {
                metrics.suspend_failed(&name);
                let mut running = Running {
                    store,
                    instance: Some(instance),
                    exports,
                    shell,
                };
                let next = running.shell.idle.as_mut().map(|idle| {
                    idle.threshold.suspend_failed();
                    idle.threshold.current()
                });
                tracing::warn!(
                    "module `{name}` stays resident: its snapshot could not be written ({why}); \
                     next attempt after {next:?} idle"
                );
                Suspend::Resident(Box::new(running))
            }
            Err(join) => Suspend::Lost(ModuleOutcome::Failed(ModuleError::Internal(format!(
                "the snapshot task failed: {join}"
            )))),
        }
    }

    /// Delivers one completion if its op is still live.
    async fn deliver(&mut self, delivery: Delivery) -> Result<(), ModuleOutcome> {
        let Some(exports) = self.exports.clone() else {
            return Ok(());
        };
        let ops = &mut self.store.data_mut().ops;
        if !ops.is_live(delivery.op) {
            tracing::trace!(op = delivery.op, "dropping a completion of a cancelled op");
            return Ok(());
        }
        if delivery.is_final
            && let Some((kind, took)) = ops.retire(delivery.op)
        {
            self.store
                .data()
                .ctx
                .metrics
                .observe_op(&self.shell.name, kind, took);
        }
        let size = delivery.frame.len();
        let len = i32::try_from(size)
            .map_err(|_| ModuleOutcome::Failed(ModuleError::CompletionTooLarge { len: size }))?;

        self.arm_deadline();
        let ptr = exports
            .alloc
            .call_async(&mut self.store, len)
            .await
            .map_err(|err| self.entry_error(err, EXPORT_ALLOC))?;
        if ptr == 0 {
            return Err(ModuleOutcome::Failed(ModuleError::AllocFailed {
                len: size,
            }));
        }
        memory::write_guest_bytes(&mut self.store, exports.memory, ptr, &delivery.frame).map_err(
            |reason| ModuleOutcome::Failed(ModuleError::AllocOutOfBounds { len: size, reason }),
        )?;

        self.arm_deadline();
        let completed = exports
            .complete
            .call_async(&mut self.store, (op_to_wasm(delivery.op), ptr, len))
            .await
            .map_err(|err| self.entry_error(err, EXPORT_COMPLETE));
        self.record_memory();
        self.shell.last_entry = Instant::now();
        completed
    }

    /// Starts the deadline of one guest entry (and counts the entry).
    fn arm_deadline(&mut self) {
        self.store.data().ctx.metrics.count_entry(&self.shell.name);
        self.store.data_mut().begin_entry();
        self.store.set_epoch_deadline(1);
    }

    /// Records the size of the guest's linear memory.
    fn record_memory(&mut self) {
        if let Some(exports) = &self.exports {
            let bytes = exports.memory.data_size(&self.store);
            self.store
                .data()
                .ctx
                .metrics
                .set_memory(&self.shell.name, bytes);
        }
    }

    fn entry_error(&self, err: wasmtime::Error, during: &'static str) -> ModuleOutcome {
        guest_failure(&err, during, self.store.data().entry_deadline).unwrap_or_else(|| {
            ModuleOutcome::Failed(ModuleError::Trap {
                during,
                reason: trap_reason(&err),
                backtrace: format!("{err:?}"),
            })
        })
    }

    /// Aborts every live op and logs what was cancelled.
    fn finish(&mut self) {
        cancel_ops(&mut self.store.data_mut().ops, &self.shell.name);
    }
}

impl Suspended {
    /// Waits, without an instance, for a completion of a live op or the end of the module.
    async fn sleep(&mut self) -> Wake {
        loop {
            if let Some(outcome) = self.shell.ended_by_phase(self.state.asked_for_stop) {
                return Wake::Ended(outcome);
            }
            tokio::select! {
                biased;
                changed = self.shell.phase.changed(), if self.shell.phase_open => {
                    self.shell.phase_open = changed.is_ok();
                }
                delivery = self.shell.completions.recv() => {
                    // The host state holds a sender, so the channel cannot close.
                    let Some(delivery) = delivery else { continue };
                    if self.state.ops.is_live(delivery.op) {
                        return Wake::Delivery(delivery);
                    }
                    tracing::trace!(op = delivery.op, "dropping a completion of a cancelled op");
                }
            }
        }
    }

    /// Re-creates the instance from the snapshot (see [`crate::suspend`]); the file is
    /// removed. On failure, the module to finish (if the host state survived) and its
    /// outcome.
    async fn resume(
        self,
        cx: &ModuleContext<'_>,
        pre: &InstancePre<HostState>,
    ) -> Result<Running, Box<ResumeFailed>> {
        let started = Instant::now();
        let Suspended {
            state,
            snapshot,
            since,
            mut shell,
        } = self;
        let name = shell.name.clone();
        let metrics = state.ctx.metrics.clone();
        let Some(layout) = shell.idle.as_ref().map(|idle| idle.layout.clone()) else {
            return Err(Box::new(ResumeFailed {
                outcome: ModuleOutcome::Failed(ModuleError::Internal(
                    "a suspended module has no snapshot layout".into(),
                )),
                running: None,
            }));
        };
        let mut store = new_store(cx.engine, state);
        let failed = |store, shell, why: String| {
            metrics.resumed(&name, None);
            let failed = Running {
                store,
                instance: None,
                exports: None,
                shell,
            };
            Err(Box::new(ResumeFailed {
                outcome: ModuleOutcome::Failed(ModuleError::Resume(why)),
                running: Some(failed),
            }))
        };
        store.data_mut().begin_entry();
        store.set_epoch_deadline(1);
        let instance = match pre.instantiate_async(&mut store).await {
            Ok(instance) => instance,
            Err(err) => return failed(store, shell, format!("instantiating again: {err:?}")),
        };
        let restored = tokio::task::spawn_blocking(move || {
            let mut store = store;
            let restored = std::panic::catch_unwind(AssertUnwindSafe(|| {
                suspend::restore(&mut store, &instance, &layout, &snapshot)
            }))
            .unwrap_or_else(|_| Err("the snapshot reader panicked".into()));
            // Removes the file.
            drop(snapshot);
            (store, restored)
        })
        .await;
        let mut store = match restored {
            Ok((store, Ok(()))) => store,
            Ok((store, Err(why))) => return failed(store, shell, why),
            Err(join) => {
                metrics.resumed(&name, None);
                return Err(Box::new(ResumeFailed {
                    outcome: ModuleOutcome::Failed(ModuleError::Internal(format!(
                        "the snapshot task failed: {join}"
                    ))),
                    running: None,
                }));
            }
        };
        let exports = match GuestExports::resolve(&mut store, &instance) {
            Ok(exports) => exports,
            Err(e) => return failed(store, shell, e.to_string()),
        };
        let took = started.elapsed();
        let suspended_for = since.elapsed();
        if let Some(idle) = &mut shell.idle {
            idle.threshold.resumed_after(suspended_for);
        }
        metrics.resumed(&name, Some(took));
        tracing::debug!(
            "module `{name}` resumed after {suspended_for:?} suspended, in {took:?}; idle threshold now {:?}",
            shell.idle.as_ref().map(|idle| idle.threshold.current())
        );
        let mut running = Running {
            store,
            instance: Some(instance),
            exports: Some(exports),
            shell,
        };
        running.record_memory();
        Ok(running)
    }

    /// Aborts every live op of the suspended module; its snapshot is removed.
    fn finish(&mut self) {
        self.state.ctx.metrics.resumed(&self.shell.name, None);
        cancel_ops(&mut self.state.ops, &self.shell.name);
    }
}

/// Aborts every live op in `ops` and logs what was cancelled.
fn cancel_ops(ops: &mut OpTable, name: &str) {
    let counts = ops.cancel_all();
    if counts.total() > 0 {
        tracing::info!("cancelled {counts} of module `{name}`");
    }
}

/// The trap of a failed guest call in one line.
fn trap_reason(err: &wasmtime::Error) -> String {
    match err.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::UnreachableCodeReached) => {
            "wasm `unreachable` instruction executed (a Rust panic aborts this way; see its message \
             in the module's stderr)"
                .to_owned()
        }
        Some(trap) => trap.to_string(),
        None => err.root_cause().to_string(),
    }
}

/// Recognises the ways a guest call ends that are not plain traps: `proc_exit`, a bad ABI
/// call, an entry deadline overrun.
fn guest_failure(
    err: &wasmtime::Error,
    during: &'static str,
    deadline: Duration,
) -> Option<ModuleOutcome> {
    if let Some(exit) = err.downcast_ref::<I32Exit>() {
        return Some(ModuleOutcome::Exited(exit.0));
    }
    if let Some(bad) = err.downcast_ref::<BadAbiCall>() {
        return Some(ModuleOutcome::Failed(ModuleError::BadAbiCall(bad.clone())));
    }
    if let Some(over) = err.downcast_ref::<MemoryLimitExceeded>() {
        return Some(ModuleOutcome::Failed(ModuleError::MemoryLimit(*over)));
    }
    if err.downcast_ref::<EntryDeadlineExceeded>().is_some() {
        return Some(ModuleOutcome::Failed(ModuleError::DeadlineExceeded {
            during,
            deadline,
        }));
    }
    None
}
