//! The host: one wasmtime engine, one linker with WASI and the `kube_wasm_v1` imports, one
//! upstream client, and the settings every module runs with.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::{Engine, Linker};

use crate::engine::{self, EpochTicker};
use crate::module::{self, LoadedModule, ModuleError, ModuleOutcome};
use crate::output::OutputTarget;
use crate::state::{HostState, OpLimits};
use crate::stop::StopHandle;
use crate::upstream::Upstream;

/// How modules are run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Longest time one guest entry (`_start`, `kube_wasm_alloc` or `kube_wasm_complete`) may
    /// run before the module is ended. Measured in epoch ticks, so it is accurate to about
    /// one [`epoch_tick`](Self::epoch_tick).
    pub entry_deadline: Duration,
    /// How often the engine's epoch advances. Each tick, a running guest also yields to the
    /// tokio scheduler so other modules keep running.
    pub epoch_tick: Duration,
    /// Size limits of op results.
    pub limits: OpLimits,
    /// Extra environment variables for every module (`--env KEY=VALUE`).
    pub env: Vec<(String, String)>,
    /// Where module stdout and stderr go.
    pub output: OutputTarget,
    /// How many completions may wait for delivery per module before op tasks wait.
    pub completion_queue: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            entry_deadline: Duration::from_secs(10),
            epoch_tick: Duration::from_millis(100),
            limits: OpLimits::default(),
            env: Vec::new(),
            output: OutputTarget::Inherit,
            completion_queue: 256,
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
    pub(crate) linker: Linker<HostState>,
    pub(crate) upstream: Upstream,
    pub(crate) settings: Settings,
    _ticker: EpochTicker,
}

/// Runs kube-wasm modules against one API server. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    pub(crate) inner: Arc<HostInner>,
}

impl Host {
    /// A host sending every request through `upstream`.
    ///
    /// # Errors
    /// If the wasmtime engine cannot be created or the epoch ticker thread cannot start.
    pub fn new(upstream: Upstream, settings: Settings) -> anyhow::Result<Self> {
        let engine =
            engine::new_engine().map_err(|e| anyhow::anyhow!("creating the wasm engine: {e:?}"))?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_async(&mut linker, |state: &mut HostState| {
            &mut state.wasi
        })
        .map_err(|e| anyhow::anyhow!("linking WASI: {e:?}"))?;
        crate::abi::add_to_linker(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking the kube-wasm ABI: {e:?}"))?;
        let ticker = EpochTicker::start(&engine, settings.epoch_tick)?;
        Ok(Self {
            inner: Arc::new(HostInner {
                engine,
                linker,
                upstream,
                settings,
                _ticker: ticker,
            }),
        })
    }

    /// The settings modules run with.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The upstream API server.
    pub fn upstream(&self) -> &Upstream {
        &self.inner.upstream
    }

    /// Compiles the module file at `path` under `name`. CPU-bound: call it from a blocking
    /// thread for big modules.
    ///
    /// # Errors
    /// [`ModuleError::Compile`] if the file cannot be read or is not valid wasm.
    pub fn load_file(&self, name: &str, path: &Path) -> Result<LoadedModule, ModuleError> {
        let module = engine::compile_file(&self.inner.engine, path)
            .map_err(|e| ModuleError::Compile(format!("{}: {e:?}", path.display())))?;
        Ok(LoadedModule::new(name, module))
    }

    /// Compiles a module from wasm bytes under `name`.
    ///
    /// # Errors
    /// [`ModuleError::Compile`] if the bytes are not valid wasm.
    pub fn load_bytes(&self, name: &str, bytes: &[u8]) -> Result<LoadedModule, ModuleError> {
        let module = engine::compile_bytes(&self.inner.engine, bytes)
            .map_err(|e| ModuleError::Compile(format!("{e:?}")))?;
        Ok(LoadedModule::new(name, module))
    }

    /// Runs one module until it exits or is ended, following `stop`. Only this module is
    /// affected by whatever it does.
    pub async fn run_module(&self, module: LoadedModule, stop: &StopHandle) -> ModuleOutcome {
        module::run(self, module, stop).await
    }
}

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
