//! The ring benchmark's controller (the method of the earlier wasm-operator benchmark): a
//! `Ring` custom resource holds a nonce; this controller watches the Rings of its **source**
//! namespace and, for each, server-side applies a Ring of the same name into its **target**
//! namespace with the same nonce. N of them, controller i copying namespace i to i+1, form a
//! ring whose end-to-end latency the benchmark driver (`kube-wasm-bench`) measures.
//!
//! Each copy carries the time its reconcile started, in microseconds since the Unix epoch
//! (annotation [`RECONCILED_AT`]), so the driver can measure event→reconcile latency on the
//! same clock.
//!
//! Configuration, from the environment:
//! - `RING_SOURCE`: the namespace to watch (default: the client's default namespace);
//! - `RING_TARGET`: the namespace to copy into (required);
//! - `RING_BALLAST_MIB`: MiB of non-zero bytes to allocate at start and hold until the end
//!   (default 0), so the benchmark can suspend and resume modules of larger linear memories.
//!
//! `ring-controller crd` prints the CustomResourceDefinition as JSON and exits; otherwise the
//! controller runs until Ctrl-C or SIGTERM.

use futures::StreamExt;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The field manager of the copies.
const MANAGER: &str = "ring-controller";

/// The annotation holding when the reconcile that wrote a copy started, in microseconds
/// since the Unix epoch.
pub const RECONCILED_AT: &str = "bench.kube-wasm.example.com/reconciled-at-micros";

/// One link of the ring: a nonce to pass on.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "bench.kube-wasm.example.com",
    version = "v1",
    kind = "Ring",
    namespaced,
    printcolumn = r#"{"name":"Nonce", "type":"integer", "jsonPath":".spec.nonce"}"#
)]
pub struct RingSpec {
    /// The value passed from namespace to namespace.
    pub nonce: u64,
}

/// Why a copy failed.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("applying the copy into {namespace} failed: {source}")]
    Apply {
        namespace: String,
        #[source]
        source: kube::Error,
    },
}

/// What every reconcile shares: the client and the target namespace.
struct Context {
    client: Client,
    target: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("crd") {
        println!("{}", serde_json::to_string_pretty(&Ring::crd())?);
        return Ok(());
    }
    let target = std::env::var("RING_TARGET")
        .map_err(|_| anyhow::anyhow!("RING_TARGET (the namespace to copy into) is not set"))?;
    let ballast = ballast()?;
    let client = Client::try_default().await?;
    let source = std::env::var("RING_SOURCE").unwrap_or_else(|_| client.default_namespace().into());
    let rings = Api::<Ring>::namespaced(client.clone(), &source);
    println!("ring-controller: copying Rings from {source} to {target}");

    Controller::new(rings, watcher::Config::default())
        .shutdown_on_signal()
        .run(
            reconcile,
            error_policy,
            Arc::new(Context { client, target }),
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                println!("ring-controller: {e}");
            }
        })
        .await;
    println!("ring-controller: stopped");
    std::hint::black_box(&ballast);
    Ok(())
}

/// `RING_BALLAST_MIB` MiB of memory, every byte written (non-zero, so no page of it can be
/// left out of a snapshot as untouched or zero).
fn ballast() -> anyhow::Result<Vec<u8>> {
    let mib = match std::env::var("RING_BALLAST_MIB") {
        Ok(text) => text.parse::<usize>().map_err(|e| {
            anyhow::anyhow!("RING_BALLAST_MIB={text:?} is not a number of MiB: {e}")
        })?,
        Err(_) => 0,
    };
    let bytes = mib
        .checked_mul(1 << 20)
        .ok_or_else(|| anyhow::anyhow!("RING_BALLAST_MIB={mib} does not fit in memory"))?;
    Ok(vec![0x5a; bytes])
}

/// Applies a copy of `ring` (same name and nonce) into the target namespace.
async fn reconcile(ring: Arc<Ring>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default();
    let copy = Ring {
        metadata: ObjectMeta {
            name: Some(ring.name_any()),
            annotations: Some([(RECONCILED_AT.to_string(), started.to_string())].into()),
            ..ObjectMeta::default()
        },
        spec: ring.spec.clone(),
    };
    let api = Api::<Ring>::namespaced(ctx.client.clone(), &ctx.target);
    api.patch(
        &ring.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&copy),
    )
    .await
    .map_err(|source| Error::Apply {
        namespace: ctx.target.clone(),
        source,
    })?;
    Ok(Action::await_change())
}

/// Retries a failed copy after a second.
fn error_policy(ring: Arc<Ring>, error: &Error, _ctx: Arc<Context>) -> Action {
    println!(
        "ring-controller: copying {} failed: {error}",
        ring.name_any()
    );
    Action::requeue(Duration::from_secs(1))
}
