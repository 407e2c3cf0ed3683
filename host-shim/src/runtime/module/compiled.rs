//! A compiled module that stays in memory only while an instance holds it.
//!
//! A module deserialised from the cache is a mapping of its `.cwasm` file and, on the heap,
//! the metadata wasmtime reads from it: the module's functions, tables and types, about
//! 120 KiB for a kube-rs controller (heaptrack of the mixed fleet, suspended: 2.2 of its
//! 4.4 MB of live heap for 18 kinds). A kind whose every instance is suspended, or ended,
//! runs none of it until one comes back. So when the last instance lets go ([`Held`] is
//! dropped: a suspended module's `Store` is gone), the module is dropped, with its mapping
//! and its metadata; the next instance to need it maps the same file again — the handle
//! the cache checked when it first opened it, kept open, so nothing is read or checked again
//! and a replaced entry in the cache folder changes nothing — and deserialises the metadata
//! again, on a blocking thread: about 0.5 ms more for a resume that finds no other instance
//! of its kind in memory (one ring module; the book's levers page, "Dropped compiled
//! modules"). A module is in memory from its loading until its first instance lets go.
//!
//! A module compiled in memory (no cache, or an entry that could not be stored) has no file
//! to come back from and stays in memory for the host's life.

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use wasmtime::{Engine, InstancePre, Linker, Module};

use super::outcome::ModuleError;
use crate::runtime::abi::exports::check_imports;
use crate::runtime::state::HostState;

/// One distinct compiled module of the host, shared by every module loaded from the same
/// wasm: what it needs to map the module again, and the module while an instance holds it.
pub(crate) struct Compiled {
    engine: Engine,
    linker: Arc<Linker<HostState>>,
    /// The checked cache file the module maps; `None`: compiled in memory, never dropped.
    file: Option<File>,
    /// Why it can never be instantiated (its imports), found when it was loaded.
    broken: Option<ModuleError>,
    slot: Mutex<Slot>,
    /// Times the module was mapped again after being dropped.
    loads: AtomicU64,
}

/// The module in memory, and how many hold it.
struct Slot {
    mapped: Option<Arc<Mapped>>,
    holders: usize,
}

/// The module, pre-instantiated, while it is in memory.
struct Mapped {
    pre: InstancePre<HostState>,
}

impl Mapped {
    /// `module` with its imports resolved against `linker`.
    fn new(module: &Module, linker: &Linker<HostState>) -> Result<Self, ModuleError> {
        check_imports(module)?;
        let pre = linker
            .instantiate_pre(module)
            .map_err(|e| ModuleError::Instantiate(format!("{e:?}")))?;
        Ok(Self { pre })
    }
}

/// Why the module could not be mapped again.
fn mapping_failed(why: impl std::fmt::Display) -> ModuleError {
    ModuleError::Internal(format!("mapping the module again: {why}"))
}

/// An instance's hold on a [`Compiled`] module: the module stays in memory while one lives.
pub(crate) struct Held {
    compiled: Arc<Compiled>,
    mapped: Arc<Mapped>,
}

impl Held {
    /// The module with its imports resolved, to instantiate.
    pub(crate) fn pre(&self) -> &InstancePre<HostState> {
        &self.mapped.pre
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.compiled.let_go();
    }
}

