//! One running module (SPEC.md, "Lifecycle"): instantiate, check the ABI version, call
//! `_start`, then deliver completions until the guest exits or the host ends it.
//!
//! # The module loop
//!
//! The module's task owns its `Store`, so the guest is entered by this task only, and never
//! twice at once. Imports (see [`crate::runtime::abi`]) only register ops and spawn their work tasks;
//! work tasks queue `(op, frame)` `QueuedCompletion`s into the module's channel. The loop takes them
//! one at a time, skips those of ops that are no longer live (cancelled), retires an op on its
//! final completion, and for each one calls `kube_wasm_alloc(len)`, copies the frame into the
//! buffer and calls `kube_wasm_complete(op, ptr, len)`. Completions of one op are produced by
//! one task into one FIFO channel, so they arrive in order, and none is lost or overwritten.
//!
//! One loop serves the module in both its states, resident and suspended: each turn it ends
//! the module if the host's stop phase says so, then waits, in this order of priority, for
//! the stop phase to change, for a completion, and (only a resident module of a running host
//! with a suspend policy) for its idle threshold to pass since its last entry. The resident
//! module is given the completion; the suspended one is resumed first.
//!
//! Every entry into the guest gets a deadline (see [`Settings::entry_deadline`]): the epoch
//! ticker interrupts the guest every tick, it yields to tokio, and once the budget is spent
//! the entry traps and the module is ended.
//!
//! Whatever way the module ends, all its live ops are aborted: their requests and watches are
//! dropped, which closes them upstream.
//!
//! A module takes an [instance slot](crate::runtime::instance_slots) before its instance
//! is made — at its start and at each resume — and gives it back with its `Store`: when it
//! is suspended or ends. While it waits for one, the stop phase can still end it.
//!
//! # Idle stacks
//!
//! A module that has not been entered (`_start`, or a resume with the delivery it is for)
//! for the host's [`Settings::release_idle_stacks`](crate::Settings::release_idle_stacks)
//! releases, once, its fiber stack (see [`crate::runtime::fiber_stacks`]) and, if resident,
//! the dead pages of its shadow stack (see [`crate::runtime::shadow_stack`]): anonymous
//! memory the kernel cannot drop on its own.
//!
//! # Unmapped modules
//!
//! A module holds its compiled module (see [`compiled`]) from its start while its `Store`
//! exists, and lets go when it is suspended or ends. A compiled module from the cache that
//! no module holds is dropped, with its mapping and the metadata wasmtime keeps on the heap,
//! and mapped again from its cache file by the next module to start or resume; so a kind
//! of module whose instances are all suspended costs no more than their snapshots and host
//! state.
//!
//! # Suspended modules
//!
//! A module with a [`SuspendPolicy`](crate::runtime::suspend::SuspendPolicy) that has not been entered
//! for its idle threshold, with no completion waiting and no answer to its own request due
//! (under memory pressure: none due for long), is suspended (see
//! [`crate::runtime::suspend`]): the loop snapshots it and drops its `Store`, keeping the host state, then waits on the same
//! queue and stop phase. A snapshot that cannot be written leaves it resident. A completion
//! for a live op restores it and is delivered; a stop request ends it exactly as it ends a
//! resident module.
//!
//! Timers are foreseen: a module whose live ops all stand waiting (timers, watches, the stop
//! signal, streams) counts its idleness from its last unforeseen wake-up, not from its last
//! timer, and is suspended between its timers when the next is far enough; the loop resumes
//! it just ahead of its earliest timer, so the timer is delivered on time (see
//! [`IdleThreshold::suspend_at`] and [`ResumeAhead`]).
//! Such planned resumes, and resumes by a timer, do not stretch its idle threshold.
//!
//! # Func-ref profiles
//!
//! A module compiled from its instrumented form (see [`crate::runtime::func_refs`]) reports
//! the table slots it calls through into its wasm's profile, which is written
//! [`WRITE_AFTER`](crate::runtime::func_refs::profile::WRITE_AFTER) after it started, or
//! when it ends other than by failing, whichever comes first.
//!
//! [`Settings::entry_deadline`]: crate::Settings::entry_deadline

mod compiled;
mod context;
mod deliver;
mod entry;
mod loaded;
pub(crate) mod outcome;
mod resident;
mod shell;
mod suspended;

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::Instrument as _;

use crate::runtime::fiber_stacks::StackOwner;
use crate::runtime::memory_cap::MemoryCap;
use crate::runtime::ops::{OpKind, OpTable, QueuedCompletion};
use crate::runtime::quota::{ByteBudget, LogGate, WarnThrottle};
use crate::runtime::state::{Access, HostState, OpContext};
use crate::runtime::stop::StopHandle;
use crate::runtime::suspend::{IdleThreshold, ResumeAhead, Suspendable};
use crate::runtime::wasi;
use crate::upstream::watch_cache::ModuleWatches;
use compiled::Compiled;
use entry::new_store;
use resident::Running;
use shell::{Idle, Shell, StackRelease, Wake};
use suspended::{Suspend, Suspended, suspend};

