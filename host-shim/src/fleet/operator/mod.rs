//! The host as an operator (`host-shim run --controllers`): it reconciles `WasmController`
//! resources ([`crate::fleet::wasm_controller`]) with kube-runtime's `Controller`, in all
//! namespaces or a given set. Create → pull → compile (the precompile cache) → start; a spec
//! change → graceful replace of that module only (stop request, bounded wait, new instance);
//! delete → graceful stop before the resource goes away (the finalizer
//! [`FINALIZER`]); a host restart → every resource resumes. Each module's status
//! ([`status`]) follows its life; Events record pulls, starts, crashes, back-offs and stops.

mod modules;
mod reconcile;
mod status;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::runtime::controller::Controller;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Api, Client};

use crate::fleet::oci::pull::Puller;
use crate::fleet::wasm_controller::WasmController;
use crate::runtime::host::Host;
use crate::runtime::stop::{Phase, StopHandle};

pub use modules::RunningModules;

/// The finalizer the host puts on every WasmController it runs: the resource goes away only
/// after its module has stopped.
pub const FINALIZER: &str = "kube-wasm.dev/module";

/// The field manager of the host's status writes and the Events' reporting controller.
pub const MANAGER: &str = "kube-wasm-host";

/// How the operator runs.
#[derive(Debug, Clone)]
pub struct OperatorConfig {
    /// Namespaces whose WasmControllers it runs; empty: all.
    pub namespaces: Vec<String>,
    /// This host replica's name (`status.host`, the Events' reporting instance).
    pub host_name: String,
    /// How long a module gets to exit when it is replaced or deleted.
    pub stop_timeout: Duration,
    /// The folder a WasmController's `path` is read from (`--local-modules`); `None`: `path`
    /// is refused, so that creating a resource cannot make the host read its files.
    pub local_modules: Option<std::path::PathBuf>,
}

/// What reconciles share.
pub(crate) struct Context {
    pub(crate) client: Client,
    pub(crate) host: Host,
    pub(crate) puller: Puller,
    pub(crate) modules: RunningModules,
    pub(crate) recorder: Recorder,
    pub(crate) config: OperatorConfig,
}

/// Runs the operator until `stop` leaves [`Phase::Running`], then stops every module it runs
/// (each within the stop timeout). The modules' own stop handles follow `stop`.
///
/// # Errors
/// None today: watch failures are retried by the controller with back-off.
pub async fn run(
    client: Client,
    host: Host,
    puller: Puller,
    config: OperatorConfig,
    stop: StopHandle,
) -> anyhow::Result<()> {
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: MANAGER.into(),
            instance: Some(config.host_name.clone()),
        },
    );
    let ctx = Arc::new(Context {
        client: client.clone(),
        host,
        puller,
        modules: RunningModules::new(stop.clone()),
        recorder,
        config: config.clone(),
    });
    let apis: Vec<Api<WasmController>> = if config.namespaces.is_empty() {
        vec![Api::all(client.clone())]
    } else {
        config
            .namespaces
            .iter()
            .map(|ns| Api::namespaced(client.clone(), ns))
            .collect()
    };
    let mut shutdown = stop.subscribe();
    let controllers = apis.into_iter().map(|api| {
        let mut shutdown = stop.subscribe();
        Controller::new(api, watcher::Config::default())
            .graceful_shutdown_on(async move {
                let _ = shutdown.wait_for(|p| *p != Phase::Running).await;
            })
            .run(reconcile::reconcile, reconcile::error_policy, ctx.clone())
            .for_each(|result| async move {
                if let Err(err) = result {
                    tracing::debug!("reconcile: {err}");
                }
            })
    });
    tracing::info!(
        namespaces = ?config.namespaces,
        host = %config.host_name,
        "running the WasmControllers of the cluster"
    );
    futures::future::join_all(controllers).await;
    let _ = shutdown.wait_for(|p| *p != Phase::Running).await;
    ctx.modules.stop_all(config.stop_timeout).await;
    Ok(())
}
