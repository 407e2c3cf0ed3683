//! How many module instances may be resident at once.
//!
//! Each resident instance holds memory mappings of its own: its linear memory's reservation,
//! copy-on-write image and guard, and its fiber stack with its guard page. The kernel bounds
//! the mappings of one process (`vm.max_map_count`, 65,530 by default); past it every `mmap`
//! fails — the next instantiation, but also the host's own allocations, and Rust aborts the
//! process when an allocation fails. So the host hands out one [`InstanceSlot`] per resident
//! instance, as many as fit in the kernel's bound after a reserve for the host itself
//! ([`InstanceSlots::for_map_count`]), and a module that finds none waits — a new one before
//! its start, a suspended one before its resume — until another module is suspended or ends.
//! Modules that suspend when idle share the slots; the first wait is logged as a warning
//! naming the sysctl, and `kube_wasm_instance_slot_waits` counts the modules waiting now.
//! Under memory pressure no more instances of modules that suspend become resident than are
//! ([`InstanceSlots::press`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::{GaugeHold, Metrics};

/// Where the kernel's bound on one process's memory mappings is read.
pub const MAX_MAP_COUNT_PATH: &str = "/proc/sys/vm/max_map_count";

/// The kernel's default `vm.max_map_count`, assumed where [`MAX_MAP_COUNT_PATH`] cannot be
/// read.
pub const DEFAULT_MAX_MAP_COUNT: usize = 65_530;

/// The memory mappings one resident instance may take, with a margin: host-shim's test
/// `instance_slots` measures an instance's mappings and fails if they exceed this.
pub const MAPPINGS_PER_INSTANCE: usize = 8;

/// The mappings kept for the host itself (its threads, libraries, compiled modules, large
/// allocations): an eighth of the kernel's bound, and at least this many.
pub const HOST_RESERVE_MIN: usize = 4_096;

/// The slots of one host: a fair semaphore (modules get slots in the order they asked).
/// Cheap to clone: clones share the slots.
#[derive(Debug, Clone)]
pub struct InstanceSlots {
    semaphore: Arc<Semaphore>,
    total: usize,
    /// Why there are no more (for the warning): the kernel's bound or the host's setting.
    bound: Arc<str>,
    warned: Arc<AtomicBool>,
    metrics: Metrics,
    /// One permit per resident instance of a module that suspends when idle: as many as
    /// there can be, except under memory pressure (see [`press`](Self::press)).
    suspending: Arc<Semaphore>,
    /// While the host is under memory pressure: the permits of `suspending` taken out.
    pressed: Arc<Mutex<Option<usize>>>,
}

/// One resident instance's slot, given back when it is dropped (after the instance's
/// `Store`).
#[derive(Debug)]
pub struct InstanceSlot {
    _permit: OwnedSemaphorePermit,
    _suspending: Option<OwnedSemaphorePermit>,
}

impl InstanceSlots {
    /// `total` slots (at least 1); `bound` says where the number comes from, for the log.
    pub fn new(total: usize, bound: impl Into<Arc<str>>, metrics: Metrics) -> Self {
        let total = total.clamp(1, Semaphore::MAX_PERMITS);
        metrics.set_instance_slots(total);
        Self {
            semaphore: Arc::new(Semaphore::new(total)),
            total,
            bound: bound.into(),
            warned: Arc::default(),
            metrics,
            suspending: Arc::new(Semaphore::new(Semaphore::MAX_PERMITS)),
            pressed: Arc::default(),
        }
    }

    /// As many slots as fit in a process bound of `max_map_count` mappings: the bound less
    /// the host's reserve (an eighth, at least [`HOST_RESERVE_MIN`]), divided by
    /// [`MAPPINGS_PER_INSTANCE`]; at least 1.
    pub fn for_map_count(max_map_count: usize) -> usize {
        let reserve = (max_map_count / 8).max(HOST_RESERVE_MIN);
        (max_map_count.saturating_sub(reserve) / MAPPINGS_PER_INSTANCE).max(1)
    }

    /// The kernel's `vm.max_map_count`, or [`DEFAULT_MAX_MAP_COUNT`] if it cannot be read.
    pub fn kernel_max_map_count() -> usize {
        std::fs::read_to_string(MAX_MAP_COUNT_PATH)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(DEFAULT_MAX_MAP_COUNT)
    }

    /// The slots the kernel's bound allows.
    pub fn from_kernel(metrics: Metrics) -> Self {
        let max_map_count = Self::kernel_max_map_count();
        Self::new(
            Self::for_map_count(max_map_count),
            format!(
                "vm.max_map_count is {max_map_count}; raise it (sysctl -w vm.max_map_count=N) \
                 to keep more modules resident"
            ),
            metrics,
        )
    }

