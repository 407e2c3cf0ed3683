//! The host: one wasmtime engine, one linker with WASI and the `kube_wasm_v1` imports, one
//! upstream client, and the settings every module runs with.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};
use wasmtime::{Engine, Linker};

use crate::backoff::Backoff;
use crate::metrics::Metrics;
use crate::runtime::cache::{Deserialised, ModuleCache};
use crate::runtime::compiler::Compiler;
use crate::runtime::engine::{self, EpochTicker, PoolSize};
use crate::runtime::fiber_stacks::ReleasableStacks;
use crate::runtime::file_digests::FileDigests;
use crate::runtime::func_refs::{self, Choice};
use crate::runtime::instance_slots::InstanceSlots;
use crate::runtime::module::outcome::{ModuleError, ModuleOutcome};
use crate::runtime::module::{self, LoadedModule, ModuleContext};
use crate::runtime::options::ModuleOptions;
use crate::runtime::output::OutputTarget;
use crate::runtime::state::HostState;
use crate::runtime::stop::StopHandle;
use crate::runtime::suspend::pressure::PressureSource;
use crate::runtime::suspend::{self, LazySnapshotDir, MemoryPressure, SuspendCost};
use crate::upstream::client::Upstream;
use crate::upstream::identity::Identities;
use crate::upstream::limits::OpLimits;
use crate::upstream::watch_cache::{CacheSettings, WatchCache};

/// How modules are run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Longest time one guest entry (`_start`, `kube_wasm_alloc` or `kube_wasm_complete`) may
    /// run before the module is ended. Measured in epoch ticks, so it is accurate to about
    /// one [`epoch_tick`](Self::epoch_tick).
    pub entry_deadline: Duration,
    /// How often the engine's epoch advances while a guest entry is in progress (between
    /// entries it does not; see [`EpochTicker`]). Each
    /// tick, a running guest also yields to the tokio scheduler so other modules keep running.
    pub epoch_tick: Duration,
    /// Size limits of op results.
    pub limits: OpLimits,
    /// Extra environment variables for every module (`--env KEY=VALUE`).
    pub env: Vec<(String, String)>,
    /// Where module stdout and stderr go.
    pub output: OutputTarget,
    /// How many completions may wait for delivery per module before op tasks wait.
    pub completion_queue: usize,
    /// Instances from a pooling allocator of this size; `None`: allocated on demand.
    pub pool: Option<PoolSize>,
    /// Where precompiled modules are cached (see [`crate::runtime::cache`]); `None`: compile every
    /// time. A folder that cannot be used is reported and compiling goes on without it.
    pub cache_dir: Option<PathBuf>,
    /// Restart delays of modules whose policy restarts them.
    pub backoff: Backoff,
    /// Share identical watches between modules (one upstream LIST+WATCH each, see
    /// [`crate::upstream::watch_cache`]) with these sizes; `None` (the default here; `host-shim run`
    /// shares unless told not to): every watch op is its own upstream watch.
    pub shared_watches: Option<CacheSettings>,
    /// The folder in which this host makes its private folder of snapshots of suspended
    /// modules (see [`crate::runtime::suspend`]); `None`: `suspended` inside
    /// [`cache_dir`](Self::cache_dir), else `kube-wasm-suspended` in the system's temporary
    /// folder. Created on the first suspend; if it cannot be, modules stay resident.
    pub suspend_dir: Option<PathBuf>,
    /// Where modules are compiled: in this process (the default here) or, as `host-shim run`
    /// does unless its manifest says `compileInChild: false`, in a child process (see
    /// [`crate::runtime::compiler`]).
    pub compiler: Compiler,
    /// Release an idle module's fiber stack (without a pool; see
    /// [`crate::runtime::fiber_stacks`]) and the dead pages of its shadow stack (see
    /// [`crate::runtime::shadow_stack`]) once it has not been entered for this long: anonymous
    /// memory, which the kernel cannot drop on its own. `None`: never. Default 2 s.
    pub release_idle_stacks: Option<Duration>,
    /// Whether a module's first run with a cache is instrumented to profile the func refs it
    /// calls through, and later compiles order them by that profile (see
    /// [`crate::runtime::func_refs`]); `false`: modules are compiled as they are. Default true.
    pub func_ref_profile: bool,
    /// At most this many module instances resident at once; a module beyond waits to start
    /// or resume until another is suspended or ends (see [`crate::runtime::instance_slots`]).
    /// `None` (the default): as many as the kernel's bound on memory mappings
    /// (`vm.max_map_count`) allows.
    pub max_resident: Option<usize>,
    /// The memory cgroup the host watches: while it is nearly at its limit, idle modules
    /// with a suspend policy are suspended at once instead of after their idle threshold
    /// (see [`crate::runtime::suspend::pressure`]). Default: the host process's own.
    pub memory_pressure: PressureSource,
}

