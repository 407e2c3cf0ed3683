//! Figures that need no cluster: `.wasm` sizes, cold compile time, loading from the host's
//! cache of precompiled modules, and instantiation — all with the host's own engine
//! configuration ([`host_shim::runtime::engine::new_engine`]: Cranelift, epoch interruption,
//! copy-on-write memory images, instances allocated on demand) and cache ([`host_shim::runtime::cache`]).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use host_shim::runtime::cache::{ModuleCache, Source};
use host_shim::runtime::engine::new_engine;
use serde::{Deserialize, Serialize};
use wasmtime::{Linker, Module, Store};

use crate::stats;

/// One `.wasm` file's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WasmFigures {
    /// The program (file stem).
    pub name: String,
    /// Its size, in bytes.
    pub bytes: u64,
    /// Cold compile times (`Module::new`, no cache), in ms, one per repetition.
    pub compile_ms: Vec<f64>,
    /// Loads of the precompiled module from the host's cache (HMAC check reading the
    /// file, then mapping and deserialising it), in ms.
    pub cache_load_ms: Vec<f64>,
}

/// Instantiation of the ring controller from the precompiled module.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstantiateFigures {
    /// Instantiations timed.
    pub count: usize,
    /// Median, in ms.
    pub p50_ms: f64,
    /// 99th percentile, in ms.
    pub p99_ms: f64,
    /// Median of dropping the store afterwards (its instance, memory and fiber stack
    /// unmapped), in ms.
    pub drop_p50_ms: f64,
}

/// The static figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Statics {
    /// Per `.wasm` file.
    pub wasm: Vec<WasmFigures>,
    /// The ring controller's instantiation.
    pub instantiate: InstantiateFigures,
}

fn engine() -> anyhow::Result<wasmtime::Engine> {
    // As `host-shim run` makes it: no pool.
    new_engine(None, &Default::default()).map_err(|e| anyhow::anyhow!("creating the engine: {e:?}"))
}

/// Measures one `.wasm` file: its size, `repeats` cold compiles and cache loads (the Go
/// workload's module, which is no ring controller).
///
/// # Errors
/// If the file cannot be read or compiled, or the cache folder cannot be used.
pub async fn measure_one(
    path: &Path,
    cache_dir: &Path,
    repeats: usize,
) -> anyhow::Result<WasmFigures> {
    let engine = engine()?;
    let cache = ModuleCache::open(cache_dir)
        .with_context(|| format!("opening the module cache {}", cache_dir.display()))?;
    Ok(measure_file(&engine, &cache, cache_dir, path, repeats)?.0)
}

/// Measures every file of `wasm` (`repeats` compiles and cache loads each) and `instances`
/// instantiations of `ring` (which must be among them), caching into `cache_dir`.
///
/// # Errors
/// If a file cannot be read or compiled, or the cache folder cannot be used.
pub async fn measure(
    wasm: &[PathBuf],
    ring: &Path,
    cache_dir: &Path,
    repeats: usize,
    instances: usize,
) -> anyhow::Result<Statics> {
    let engine = engine()?;
    let cache = ModuleCache::open(cache_dir)
        .with_context(|| format!("opening the module cache {}", cache_dir.display()))?;
    let mut figures = Vec::new();
    let mut ring_module = None;
    for path in wasm {
        let (file, module) = measure_file(&engine, &cache, cache_dir, path, repeats)?;
        figures.push(file);
        if path == ring {
            ring_module = module;
        }
    }
    let module = ring_module.context("the ring controller's .wasm is not among the files")?;
    let instantiate = instantiate(&engine, &module, instances).await?;
    Ok(Statics {
        wasm: figures,
        instantiate,
    })
}

/// One file's size, `repeats` cold compiles and `repeats` loads from `cache` (each checked to
/// come from the cache), and the module the last load gave (`None` if `repeats` is 0).
fn measure_file(
    engine: &wasmtime::Engine,
    cache: &ModuleCache,
    cache_dir: &Path,
    path: &Path,
    repeats: usize,
) -> anyhow::Result<(WasmFigures, Option<Module>)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut compile_ms = Vec::new();
    for _ in 0..repeats {
        let t = Instant::now();
        Module::new(engine, &bytes)
            .map_err(|e| anyhow::anyhow!("compiling {}: {e:?}", path.display()))?;
        compile_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    // The first load stores the entry if it is not cached yet.
    cache
        .load_or_compile(engine, &bytes, |w| engine.precompile_module(w))
        .map_err(|e| anyhow::anyhow!("caching {}: {e:?}", path.display()))?;
    let mut cache_load_ms = Vec::new();
    let mut module = None;
    for _ in 0..repeats {
        let t = Instant::now();
        let loaded = cache
            .load_or_compile(engine, &bytes, |w| engine.precompile_module(w))
            .map_err(|e| anyhow::anyhow!("loading {}: {e:?}", path.display()))?;
        let took = t.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(
            loaded.source == Source::Cached,
            "{} was not served from the cache {}",
            path.display(),
            cache_dir.display()
        );
        cache_load_ms.push(took);
        module = Some(loaded.module);
    }
    let figures = WasmFigures {
        name: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        bytes: bytes.len() as u64,
        compile_ms,
        cache_load_ms,
    };
    Ok((figures, module))
}

/// Times `count` instantiations of `module` from one pre-instantiation, each into a fresh
/// store (created outside the timing; its drop timed apart). The imports (WASI and the kube-wasm ABI)
/// are stubs: instantiating does not call them, so this is the cost of the instance itself.
async fn instantiate(
    engine: &wasmtime::Engine,
    module: &Module,
    count: usize,
) -> anyhow::Result<InstantiateFigures> {
    let mut linker = Linker::<()>::new(engine);
    linker
        .define_unknown_imports_as_traps(module)
        .map_err(|e| anyhow::anyhow!("stubbing the imports: {e:?}"))?;
    let pre = linker
        .instantiate_pre(module)
        .map_err(|e| anyhow::anyhow!("pre-instantiating: {e:?}"))?;
    let mut times = Vec::with_capacity(count);
    let mut drops = Vec::with_capacity(count);
    for _ in 0..count {
        let mut store = Store::new(engine, ());
        store.set_epoch_deadline(u64::MAX / 2);
        let t = Instant::now();
        pre.instantiate_async(&mut store)
            .await
            .map_err(|e| anyhow::anyhow!("instantiating: {e:?}"))?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        drop(store);
        drops.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(InstantiateFigures {
        count,
        p50_ms: stats::median(&times).unwrap_or_default(),
        p99_ms: stats::percentile(&times, 99.0).unwrap_or_default(),
        drop_p50_ms: stats::median(&drops).unwrap_or_default(),
    })
}
