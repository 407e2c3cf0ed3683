//! The modules the operator runs, one per WasmController: each with its own stop handle (a
//! child of the host's), so that one can be replaced or stopped alone, and the channel its
//! supervisor reports its run state on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::runtime::host::Host;
use crate::runtime::module::LoadedModule;
use crate::runtime::stop::StopHandle;
use crate::runtime::supervisor::{RunState, supervise_reporting};

/// A WasmController's identity: namespace and name.
pub type Key = (String, String);

/// What runs for one WasmController.
pub(crate) struct Running {
    /// The `metadata.generation` it was started for.
    pub(crate) generation: Option<i64>,
    /// The digest of the wasm it runs (`sha256:…`).
    pub(crate) digest: String,
    stop: StopHandle,
    task: JoinHandle<()>,
}

/// The modules of the operator. Cheap to clone.
#[derive(Clone)]
pub struct RunningModules {
    host_stop: StopHandle,
    running: Arc<Mutex<HashMap<Key, Running>>>,
}

impl RunningModules {
    /// No modules yet; each one started follows `host_stop`.
    pub fn new(host_stop: StopHandle) -> Self {
        Self {
            host_stop,
            running: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The generation and digest the module of `key` was started for, if it runs.
    pub(crate) fn started_for(&self, key: &Key) -> Option<(Option<i64>, String)> {
        self.lock()
            .get(key)
            .map(|r| (r.generation, r.digest.clone()))
    }

    /// Starts `module` for `key` under `host`, supervised with its restart policy.
    pub(crate) fn start(
        &self,
        key: Key,
        generation: Option<i64>,
        digest: String,
        host: &Host,
        module: LoadedModule,
    ) -> watch::Receiver<RunState> {
        let stop = self.host_stop.child();
        let (report, state) = watch::channel(RunState::default());
        let task = tokio::spawn({
            let host = host.clone();
            let stop = stop.clone();
            let name = module.name().to_owned();
            async move {
                let (outcome, _) = supervise_reporting(host, module, stop, &report).await;
                tracing::info!("module `{name}`: {outcome}");
            }
        });
        let previous = self.lock().insert(
            key,
            Running {
                generation,
                digest,
                stop,
                task,
            },
        );
        if let Some(previous) = previous {
            // The caller stops the old one first; this one must not be left behind.
            previous.stop.kill();
        }
        state
    }

    /// Stops the module of `key`, if it runs: a stop request, then `timeout` to exit, then
    /// it is ended. Returns once it has.
    pub(crate) async fn stop(&self, key: &Key, timeout: Duration) {
        let Some(running) = self.lock().remove(key) else {
            return;
        };
        stop_running(running, timeout).await;
    }

    /// The digests of the modules running now.
    pub(crate) fn digests(&self) -> std::collections::HashSet<String> {
        self.lock().values().map(|r| r.digest.clone()).collect()
    }

    /// Stops every module, each as [`stop`](Self::stop) does, concurrently.
    pub async fn stop_all(&self, timeout: Duration) {
        let all: Vec<Running> = self.lock().drain().map(|(_, r)| r).collect();
        futures::future::join_all(all.into_iter().map(|r| stop_running(r, timeout))).await;
    }
}

async fn stop_running(running: Running, timeout: Duration) {
    running.stop.request_stop();
    let mut task = running.task;
    if tokio::time::timeout(timeout, &mut task).await.is_err() {
        running.stop.kill();
        let _ = task.await;
    }
}