/// How long a module must not have been entered before its stacks are released, unless the
/// host is told otherwise ([`Settings::release_idle_stacks`]): long enough that a module busy
/// with a stream of events keeps them, short enough that an idle fleet sheds them soon.
pub const DEFAULT_RELEASE_IDLE_STACKS: Duration = Duration::from_secs(2);

impl Default for Settings {
    fn default() -> Self {
        Self {
            entry_deadline: Duration::from_secs(10),
            epoch_tick: Duration::from_millis(100),
            limits: OpLimits::default(),
            env: Vec::new(),
            output: OutputTarget::Inherit,
            completion_queue: 256,
            pool: None,
            cache_dir: None,
            backoff: Backoff::default(),
            shared_watches: None,
            suspend_dir: None,
            compiler: Compiler::InProcess,
            release_idle_stacks: Some(DEFAULT_RELEASE_IDLE_STACKS),
            func_ref_profile: true,
            max_resident: None,
            memory_pressure: PressureSource::OwnCgroup,
        }
    }
}

impl Settings {
    /// The entry deadline in epoch ticks (at least 1).
    pub fn entry_tick_budget(&self) -> u64 {
        let tick = self.epoch_tick.as_nanos().max(1);
        let ticks = self.entry_deadline.as_nanos().div_ceil(tick);
        u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
    }
}

pub(crate) struct HostInner {
    pub(crate) engine: Engine,
    pub(crate) linker: Arc<Linker<HostState>>,
    pub(crate) upstream: Upstream,
    pub(crate) identities: Identities,
    pub(crate) settings: Settings,
    pub(crate) metrics: Metrics,
    pub(crate) watch_cache: Option<WatchCache>,
    cache: Option<ModuleCache>,
    /// Compiled modules by SHA-256 of their wasm: one per distinct wasm, shared by every
    /// module using it (its `Module` and `InstancePre` only while an instance holds it, if
    /// it came from the cache).
    compiled: Mutex<HashMap<[u8; 32], LoadedModule>>,
    /// Held while a module is compiled or read from the cache: one at a time (a compile
    /// already uses every core), so that N WasmControllers of one image compile it once.
    loading: Mutex<()>,
    /// The digests of the module files loaded, each hashed once while unchanged.
    file_digests: FileDigests,
    /// This host's folder of snapshots, made on the first suspend.
    snapshots: LazySnapshotDir,
    /// The engine's fiber stacks (unused with a pool).
    stacks: ReleasableStacks,
    /// Ticks the engine's epoch while a module is inside a guest entry.
    ticker: EpochTicker,
    /// One per resident instance.
    slots: InstanceSlots,
    /// Suspend and resume times of every module.
    suspend_cost: SuspendCost,
    /// Whether the host's memory cgroup is nearly full.
    pressure: MemoryPressure,
}

/// Runs kube-wasm modules against one API server. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    pub(crate) inner: Arc<HostInner>,
}

impl Host {
    /// A host sending every request through `upstream` (modules with a `service_account` cannot
    /// run on it: see [`Host::with_identities`]).
    ///
    /// # Errors
    /// If the wasmtime engine cannot be created, or the epoch ticker's thread cannot start.
    pub fn new(upstream: Upstream, settings: Settings) -> anyhow::Result<Self> {
        Self::with_identities(Identities::new(upstream), settings)
    }