impl Compiled {
    /// `module`, in memory until no instance holds it if `file` (the cache file it maps, see
    /// [`crate::runtime::cache::Deserialised`]) can map it again; its imports resolved
    /// against `linker` now (a failure is kept: every instance fails with it).
    pub(crate) fn new(
        engine: &Engine,
        linker: &Arc<Linker<HostState>>,
        module: &Module,
        file: Option<File>,
    ) -> Arc<Self> {
        let (mapped, broken) = match Mapped::new(module, linker) {
            Ok(mapped) => (Some(Arc::new(mapped)), None),
            Err(err) => (None, Some(err)),
        };
        Arc::new(Self {
            engine: engine.clone(),
            linker: linker.clone(),
            file,
            broken,
            slot: Mutex::new(Slot { mapped, holders: 0 }),
            loads: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        // Every update leaves the slot consistent; a panic elsewhere cannot break it.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds the module, mapping it again first if no one held it. Mapping is CPU and
    /// page-fault work of about a millisecond; [`Compiled::hold_async`] does it on a
    /// blocking thread.
    ///
    /// # Errors
    /// Why the module cannot be instantiated ([`ModuleError::Instantiate`], or the import
    /// check's error), or why it could not be mapped again ([`ModuleError::Internal`]).
    pub(crate) fn hold(self: &Arc<Self>) -> Result<Held, ModuleError> {
        self.check()?;
        let mut slot = self.lock();
        let mapped = match &slot.mapped {
            Some(mapped) => mapped.clone(),
            None => {
                let mapped = Arc::new(self.map_again()?);
                slot.mapped = Some(mapped.clone());
                mapped
            }
        };
        Ok(self.held(&mut slot, mapped))
    }

    /// [`Compiled::hold`], mapping the module on a blocking thread if it must be. Never
    /// waits for the slot's lock on the caller's thread: while another instance maps the
    /// module, this one waits for it on a blocking thread too.
    pub(crate) async fn hold_async(self: &Arc<Self>) -> Result<Held, ModuleError> {
        self.check()?;
        if let Some(held) = self.hold_if_mapped() {
            return Ok(held);
        }
        let compiled = self.clone();
        tokio::task::spawn_blocking(move || compiled.hold())
            .await
            .map_err(mapping_failed)?
    }

    /// Holds the module if it is in memory and its lock is free now.
    fn hold_if_mapped(self: &Arc<Self>) -> Option<Held> {
        let mut slot = match self.slot.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        let mapped = slot.mapped.clone()?;
        Some(self.held(&mut slot, mapped))
    }

    /// Why the module can never be instantiated, if it cannot.
    fn check(&self) -> Result<(), ModuleError> {
        self.broken.clone().map_or(Ok(()), Err)
    }

    /// One more holder of `mapped`, the module in `slot`.
    fn held(self: &Arc<Self>, slot: &mut Slot, mapped: Arc<Mapped>) -> Held {
        slot.holders += 1;
        Held {
            compiled: self.clone(),
            mapped,
        }
    }

    fn map_again(&self) -> Result<Mapped, ModuleError> {
        let started = std::time::Instant::now();
        let file = self
            .file
            .as_ref()
            .ok_or_else(|| mapping_failed("it has no file"))?
            .try_clone()
            .map_err(mapping_failed)?;
        // SAFETY: the cache checked this open file's artifact before it was first
        // deserialised, and entries are never rewritten in place (see
        // `crate::runtime::cache`).
        let module = unsafe { Module::deserialize_open_file(&self.engine, file) }
            .map_err(|e| mapping_failed(format!("{e:?}")))?;
        let mapped = Mapped::new(&module, &self.linker)?;
        self.loads.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            "compiled module mapped again from its cache file in {:?}",
            started.elapsed()
        );
        Ok(mapped)
    }

    /// One holder less; the module is dropped with the last one if it can be mapped again.
    fn let_go(&self) {
        let mut slot = self.lock();
        slot.holders = slot.holders.saturating_sub(1);
        let dropped = if slot.holders == 0 && self.file.is_some() {
            slot.mapped.take()
        } else {
            None
        };
        drop(slot);
        drop(dropped);
    }

    /// How many times the module was mapped again after no instance held it.
    pub(crate) fn loads(&self) -> u64 {
        self.loads.load(Ordering::Relaxed)
    }

    /// Whether the module is in memory now.
    pub(crate) fn is_mapped(&self) -> bool {
        self.lock().mapped.is_some()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    const WAT: &str =
        r#"(module (memory (export "memory") 1) (func (export "f") (result i32) i32.const 7))"#;

    /// The module of [`WAT`] deserialised from a cache-like file in `dir`, kept with another
    /// handle to that file (so it is dropped while no one holds it).
    fn from_file(engine: &Engine, dir: &std::path::Path) -> Arc<Compiled> {
        let path = dir.join("m.cwasm");
        let artifact = engine
            .precompile_module(&wat::parse_str(WAT).expect("wat"))
            .expect("precompiles");
        std::fs::write(&path, artifact).expect("write");
        let file = File::open(&path).expect("open");
        let kept = file.try_clone().expect("dup");
        // SAFETY: the artifact was just made by this engine.
        let module = unsafe { Module::deserialize_open_file(engine, file) }.expect("maps");
        Compiled::new(engine, &Arc::new(Linker::new(engine)), &module, Some(kept))
    }

    /// The module of `wat` compiled in memory.
    fn in_memory(engine: &Engine, wat: &str) -> Arc<Compiled> {
        let module = Module::new(engine, wat::parse_str(wat).expect("wat")).expect("compiles");
        Compiled::new(engine, &Arc::new(Linker::new(engine)), &module, None)
    }

    #[test]
    fn a_module_from_a_file_is_dropped_with_its_last_holder_and_mapped_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let compiled = from_file(&Engine::default(), dir.path());
        assert!(compiled.is_mapped(), "kept until an instance has held it");

        let first = compiled.hold().expect("holds");
        let second = compiled.hold().expect("holds");
        drop(first);
        assert!(compiled.is_mapped(), "one instance still holds it");
        drop(second);
        assert!(!compiled.is_mapped(), "dropped with its last holder");
        assert_eq!(compiled.loads(), 0);

        let again = compiled.hold().expect("mapped again");
        assert_eq!(compiled.loads(), 1);
        assert!(compiled.is_mapped());
        let exports: Vec<String> = again
            .pre()
            .module()
            .exports()
            .map(|e| e.name().to_owned())
            .collect();
        assert_eq!(exports, ["memory", "f"]);
        drop(again);
        assert!(!compiled.is_mapped());
    }

    #[test]
    fn a_module_compiled_in_memory_stays() {
        let compiled = in_memory(&Engine::default(), WAT);
        drop(compiled.hold().expect("holds"));
        assert!(compiled.is_mapped(), "nothing to map it again from");
        drop(compiled.hold().expect("holds"));
        assert_eq!(compiled.loads(), 0);
    }

    #[test]
    fn a_module_of_another_abi_never_holds() {
        let compiled = in_memory(
            &Engine::default(),
            r#"(module (import "kube_wasm_v9" "call" (func)))"#,
        );
        let err = compiled.hold().err().expect("refused");
        assert!(err.to_string().contains("kube_wasm_v9"), "{err}");
        assert!(!compiled.is_mapped());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn waiting_for_another_instances_mapping_does_not_block_a_worker() {
        let dir = tempfile::tempdir().expect("tempdir");
        let compiled = from_file(&Engine::default(), dir.path());
        drop(compiled.hold().expect("holds"));
        // As if another instance were mapping the module again.
        let mapping = compiled.lock();
        let waiting = tokio::spawn({
            let compiled = compiled.clone();
            async move { compiled.hold_async().await.map(drop) }
        });
        // The test's body is not on the one worker: plain sleeps, no tokio timer.
        std::thread::sleep(Duration::from_millis(50));
        let probe = tokio::spawn(async {});
        let deadline = Instant::now() + Duration::from_secs(2);
        while !probe.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(probe.is_finished(), "the worker waits for the lock");
        drop(mapping);
        waiting.await.expect("joins").expect("holds");
        assert_eq!(compiled.loads(), 1);
    }

    #[tokio::test]
    async fn mapping_again_happens_on_a_blocking_thread_and_gives_the_same_module() {
        let dir = tempfile::tempdir().expect("tempdir");
        let compiled = from_file(&Engine::default(), dir.path());
        drop(compiled.hold_async().await.expect("holds"));
        assert!(!compiled.is_mapped());
        let held = compiled.hold_async().await.expect("mapped again");
        assert_eq!(compiled.loads(), 1);
        assert_eq!(held.pre().module().exports().count(), 2);
    }
}
