//! The modules the operator runs, one per WasmController: each with its own stop handle (a
//! child of the host's), so that one can be replaced or stopped alone, and the channel its
//! supervisor reports its run state on.
//!
//! Each module's run on this replica is logged as an interval — `module started on this
//! replica` before it is instantiated, `module stopped on this replica` once it is gone, each
//! with `at_unix_us` (wall-clock microseconds) — so that an operator (and the e2e test) can
//! check that no two replicas' intervals for a module ever overlap.
//!
//! A [fence](RunningModules::fence) (this replica lost its Lease) stops every module and
//! starts a new epoch: a start prepared in an earlier epoch is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::metrics::ReplicaMetrics;
use crate::runtime::host::Host;
use crate::runtime::module::LoadedModule;
use crate::runtime::stop::StopHandle;
use crate::runtime::supervisor::{RunState, supervise_reporting};

/// A WasmController's identity: namespace and name.
pub type Key = (String, String);

/// The module name of a WasmController in the host: `<namespace>.<name>` (a namespace has no
/// dot, so the name is unambiguous).
pub(crate) fn module_name(key: &Key) -> String {
    format!("{}.{}", key.0, key.1)
}

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
    replica: Arc<str>,
    metrics: ReplicaMetrics,
    running: Arc<Mutex<Modules>>,
}

#[derive(Default)]
struct Modules {
    epoch: u64,
    by_key: HashMap<Key, Running>,
    /// The WasmControllers whose claim this replica wrote (or confirmed) in the current epoch.
    claimed: std::collections::HashSet<Key>,
}

impl RunningModules {
    /// No modules yet; each one started follows `host_stop`. `replica` names this replica in
    /// the start and stop lines.
    pub fn new(host_stop: StopHandle, replica: &str, metrics: ReplicaMetrics) -> Self {
        Self {
            host_stop,
            replica: replica.into(),
            metrics,
            running: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Modules> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current epoch: a start prepared in it is refused after a [fence](Self::fence).
    pub(crate) fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// Records that this replica holds the claim of `key` from `epoch` on (ignored if a fence
    /// ended that epoch since).
    pub(crate) fn record_claim(&self, key: &Key, epoch: u64) {
        let mut modules = self.lock();
        if modules.epoch == epoch {
            modules.claimed.insert(key.clone());
        }
    }

    /// Forgets this replica's claim of `key` (released, or found to be another's).
    pub(crate) fn forget_claim(&self, key: &Key) {
        self.lock().claimed.remove(key);
    }

    /// Whether this replica holds the claim of `key` in the current epoch: the module runs
    /// here, or the claim was written since the Lease was last current.
    pub(crate) fn holds(&self, key: &Key) -> bool {
        let modules = self.lock();
        modules.by_key.contains_key(key) || modules.claimed.contains(key)
    }

    /// Whether the host is stopping (its modules end because of that, and are handed over).
    pub(crate) fn host_stopping(&self) -> bool {
        self.host_stop.phase() != crate::runtime::stop::Phase::Running
    }

    /// How many modules run.
    pub(crate) fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// Stops every module — a stop request, `grace` to exit, then they are ended — and begins
    /// a new epoch, so that no start prepared before can happen after. Returns how many were
    /// stopped.
    pub(crate) async fn fence(&self, grace: Duration) -> usize {
        let all: Vec<Running> = {
            let mut modules = self.lock();
            modules.epoch += 1;
            modules.claimed.clear();
            modules.by_key.drain().map(|(_, r)| r).collect()
        };
        let stopped = all.len();
        futures::future::join_all(all.into_iter().map(|r| stop_running(r, grace))).await;
        self.metrics.set_owned(self.len());
        stopped
    }

    /// The generation and digest the module of `key` was started for, if it runs.
    pub(crate) fn started_for(&self, key: &Key) -> Option<(Option<i64>, String)> {
        self.lock()
            .by_key
            .get(key)
            .map(|r| (r.generation, r.digest.clone()))
    }

    /// Starts `module` for `key` under `host`, supervised with its restart policy — unless
    /// `epoch` has ended (a fence came in between): then `None`, and nothing starts.
    pub(crate) fn start(
        &self,
        key: Key,
        generation: Option<i64>,
        digest: String,
        host: &Host,
        module: LoadedModule,
        epoch: u64,
    ) -> Option<watch::Receiver<RunState>> {
        let mut modules = self.lock();
        if modules.epoch != epoch {
            return None;
        }
        let stop = self.host_stop.child();
        let (report, state) = watch::channel(RunState::default());
        let task = tokio::spawn({
            let host = host.clone();
            let stop = stop.clone();
            let name = module.name().to_owned();
            let replica = self.replica.clone();
            async move {
                tracing::info!(
                    module = %name,
                    replica = %replica,
                    at_unix_us = unix_micros(),
                    "module started on this replica"
                );
                let (outcome, _) = supervise_reporting(host, module, stop, Some(&report)).await;
                tracing::info!(
                    module = %name,
                    replica = %replica,
                    at_unix_us = unix_micros(),
                    "module stopped on this replica"
                );
                tracing::info!("module `{name}`: {outcome}");
            }
        });
        let previous = modules.by_key.insert(
            key,
            Running {
                generation,
                digest,
                stop,
                task,
            },
        );
        let owned = modules.by_key.len();
        drop(modules);
        self.metrics.set_owned(owned);
        if let Some(previous) = previous {
            // The caller stops the old one first; this one must not be left behind.
            previous.stop.kill();
        }
        Some(state)
    }

    /// Stops the module of `key`, if it runs: a stop request, then `timeout` to exit, then
    /// it is ended. Returns once it has.
    pub(crate) async fn stop(&self, key: &Key, timeout: Duration) {
        let Some(running) = self.lock().by_key.remove(key) else {
            return;
        };
        stop_running(running, timeout).await;
        self.metrics.set_owned(self.len());
    }

    /// The digests of the modules running now.
    pub(crate) fn digests(&self) -> std::collections::HashSet<String> {
        self.lock()
            .by_key
            .values()
            .map(|r| r.digest.clone())
            .collect()
    }

    /// The WasmControllers whose modules run now.
    pub(crate) fn keys(&self) -> Vec<Key> {
        self.lock().by_key.keys().cloned().collect()
    }
}

fn unix_micros() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

async fn stop_running(running: Running, timeout: Duration) {
    running.stop.request_stop();
    let mut task = running.task;
    if tokio::time::timeout(timeout, &mut task).await.is_err() {
        running.stop.kill();
        let _ = task.await;
    }
}