    /// How many instances may be resident at once.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Under memory pressure (`under`; see [`crate::runtime::suspend::pressure`]) no more
    /// instances of modules that suspend when idle become resident than are now — at least
    /// one at a time — so that a module of theirs starting or resuming waits until a resident
    /// one is suspended (which, under pressure, it is as soon as it is idle) or ends. Modules
    /// that never suspend are not held back: nothing would give them a slot back. `false`
    /// ends it. Repeating either is a no-op.
    pub fn press(&self, under: bool) {
        let mut pressed = self.pressed.lock().unwrap_or_else(PoisonError::into_inner);
        match (under, *pressed) {
            (true, None) => {
                let free = self.suspending.available_permits();
                let keep = usize::from(free >= Semaphore::MAX_PERMITS);
                *pressed = Some(self.suspending.forget_permits(free.saturating_sub(keep)));
            }
            (false, Some(taken)) => {
                self.suspending.add_permits(taken);
                *pressed = None;
            }
            _ => {}
        }
    }

    /// A slot now, if one is free, for a module that `suspends` when idle or not.
    pub fn try_acquire(&self, suspends: bool) -> Option<InstanceSlot> {
        let suspending = match suspends {
            true => Some(self.suspending.clone().try_acquire_owned().ok()?),
            false => None,
        };
        self.semaphore
            .clone()
            .try_acquire_owned()
            .ok()
            .map(|permit| InstanceSlot {
                _permit: permit,
                _suspending: suspending,
            })
    }

    /// A slot for module `name`, which `suspends` when idle or not, waiting (counted in the
    /// metrics) for one to be given back if none is free. Never fails: the semaphores are
    /// never closed.
    pub async fn acquire(&self, name: &str, suspends: bool) -> InstanceSlot {
        if let Some(slot) = self.try_acquire(suspends) {
            return slot;
        }
        let _waiting: GaugeHold = self.metrics.waiting_for_instance_slot();
        let suspending = match suspends {
            true => match self.suspending.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    tracing::debug!("module `{name}` waits for an instance slot: memory pressure");
                    match self.suspending.clone().acquire_owned().await {
                        Ok(permit) => Some(permit),
                        Err(_) => unreachable!("the slots' semaphores are never closed"),
                    }
                }
            },
            false => None,
        };
        let permit = match self.semaphore.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "all {} instance slots are taken: module `{name}` and those after it \
                         wait for a module to be suspended or to end ({})",
                        self.total,
                        self.bound
                    );
                } else {
                    tracing::debug!("module `{name}` waits for an instance slot");
                }
                match self.semaphore.clone().acquire_owned().await {
                    Ok(permit) => permit,
                    Err(_) => unreachable!("the slots' semaphores are never closed"),
                }
            }
        };
        InstanceSlot {
            _permit: permit,
            _suspending: suspending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_default_bound_leaves_the_host_an_eighth() {
        assert_eq!(InstanceSlots::for_map_count(65_530), (65_530 - 8_191) / 8);
        assert_eq!(
            InstanceSlots::for_map_count(262_144),
            (262_144 - 32_768) / 8
        );
        assert_eq!(InstanceSlots::for_map_count(10_000), (10_000 - 4_096) / 8);
        assert_eq!(InstanceSlots::for_map_count(100), 1);
    }

    #[tokio::test]
    async fn under_pressure_no_more_suspending_modules_become_resident_than_are() {
        let slots = InstanceSlots::new(4, "test", Metrics::new());
        let held = slots.try_acquire(true).expect("a slot");
        slots.press(true);
        slots.press(true);
        assert!(
            slots.try_acquire(true).is_none(),
            "no new resident instance"
        );
        let never_suspends = slots.try_acquire(false).expect("not held back");
        drop(held);
        let next = slots
            .try_acquire(true)
            .expect("a slot given back goes to the next");
        assert!(slots.try_acquire(true).is_none());
        drop(next);
        slots.press(false);
        slots.press(false);
        let all: Vec<_> = (0..4).filter_map(|_| slots.try_acquire(true)).collect();
        assert_eq!(
            all.len(),
            3,
            "every slot is back (one holds a module that never suspends)"
        );
        drop(all);
        drop(never_suspends);

        // Pressed with none held, modules still run, one at a time.
        slots.press(true);
        let one = slots.try_acquire(true).expect("one slot kept");
        assert!(slots.try_acquire(true).is_none());
        drop(one);
        slots.press(false);
        let all: Vec<_> = (0..5).filter_map(|_| slots.try_acquire(true)).collect();
        assert_eq!(all.len(), 4);
    }

    #[tokio::test]
    async fn a_module_waits_for_a_slot_given_back_and_is_counted_while_it_waits() {
        let metrics = Metrics::new();
        let slots = InstanceSlots::new(1, "test", metrics.clone());
        let first = slots.acquire("a", false).await;
        assert!(slots.try_acquire(false).is_none());
        let waiter = tokio::spawn({
            let slots = slots.clone();
            async move { slots.acquire("b", true).await }
        });
        while metrics.instance_slot_waits() == 0 {
            tokio::task::yield_now().await;
        }
        assert!(!waiter.is_finished());
        drop(first);
        let second = waiter.await.expect("the waiter gets the slot");
        assert_eq!(metrics.instance_slot_waits(), 0);
        assert!(slots.try_acquire(false).is_none());
        drop(second);
        assert!(slots.try_acquire(true).is_some());
    }
}
