//! Fiber stacks that an idle module does not keep resident.
//!
//! A guest runs on a fiber whose stack wasmtime allocates (2 MiB, reserved) the first time a
//! `Store` calls into the guest, and keeps for the store's whole life to reuse on its next
//! call. The pages a call touched — about 24 KiB for a kube-runtime controller — stay
//! resident while the module waits for its next event, though between two entries the stack
//! holds nothing: each call starts a new fiber at the top of the stack.
//!
//! So the engine allocates its fiber stacks here ([`ReleasableStacks`], given to
//! `Config::with_host_stack`; only with on-demand instance allocation), each stack counted to
//! the module whose task allocated it (its [`StackOwner`], a task-local set by
//! [`StackOwner::scope`] around the module's task). When the module loop finds its module
//! idle — outside any entry — it [releases](StackOwner::release) its stacks:
//! `madvise(MADV_DONTNEED)` drops their pages, and the next call touches zero-filled pages
//! again (a few minor faults).
//!
//! Releasing a stack that a fiber is running on would destroy that fiber's frames, so only
//! the module's own task releases its stacks, and only between entries, when no call of its
//! store is in progress. A stack dropped by wasmtime (its store dropped: the module suspended,
//! restarted or ended) is unmapped under the same lock a release takes, so a release never
//! touches an address that is no longer the stack's.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::task::futures::TaskLocalFuture;
use wasmtime::{StackCreator, StackMemory};

use crate::runtime::page_size::page_size;

/// The engine's allocator of fiber stacks: anonymous mappings with a guard page below,
/// as wasmtime's own on-demand stacks, counted to the current task's [`StackOwner`]. Cheap
/// to clone: clones share their count of releases.
#[derive(Debug, Clone, Default)]
pub struct ReleasableStacks {
    releases: Arc<AtomicU64>,
}

impl ReleasableStacks {
    /// How many times one of its stacks was released (see [`StackOwner::release`]).
    pub fn releases(&self) -> u64 {
        self.releases.load(Ordering::Relaxed)
    }
}

/// One stack's mapping: `[base, base + guard)` is the inaccessible guard page,
/// `[base + guard, base + total)` the stack. `mapped` is false once it is unmapped.
#[derive(Debug)]
struct Mapping {
    base: usize,
    guard: usize,
    total: usize,
    mapped: Mutex<bool>,
    /// Its allocator's count of releases.
    releases: Arc<AtomicU64>,
}

impl Mapping {
    fn stack(&self) -> Range<usize> {
        self.base + self.guard..self.base + self.total
    }
}

/// A stack wasmtime holds: unmapped when wasmtime drops it.
#[derive(Debug)]
struct Stack(Arc<Mapping>);

impl Drop for Stack {
    fn drop(&mut self) {
        let mut mapped = self.0.mapped.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the mapping was made by `new_stack` and is unmapped only here, once.
        let unmapped = unsafe { libc::munmap(self.0.base as *mut libc::c_void, self.0.total) };
        if unmapped != 0 {
            tracing::warn!(
                "unmapping a fiber stack failed: {}",
                std::io::Error::last_os_error()
            );
        }
        *mapped = false;
    }
}

// SAFETY: `top` is the page-aligned end of a readable and writable range of `range().len()`
// bytes with an inaccessible guard page below it, mapped for as long as the `Stack` lives.
unsafe impl StackMemory for Stack {
    fn top(&self) -> *mut u8 {
        (self.0.base + self.0.total) as *mut u8
    }

    fn range(&self) -> Range<usize> {
        self.0.stack()
    }

    fn guard_range(&self) -> Range<*mut u8> {
        self.0.base as *mut u8..(self.0.base + self.0.guard) as *mut u8
    }
}