pub(crate) use context::ModuleContext;
pub(crate) use entry::EntryDeadlineExceeded;
pub use loaded::LoadedModule;
pub use outcome::{EndReason, ModuleError, ModuleOutcome};

/// Runs `module` with `cx` until it exits or is ended, and logs how it ended.
pub(crate) async fn run_module(
    cx: &ModuleContext<'_>,
    module: LoadedModule,
    stop: &StopHandle,
) -> ModuleOutcome {
    let name: Arc<str> = module.name().into();
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
    let compiled = module.compiled().clone();
    let held = match compiled.hold_async().await {
        Ok(held) => held,
        Err(err) => return ModuleOutcome::Failed(err),
    };
    let options = module.options();
    let namespace = options
        .namespace
        .as_deref()
        .unwrap_or(cx.identities.own().default_namespace());
    let Some(upstream) = cx.identities.upstream_for(options.service_account.as_ref()) else {
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
    let quotas = options.quotas;
    let log_gate = Arc::new(LogGate::new(
        &name,
        quotas.log_lines_per_second,
        cx.metrics.clone(),
    ));
    let state = HostState {
        name: name.clone(),
        // The environment is built in place: a local would be kept in this task for the
        // module's whole life.
        wasi: wasi::module_wasi(
            &name,
            &options.args,
            &wasi::module_env(
                &name,
                namespace,
                cx.identities.own().cluster_url(),
                cx.env.iter().chain(&options.env),
            ),
            cx.output,
            log_gate,
        ),
        memory_cap: MemoryCap::new(options.memory_limit),
        ops: OpTable::new(),
        streams: Default::default(),
        refusals: VecDeque::new(),
        abi_minor: 0,
        ctx: Arc::new(OpContext {
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
            quotas,
            budget: ByteBudget::new(quotas.buffered_bytes),
            warnings: Arc::new(WarnThrottle::default()),
        }),
        asked_for_stop: false,
        entry_ticks: 0,
        entry_tick_budget: cx.entry_tick_budget,
        entry_deadline: cx.entry_deadline,
        func_ref_profile: module.func_ref_profile().cloned(),
        idle: Default::default(),
        reactor: false,
        wake: None,
    };
    let idle = match (options.suspend, module.suspendable()) {
        (None, _) => None,
        (Some(policy), Suspendable::Yes(layout)) => Some(Idle {
            layout: layout.clone(),
            threshold: IdleThreshold::new(policy),
            ahead: ResumeAhead::default(),
            cost: cx.suspend_cost.clone(),
            pressure: cx.pressure.clone(),
        }),
        (Some(_), Suspendable::No(why)) => {
            tracing::warn!("module `{name}` will not be suspended when idle: {why}");
            None
        }
    };
    let mut shell = Shell {
        completions: rx,
        phase: stop.subscribe(),
        phase_open: true,
        name,
        idle,
        last_entry: Instant::now(),
        last_unforeseen: Instant::now(),
        release: cx.release_idle_stacks.map(|after| StackRelease {
            after,
            armed: false,
            last_exit: Instant::now(),
            shadow_stack: match module.suspendable() {
                Suspendable::Yes(layout) => layout.stack.clone(),
                Suspendable::No(_) => None,
            },
        }),
        stacks: StackOwner::default(),
    };
    let slot = match shell.take_slot(cx.slots, false).await {
        Ok(slot) => slot,
        Err(outcome) => return outcome,
    };
    let running = Box::new(Running {
        store: new_store(cx.engine, state),
        instance: None,
        exports: None,
        slot,
        held,
    });
    // The fiber stacks the module's stores allocate are counted to it, to be released
    // while it is idle.
    let stacks = shell.stacks.clone();
    let profile = module
        .func_ref_profile()
        .filter(|p| !p.is_written())
        .cloned();
    if let Some(profile) = &profile {
        profile.write_later();
    }
    let outcome = stacks.scope(live(cx, &compiled, &mut shell, running)).await;
    if let Some(profile) = profile
        && !matches!(outcome, ModuleOutcome::Failed(_))
    {
        // Start-up to end, as the next host will run it; a failure may have cut it short.
        let _ = tokio::task::spawn_blocking(move || profile.write()).await;
    }
    outcome
}

/// Runs a module from `_start` to its end, suspending and resuming it as its policy says,
/// and releases its ops at the end.
///
/// Starting, delivering, suspending and resuming are boxed: a task's future is as large as
/// its largest state, held for the module's whole life, while these states (wasmtime's
/// instantiation and calls, the snapshot's blocking tasks) are short. Boxed, their memory
/// exists only while they run: the module task's allocation went from 9.9 to 5.2 KiB per
/// module (heaptrack, 100 idle modules).
async fn live(
    cx: &ModuleContext<'_>,
    compiled: &Arc<Compiled>,
    shell: &mut Shell,
    mut running: Box<Running>,
) -> ModuleOutcome {
    let entered = shell.enter(cx.ticker);
    let started = Box::pin(running.start(shell)).await;
    shell.exit(entered);
    if let Err(outcome) = started {
        running.finish(shell);
        return outcome;
    }
    let mut state = State::Resident(running);
    let outcome = loop {
        if let Some(outcome) = shell.ended_by_phase(state.host_state().asked_for_stop) {
            break outcome;
        }
        if let Some(outcome) =
            shell.main_returned(&state.host_state().ops, state.host_state().reactor)
        {
            break outcome;
        }
        let due_at = state.due_at(shell);
        // `if let`, not `match`: the scrutinee is then not kept while the loop waits.
        let wake = if let Some(refusal) = state.next_refusal() {
            // A guest that answers each refusal with another op would otherwise keep
            // this task from ever yielding; like a channel receive, count against
            // tokio's cooperative budget.
            tokio::task::consume_budget().await;
            Wake::Completion(refusal)
        } else {
            let resident = matches!(state, State::Resident(_));
            shell.wait(due_at, shell.release_at(), resident).await
        };
        match wake {
            Wake::Look => {}
            Wake::Completion(delivery) => {
                let Some(kind) = state.host_state().ops.kind_of(delivery.op) else {
                    tracing::trace!(op = delivery.op, "dropping a completion of a cancelled op");
                    continue;
                };
                let entered = shell.enter(cx.ticker);
                let mut running = match state {
                    State::Resident(running) => running,
                    State::Suspended(suspended) => {
                        let planned =
                            matches!(kind, OpKind::Delay | OpKind::Wake) && shell.between_timers();
                        match Box::pin(suspended.resume(cx, compiled, shell, planned)).await {
                            Ok(resumed) => resumed,
                            Err(outcome) => return outcome,
                        }
                    }
                };
                let delivered = Box::pin(running.deliver(delivery, kind, shell)).await;
                shell.exit(entered);
                state = State::Resident(running);
                if let Err(outcome) = delivered {
                    break outcome;
                }
            }
            Wake::Due => {
                state = match state {
                    State::Resident(running) => match Box::pin(suspend(running, cx, shell)).await {
                        Suspend::Done(suspended) => State::Suspended(suspended),
                        Suspend::Resident(running) => State::Resident(running),
                        Suspend::Lost(outcome) => return outcome,
                    },
                    State::Suspended(suspended) => {
                        // Ahead of its timer: resumed now, the timer delivered when due.
                        let entered = shell.enter(cx.ticker);
                        let resumed = Box::pin(suspended.resume(cx, compiled, shell, true)).await;
                        shell.exit(entered);
                        match resumed {
                            Ok(running) => {
                                cx.metrics.count_resume_ahead();
                                State::Resident(running)
                            }
                            Err(outcome) => return outcome,
                        }
                    }
                }
            }
            Wake::ReleaseStacks => {
                if let State::Resident(running) = &mut state {
                    // SAFETY: the loop is between entries: every entry above ran to its end.
                    unsafe { running.release_shadow_stack(shell) }
                }
                // SAFETY: as above.
                unsafe { shell.release_idle() }
            }
        }
    };
    state.finish(shell);
    outcome
}

/// The state a module is in.
enum State {
    /// Its instance is in memory.
    Resident(Box<Running>),
    /// Its memory is in a snapshot file.
    Suspended(Box<Suspended>),
}

impl State {
    /// The module's host state.
    fn host_state(&self) -> &HostState {
        match self {
            State::Resident(running) => running.store.data(),
            State::Suspended(suspended) => suspended.state(),
        }
    }

    /// The next answer to an op a quota refused, if one waits (only a resident module, which
    /// just ran, can have one).
    fn next_refusal(&mut self) -> Option<QueuedCompletion> {
        match self {
            State::Resident(running) => running.store.data_mut().refusals.pop_front(),
            State::Suspended(_) => None,
        }
    }

    /// When the module's planned change is due if nothing wakes it first: a resident one's
    /// suspend, a suspended one's resume ahead of its earliest timer.
    fn due_at(&self, shell: &Shell) -> Option<Instant> {
        shell.idle.as_ref()?;
        let waits = self.host_state().ops.waits();
        match self {
            State::Resident(_) => shell.suspend_at(waits),
            State::Suspended(_) => shell.resume_at(waits),
        }
    }

    /// Aborts every live op of the module, whatever state it is in.
    fn finish(&mut self, shell: &Shell) {
        match self {
            State::Resident(running) => running.finish(shell),
            State::Suspended(suspended) => suspended.finish(shell),
        }
    }
}