    /// A host sending the requests of each module through the upstream of its identity.
    ///
    /// # Errors
    /// If the wasmtime engine cannot be created, or the epoch ticker's thread cannot start.
    pub fn with_identities(identities: Identities, settings: Settings) -> anyhow::Result<Self> {
        let upstream = identities.own().clone();
        let stacks = ReleasableStacks::default();
        let engine = engine::new_engine(settings.pool, &stacks)
            .map_err(|e| anyhow::anyhow!("creating the wasm engine: {e:?}"))?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_async(&mut linker, |state: &mut HostState| {
            &mut state.wasi
        })
        .map_err(|e| anyhow::anyhow!("linking WASI: {e:?}"))?;
        crate::runtime::idle::add_to_linker(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking the idle polls: {e:?}"))?;
        crate::runtime::abi::add_to_linker(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking the kube-wasm ABI: {e:?}"))?;
        func_refs::import::add_to_linker(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking the func-ref profile: {e:?}"))?;
        let ticker = EpochTicker::start(&engine, settings.epoch_tick)?;
        let cache = settings
            .cache_dir
            .as_deref()
            .and_then(|dir| match ModuleCache::open(dir) {
                Ok(cache) => Some(cache),
                Err(err) => {
                    tracing::warn!("not caching compiled modules: {err}");
                    None
                }
            });
        let snapshots = LazySnapshotDir::new(
            settings
                .suspend_dir
                .clone()
                .unwrap_or_else(|| suspend::default_base(settings.cache_dir.as_deref())),
        );
        let metrics = Metrics::new();
        let slots = match settings.max_resident {
            Some(n) => InstanceSlots::new(n, "the host's max_resident setting", metrics.clone()),
            None => InstanceSlots::from_kernel(metrics.clone()),
        };
        tracing::debug!("{} module instances may be resident at once", slots.total());
        let pressure = match settings.memory_pressure.cgroup() {
            Some(cgroup) => {
                tracing::debug!(?cgroup, "watching the memory cgroup for pressure");
                let slots = slots.clone();
                MemoryPressure::watch(cgroup, metrics.clone(), move |under| slots.press(under))
                    .context("starting the memory pressure thread")?
            }
            None => MemoryPressure::never(),
        };
        let watch_cache = settings
            .shared_watches
            .map(|sizes| WatchCache::new(sizes, settings.limits, metrics.clone()));
        Ok(Self {
            inner: Arc::new(HostInner {
                engine,
                linker: Arc::new(linker),
                upstream,
                identities,
                settings,
                metrics,
                watch_cache,
                cache,
                compiled: Mutex::new(HashMap::new()),
                loading: Mutex::new(()),
                file_digests: FileDigests::default(),
                snapshots,
                stacks,
                ticker,
                slots,
                suspend_cost: SuspendCost::default(),
                pressure,
            }),
        })
    }

    /// The settings modules run with.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The host's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The shared watches, if the host shares them.
    pub fn watch_cache(&self) -> Option<&WatchCache> {
        self.inner.watch_cache.as_ref()
    }

    /// Reads the sizes of the shared-watch cache and of the cache folder, and the HTTP/2
    /// connections and streams, into the metrics (at each scrape).
    pub fn refresh_cache_metrics(&self) {
        if let Some(watches) = &self.inner.watch_cache {
            self.inner.metrics.set_watch_cache(&watches.totals());
        }
        if let Some(pool) = self.inner.identities.http2_pool() {
            self.inner.metrics.set_http2(pool.stats());
        }
        let Some(cache) = &self.inner.cache else {
            return;
        };
        let (mut entries, mut bytes) = (0, 0);
        if let Ok(dir) = std::fs::read_dir(cache.dir()) {
            for entry in dir.flatten() {
                let is_entry = entry.path().extension().is_some_and(|e| e == "cwasm");
                if let (true, Ok(meta)) = (is_entry, entry.metadata()) {
                    entries += 1;
                    bytes += meta.len();
                }
            }
        }
        self.inner.metrics.set_cache(entries, bytes);
    }

    /// How many times an idle module's fiber stack was released (see
    /// [`Settings::release_idle_stacks`] and [`crate::runtime::fiber_stacks`]; never with a
    /// pool).
    pub fn fiber_stack_releases(&self) -> u64 {
        self.inner.stacks.releases()
    }

    /// The upstream API server, as the host's own identity.
    pub fn upstream(&self) -> &Upstream {
        &self.inner.upstream
    }

    /// Compiles the module file at `path` under `name` (see [`Host::load_bytes`]). The file
    /// is first hashed as it is read ([`FileDigests`]: once while it is unchanged, its pages
    /// dropped from the page cache after), so a wasm this host has loaded already (under another
    /// name) is not read into memory again, nor one whose check and compiled form the cache
    /// holds ([`suspend::check_record`]); otherwise it is read once loads before it are done,
    /// so that the host holds one module's bytes at a time. CPU-bound: call it from a
    /// blocking thread for big modules.
    ///
    /// # Errors
    /// [`ModuleError::Compile`] if the file cannot be read or is not valid wasm.
    pub fn load_file(&self, name: &str, path: &Path) -> Result<LoadedModule, ModuleError> {
        let in_file =
            |reason: String| ModuleError::Compile(format!("{}: {reason}", path.display()));
        let digest = self
            .inner
            .file_digests
            .digest(path)
            .map_err(|e| in_file(e.to_string()))?;
        if let Some(known) = self.known(&digest, name) {
            return Ok(known);
        }
        let _loading = self.loading();
        if let Some(known) = self.known(&digest, name) {
            return Ok(known);
        }
        let read_as_hashed = || {
            let bytes = std::fs::read(path).map_err(|e| wasmtime::format_err!("{e}"))?;
            if <[u8; 32]>::from(Sha256::digest(&bytes)) != digest {
                return Err(wasmtime::format_err!(
                    "the file changed while it was loaded"
                ));
            }
            Ok(Cow::Owned(bytes))
        };
        if let Some(loaded) = self.load_recorded(name, digest, &read_as_hashed) {
            return Ok(loaded);
        }
        let bytes = std::fs::read(path).map_err(|e| in_file(e.to_string()))?;
        self.load_new(name, &bytes).map_err(|err| match err {
            ModuleError::Compile(reason) => in_file(reason),
            other => other,
        })
    }

    /// The module of the wasm with SHA-256 `digest` from the cache without its bytes: if the
    /// cache holds the record of its check ([`suspend::check_record`]) and its entry in the
    /// form its func-ref choice names (not the instrumented one, whose profile needs the
    /// rewrite). `read` gives the bytes if the entry is missing and has to be compiled.
    /// `None` if any of that fails: the caller loads the module from its bytes.
    fn load_recorded<'a>(
        &self,
        name: &str,
        digest: [u8; 32],
        read: &dyn Fn() -> wasmtime::Result<Cow<'a, [u8]>>,
    ) -> Option<LoadedModule> {
        let cache = self.inner.cache.as_ref()?;
        let choice = self.func_ref_choice(cache, &digest);
        if choice == Choice::Instrument {
            return None;
        }
        let suspendable = suspend::check_record::read(cache, &digest)?;
        match self.compiled_form(cache, digest, &choice, read) {
            Ok(ready) => Some(self.register(name, digest, ready, suspendable, None)),
            Err(err) => {
                tracing::debug!(
                    module = name,
                    "compiling it from its record failed ({err:?}); loading it from its bytes"
                );
                None
            }
        }
    }

    /// The func-ref form to compile the wasm with SHA-256 `digest` in: as it is unless the
    /// host profiles func refs ([`Settings::func_ref_profile`]), else as `cache` says.
    fn func_ref_choice(&self, cache: &ModuleCache, digest: &[u8; 32]) -> Choice {
        if self.inner.settings.func_ref_profile {
            Choice::of(cache, &hex::encode(digest))
        } else {
            Choice::AsIs
        }
    }

    /// The wasm with SHA-256 `digest` compiled in the form `choice` names (not the
    /// instrumented one, whose profile comes from its rewrite): from `cache`, or checked,
    /// rewritten and compiled from `wasm()` (its bytes) if the entry is missing.
    fn compiled_form<'a>(
        &self,
        cache: &ModuleCache,
        digest: [u8; 32],
        choice: &Choice,
        wasm: &dyn Fn() -> wasmtime::Result<Cow<'a, [u8]>>,
    ) -> wasmtime::Result<Deserialised> {
        let inner = &self.inner;
        let (engine, compiler, pool) =
            (&inner.engine, &inner.settings.compiler, inner.settings.pool);
        cache.load_or_compile_source(engine, &source(digest, choice), || {
            let bytes = wasm()?;
            let prepared = suspend::check(&bytes).wasm();
            let plan = choice.plan(cache, &hex::encode(digest), &prepared);
            compiler.precompile(engine, pool, &plan.wasm)
        })
    }

    /// The module for wasm `bytes`, under `name` with default [`ModuleOptions`]. Each
    /// distinct wasm is compiled (or taken from the cache, see [`Settings::cache_dir`]) once
    /// per host and pre-instantiated; loading the same bytes again shares that work. A module
    /// from the cache is dropped while no instance of it is resident and mapped again from
    /// its cache file when one starts or resumes (see [`crate::runtime::module`], "Unmapped
    /// modules").
    /// Before compiling, the module is checked and, if it can be suspended, rewritten to
    /// export its mutable globals ([`suspend::prepare()`]); with a cache, it is then compiled
    /// in the form its [`func_refs::Choice`] gives (instrumented to profile the func refs it
    /// uses, or ordered by its profile; as it is if that form does not compile). The cache
    /// entry is named by the bytes given and that choice, so a cached module is found without
    /// either rewrite (the module is only checked): loading a large module from the cache
    /// holds no copy of it but `bytes`. CPU-bound on first use: call it from a blocking
    /// thread for big modules.
    ///
    /// # Errors
    /// [`ModuleError::Compile`] if the bytes are not valid wasm.
    pub fn load_bytes(&self, name: &str, bytes: &[u8]) -> Result<LoadedModule, ModuleError> {
        if let Some(known) = self.known(&Sha256::digest(bytes).into(), name) {
            return Ok(known);
        }
        let _loading = self.loading();
        self.load_new(name, bytes)
    }

    /// The module of the wasm with SHA-256 `digest`, under `name`, if this host has it.
    fn known(&self, digest: &[u8; 32], name: &str) -> Option<LoadedModule> {
        let compiled = self.compiled();
        Some(compiled.get(digest)?.named(name, ModuleOptions::default()))
    }

    /// Held while a module is read and compiled: one at a time.
    fn loading(&self) -> std::sync::MutexGuard<'_, ()> {
        self.inner
            .loading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`Host::load_bytes`] with the loading lock held.
    fn load_new(&self, name: &str, bytes: &[u8]) -> Result<LoadedModule, ModuleError> {
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        if let Some(known) = self.known(&digest, name) {
            return Ok(known);
        }
        let inner = &self.inner;
        let checked = suspend::check(bytes);
        let suspendable = checked.suspendable.clone();
        let (engine, compiler, pool) =
            (&inner.engine, &inner.settings.compiler, inner.settings.pool);
        let (ready, profile) = match &inner.cache {
            Some(cache) => {
                let choice = self.func_ref_choice(cache, &digest);
                let original = || Ok(Cow::Borrowed(bytes));
                let form = |choice: &Choice| self.compiled_form(cache, digest, choice, &original);
                // The instrumented form is made before the cache is asked: its profile needs
                // the slots the rewrite counts.
                let (ready, profile, rewritten) = match &choice {
                    Choice::AsIs => (form(&choice), None, false),
                    Choice::Ordered(_) => (form(&choice), None, true),
                    Choice::Instrument => {
                        let prepared = checked.wasm();
                        let plan = choice.plan(cache, &hex::encode(digest), &prepared);
                        match plan.profile {
                            Some(profile) => (
                                cache.load_or_compile_source(
                                    engine,
                                    &source(digest, &choice),
                                    || compiler.precompile(engine, pool, &plan.wasm),
                                ),
                                Some(profile),
                                true,
                            ),
                            None => (form(&Choice::AsIs), None, false),
                        }
                    }
                };
                match ready {
                    // A rewrite that does not compile: compiled as it is, so that an error
                    // is about the author's bytes.
                    Err(err) if rewritten => {
                        tracing::debug!(
                            module = name,
                            "its func-ref rewrite does not compile ({err:?}); compiling it as it is"
                        );
                        (form(&Choice::AsIs), None)
                    }
                    ready => (ready, profile),
                }
            }
            None => (
                compiler
                    .module(engine, pool, &checked.wasm())
                    .map(Deserialised::compiled),
                None,
            ),
        };
        let ready = ready.map_err(|e| ModuleError::Compile(format!("{e:?}")))?;
        if let Some(cache) = &inner.cache {
            suspend::check_record::write(cache, &digest, &suspendable);
        }
        Ok(self.register(name, digest, ready, suspendable, profile))
    }