// SAFETY: every stack is page-aligned, has a guard page below it and is zero-filled (fresh
// anonymous memory).
unsafe impl StackCreator for ReleasableStacks {
    fn new_stack(&self, size: usize, _zeroed: bool) -> wasmtime::Result<Box<dyn StackMemory>> {
        let guard = page_size();
        let total = size
            .checked_next_multiple_of(guard)
            .and_then(|size| size.checked_add(guard))
            .ok_or_else(|| wasmtime::format_err!("a fiber stack of {size} bytes is too large"))?;
        // SAFETY: a new private anonymous mapping, no address given.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(wasmtime::format_err!(
                "mapping a fiber stack of {total} bytes: {}",
                std::io::Error::last_os_error()
            ));
        }
        let mapping = Arc::new(Mapping {
            base: base as usize,
            guard,
            total,
            mapped: Mutex::new(true),
            releases: self.releases.clone(),
        });
        let stack = Stack(mapping.clone());
        let writable = mapping.stack();
        // SAFETY: the range lies within the mapping just made.
        let protected = unsafe {
            libc::mprotect(
                writable.start as *mut libc::c_void,
                writable.len(),
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if protected != 0 {
            return Err(wasmtime::format_err!(
                "making a fiber stack writable: {}",
                std::io::Error::last_os_error()
            ));
        }
        let _outside_a_module = OWNER.try_with(|owner| owner.count(&mapping));
        Ok(Box::new(stack))
    }
}

tokio::task_local! {
    static OWNER: StackOwner;
}

/// The fiber stacks of one module's stores (one at a time: a suspended or restarted module
/// gets a new store): a cheap handle, cloned into the task-local of the module's task.
#[derive(Debug, Clone, Default)]
pub struct StackOwner(Arc<Mutex<Vec<Weak<Mapping>>>>);

impl StackOwner {
    /// Runs `task` (a module's task) with the stacks it allocates counted to this owner.
    ///
    /// Not an `async fn`: one would keep `task` twice for as long as it runs, as its
    /// argument and inside the future it awaits.
    pub fn scope<F: Future>(self, task: F) -> TaskLocalFuture<StackOwner, F> {
        OWNER.scope(self, task)
    }

    fn count(&self, mapping: &Arc<Mapping>) {
        let mut stacks = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        stacks.retain(|stack| stack.strong_count() > 0);
        stacks.push(Arc::downgrade(mapping));
    }

    /// Drops the resident pages of every stack still mapped; returns how many bytes of
    /// stacks it covered (resident or not).
    ///
    /// # Safety
    /// No fiber may be running or suspended on these stacks: call it only from the module's
    /// own task, between entries into its store (no `call_async` or instantiation of the
    /// store in progress), or its frames are replaced by zeros.
    pub unsafe fn release(&self) -> usize {
        let mut bytes = 0;
        self.for_each_mapped(|mapping, range| {
            // SAFETY: the range is mapped (`for_each_mapped` holds the lock `Stack::drop`
            // takes), and by this function's contract no fiber uses it.
            let advised = unsafe {
                libc::madvise(
                    range.start as *mut libc::c_void,
                    range.len(),
                    libc::MADV_DONTNEED,
                )
            };
            if advised == 0 {
                bytes += range.len();
                mapping.releases.fetch_add(1, Ordering::Relaxed);
            } else {
                tracing::debug!(
                    "releasing a fiber stack failed: {}",
                    std::io::Error::last_os_error()
                );
            }
        });
        bytes
    }

    /// Calls `f` with each of its stacks still mapped and the stack's range, holding the lock
    /// under which `Stack::drop` unmaps it; forgets the stacks already dropped.
    fn for_each_mapped(&self, mut f: impl FnMut(&Mapping, Range<usize>)) {
        let stacks: Vec<Arc<Mapping>> = {
            let mut stacks = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            stacks.retain(|stack| stack.strong_count() > 0);
            stacks.iter().filter_map(Weak::upgrade).collect()
        };
        for mapping in stacks {
            let mapped = mapping
                .mapped
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if *mapped {
                f(&mapping, mapping.stack());
            }
        }
    }

    /// Bytes of this owner's mapped stacks now resident (by `mincore`).
    #[cfg(test)]
    fn resident_bytes(&self) -> usize {
        let page = page_size();
        let mut resident = 0;
        self.for_each_mapped(|_, range| {
            let mut pages = vec![0u8; range.len().div_ceil(page)];
            // SAFETY: the range is mapped (`for_each_mapped` holds the lock), `pages` has a
            // byte per page.
            let ok = unsafe {
                libc::mincore(
                    range.start as *mut libc::c_void,
                    range.len(),
                    pages.as_mut_ptr(),
                )
            };
            if ok == 0 {
                resident += pages.iter().filter(|p| *p & 1 == 1).count() * page;
            }
        });
        resident
    }

