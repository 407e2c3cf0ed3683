//! The host as an operator (`host-shim run --controllers`): it reconciles `WasmController`
//! resources ([`crate::fleet::wasm_controller`]) with kube-runtime's `Controller`, in all
//! namespaces or a given set. Create → pull → compile (the precompile cache) → start; a spec
//! change → graceful replace of that module only (stop request, bounded wait, new instance);
//! delete → graceful stop before the resource goes away (the finalizer
//! [`FINALIZER`]); a host restart → every resource resumes. Each module's status
//! ([`status`]) follows its life; Events record pulls, starts, crashes, back-offs and stops.
//!
//! With several replicas, each runs the modules [placement](crate::fleet::placement) gives it
//! ([`claims`]): a module moves when membership changes, a replica that loses its Lease stops
//! everything ([`fence`]), and a stopping replica hands its modules over ([`handoff`]).

mod attempts;
mod claims;
mod error;
mod events;
mod fence;
mod handoff;
mod modules;
mod reconcile;
mod status;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::runtime::controller::{self, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Api, Client};

use crate::fleet::oci::pull::Puller;
use crate::fleet::placement::{Placement, PlacementConfig};
use crate::fleet::wasm_controller::WasmController;
use crate::runtime::host::Host;
use crate::runtime::stop::{Phase, StopHandle};

pub use modules::RunningModules;

/// The finalizer the host puts on every WasmController it runs: the resource goes away only
/// after its module has stopped.
pub const FINALIZER: &str = "kube-wasm.dev/module";

/// The field manager of the host's status writes and the Events' reporting controller.
pub const MANAGER: &str = "kube-wasm-host";

/// How many WasmControllers one replica reconciles at once (each may pull and compile).
const CONCURRENCY: u16 = 8;

/// How the operator runs.
#[derive(Debug, Clone)]
pub struct OperatorConfig {
    /// Namespaces whose WasmControllers it runs; empty: all.
    pub namespaces: Vec<String>,
    /// This replica's name (`status.host`, the Events' reporting instance) and its
    /// membership in the fleet.
    pub placement: PlacementConfig,
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
    pub(crate) placement: Placement,
    pub(crate) attempts: attempts::Attempts,
    pub(crate) config: OperatorConfig,
}

/// Runs the operator until `stop` leaves [`Phase::Running`], then hands every module it runs
/// over (each stopped within the stop timeout, then released) and gives up its Lease. The
/// modules' own stop handles follow `stop`.
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
    let replica = config.placement.replica.clone();
    let placement = Placement::new(
        &client,
        config.placement.clone(),
        host.metrics().replica().clone(),
    );
    let placement_tasks = placement.spawn();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: MANAGER.into(),
            instance: Some(replica.clone()),
        },
    );
    let ctx = Arc::new(Context {
        client: client.clone(),
        modules: RunningModules::new(stop.clone(), &replica, host.metrics().replica().clone()),
        host,
        puller,
        recorder,
        placement: placement.clone(),
        attempts: attempts::Attempts::default(),
        config: config.clone(),
    });
    let fence = tokio::spawn(fence::run(ctx.clone()));
    let apis: Vec<Api<WasmController>> = if config.namespaces.is_empty() {
        vec![Api::all(client.clone())]
    } else {
        config
            .namespaces
            .iter()
            .map(|ns| Api::namespaced(client.clone(), ns))
            .collect()
    };
    let mut stores = Vec::new();
    let controllers: Vec<_> = apis
        .into_iter()
        .map(|api| {
            let mut shutdown = stop.subscribe();
            let controller = Controller::new(api, watcher::Config::default())
                .with_config(controller::Config::default().concurrency(CONCURRENCY))
                .reconcile_all_on(placement.changes());
            stores.push(controller.store());
            controller
                .graceful_shutdown_on(async move {
                    let _ = shutdown.wait_for(|p| *p != Phase::Running).await;
                })
                .run(reconcile::reconcile, reconcile::error_policy, ctx.clone())
                .for_each(|result| async move {
                    if let Err(err) = result {
                        tracing::debug!("reconcile: {err}");
                    }
                })
        })
        .collect();
    tracing::info!(
        namespaces = ?config.namespaces,
        replica = %replica,
        lease_namespace = ?config.placement.lease_namespace,
        "running the WasmControllers of the cluster"
    );
    if config.placement.lease_namespace.is_none() {
        tracing::info!("no Lease namespace: this host runs as the sole replica");
    }
    let mut shutdown = stop.subscribe();
    let draining = async {
        let _ = shutdown.wait_for(|p| *p != Phase::Running).await;
        placement.start_draining().await;
    };
    futures::future::join(futures::future::join_all(controllers), draining).await;
    handoff::hand_over(&ctx, &stores).await;
    fence.abort();
    placement.finish();
    if let Some(tasks) = placement_tasks {
        let wait = placement.config().renew_period * 2;
        let _ = tokio::time::timeout(wait, tasks.lease).await;
        tasks.members.abort();
    }
    Ok(())
}
