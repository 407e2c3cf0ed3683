//! The wasmtime engine: configuration, the epoch ticker that bounds each guest entry, and
//! module compilation.

use std::path::Path;
use std::time::Duration;

use wasmtime::{Config, Engine, EngineWeak, Module};

/// A wasmtime engine for kube-wasm modules: Cranelift, async calls (guests run on fibers
/// inside tokio tasks) and epoch interruption (so a guest looping inside one entry can be
/// stopped).
///
/// # Errors
/// If wasmtime rejects the configuration on this platform.
pub fn new_engine() -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config.epoch_interruption(true);
    Engine::new(&config)
}

/// Compiles the module at `path`. CPU-bound: call it from a blocking thread.
///
/// # Errors
/// If the file cannot be read or is not a valid wasm module.
pub fn compile_file(engine: &Engine, path: &Path) -> wasmtime::Result<Module> {
    Module::from_file(engine, path)
}

/// Compiles a module from wasm bytes.
///
/// # Errors
/// If the bytes are not a valid wasm module.
pub fn compile_bytes(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Module> {
    Module::new(engine, bytes)
}

/// Advances an engine's epoch every `tick` on its own OS thread, so that the tick goes on even
/// when every tokio worker is busy running a guest. The thread ends by itself once the engine
/// is dropped.
#[derive(Debug)]
pub struct EpochTicker {
    tick: Duration,
}

impl EpochTicker {
    /// Starts ticking `engine` every `tick`.
    ///
    /// # Errors
    /// If the OS refuses to start a thread.
    pub fn start(engine: &Engine, tick: Duration) -> std::io::Result<Self> {
        let weak: EngineWeak = engine.weak();
        std::thread::Builder::new()
            .name("kube-wasm-epoch".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(tick);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })?;
        Ok(Self { tick })
    }

    /// The tick period.
    pub fn tick(&self) -> Duration {
        self.tick
    }
}