    /// Stacks counted to this owner that are still mapped.
    #[cfg(test)]
    fn stacks(&self) -> usize {
        let mut count = 0;
        self.for_each_mapped(|_, _| count += 1);
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::{Config, Engine, Instance, Module, Store};

    /// `deep(n)` recurses n times: n frames of stack.
    const WAT: &str = r#"(module
        (func $deep (export "deep") (param i32) (result i32)
            (if (result i32) (i32.eqz (local.get 0))
                (then (i32.const 0))
                (else (i32.add (i32.const 1) (call $deep (i32.sub (local.get 0) (i32.const 1))))))))"#;

    fn engine_with(stacks: &ReleasableStacks) -> Engine {
        let mut config = Config::new();
        config.with_host_stack(Arc::new(stacks.clone()));
        Engine::new(&config).expect("engine")
    }

    fn engine() -> Engine {
        engine_with(&ReleasableStacks::default())
    }

    async fn call_deep(store: &mut Store<()>, instance: &Instance, n: i32) -> i32 {
        let deep = instance
            .get_typed_func::<i32, i32>(&mut *store, "deep")
            .expect("deep");
        deep.call_async(&mut *store, n).await.expect("call")
    }

    #[tokio::test]
    async fn a_released_stack_drops_its_pages_and_serves_the_next_call() {
        let stacks = ReleasableStacks::default();
        let engine = engine_with(&stacks);
        let module = Module::new(&engine, wat::parse_str(WAT).expect("wat")).expect("module");
        let owner = StackOwner::default();
        let mut store = Store::new(&engine, ());
        owner
            .clone()
            .scope(async {
                let instance = Instance::new_async(&mut store, &module, &[])
                    .await
                    .expect("instance");
                assert_eq!(call_deep(&mut store, &instance, 2000).await, 2000);
                assert_eq!(owner.stacks(), 1);
                let touched = owner.resident_bytes();
                assert!(
                    touched >= 16 << 10,
                    "{touched} bytes resident after a deep call"
                );

                // SAFETY: no call of the store is in progress.
                let covered = unsafe { owner.release() };
                assert!(covered >= 2 << 20, "{covered}");
                assert_eq!(owner.resident_bytes(), 0);
                assert_eq!(stacks.releases(), 1);

                assert_eq!(call_deep(&mut store, &instance, 3000).await, 3000);
                assert_eq!(owner.stacks(), 1, "the store reuses its stack");
                assert!(owner.resident_bytes() > 0);
            })
            .await;
        drop(store);
        assert_eq!(owner.stacks(), 0, "a dropped store's stack is unmapped");
        // SAFETY: no stack is left.
        assert_eq!(unsafe { owner.release() }, 0);
        assert_eq!(stacks.releases(), 1);
    }

    #[tokio::test]
    async fn only_stacks_allocated_within_the_scope_are_counted() {
        let engine = engine();
        let module = Module::new(&engine, wat::parse_str(WAT).expect("wat")).expect("module");
        let mut outside = Store::new(&engine, ());
        let instance = Instance::new_async(&mut outside, &module, &[])
            .await
            .expect("instance");
        assert_eq!(call_deep(&mut outside, &instance, 10).await, 10);
        let owner = StackOwner::default();
        let mut inside = Store::new(&engine, ());
        owner
            .clone()
            .scope(async {
                assert_eq!(
                    owner.stacks(),
                    0,
                    "the other store's stack is not this owner's"
                );
                let instance = Instance::new_async(&mut inside, &module, &[])
                    .await
                    .expect("instance");
                assert_eq!(call_deep(&mut inside, &instance, 10).await, 10);
            })
            .await;
        assert_eq!(owner.stacks(), 1);
        assert_eq!(call_deep(&mut outside, &instance, 20).await, 20);
        assert_eq!(owner.stacks(), 1);
    }
}