    /// The module `ready` (the wasm with SHA-256 `digest`), pre-instantiated under `name`
    /// and kept for later loads of the same wasm.
    fn register(
        &self,
        name: &str,
        digest: [u8; 32],
        ready: Deserialised,
        suspendable: suspend::Suspendable,
        profile: Option<Arc<func_refs::FuncRefProfile>>,
    ) -> LoadedModule {
        let inner = &self.inner;
        tracing::debug!(module = name, source = ?ready.source, suspendable = ?suspendable, profiling = profile.is_some(), "module ready");
        let loaded = LoadedModule::new(
            name,
            &inner.engine,
            &ready.module,
            ready.file,
            &inner.linker,
            suspendable,
            profile,
        );
        self.compiled().insert(digest, loaded.clone());
        loaded
    }

    fn compiled(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], LoadedModule>> {
        // The map is only inserted into; a panic elsewhere cannot leave it inconsistent.
        self.inner
            .compiled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs one module until it exits or is ended, following `stop`. Only this module is
    /// affected by whatever it does.
    pub async fn run_module(&self, module: LoadedModule, stop: &StopHandle) -> ModuleOutcome {
        let inner = &*self.inner;
        let settings = &inner.settings;
        let cx = ModuleContext {
            engine: &inner.engine,
            ticker: &inner.ticker,
            identities: &inner.identities,
            metrics: &inner.metrics,
            watch_cache: inner.watch_cache.as_ref(),
            snapshots: &inner.snapshots,
            env: &settings.env,
            output: &settings.output,
            completion_queue: settings.completion_queue,
            limits: settings.limits,
            entry_deadline: settings.entry_deadline,
            entry_tick_budget: settings.entry_tick_budget(),
            release_idle_stacks: settings.release_idle_stacks,
            slots: &inner.slots,
            suspend_cost: &inner.suspend_cost,
            pressure: &inner.pressure,
        };
        module::run_module(&cx, module, stop).await
    }
}

/// What names the compiled form of the wasm with SHA-256 `digest` in the cache: the
/// digest and the func-ref choice (see [`ModuleCache::load_or_compile_source`]).
fn source(digest: [u8; 32], choice: &func_refs::Choice) -> [u8; 32] {
    let mut source = Sha256::new();
    source.update(digest);
    source.update(choice.key());
    source.finalize().into()
}

/// The SHA-256 of the file at `path`, hashed as it is read.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_budget_rounds_up() {
        let settings = Settings::default();
        assert_eq!(settings.entry_tick_budget(), 100);
        let settings = Settings {
            entry_deadline: Duration::from_millis(250),
            epoch_tick: Duration::from_millis(100),
            ..Settings::default()
        };
        assert_eq!(settings.entry_tick_budget(), 3);
        let settings = Settings {
            entry_deadline: Duration::ZERO,
            ..Settings::default()
        };
        assert_eq!(settings.entry_tick_budget(), 1);
    }
}
