//! The handoff when the host stops (SIGTERM, a scale-down): this replica marks its Lease
//! draining, so that the others assign nothing more to it; then it stops each module (a stop
//! request, at most the stop timeout) and releases its claim the moment that module is gone,
//! so that its new owner starts it right away; claims it holds without a running module are
//! released too; last, its Lease is deleted.

use std::sync::Arc;

use kube::Api;
use kube::ResourceExt as _;
use kube::runtime::reflector::Store;

use super::Context;
use super::modules::{Key, module_name};
use crate::fleet::placement::claim::{self, ClaimError};
use crate::fleet::wasm_controller::WasmController;

/// How many times a release is tried again on a conflict.
const ATTEMPTS: usize = 4;

/// Hands every module and claim of this replica over; see the [module](self).
pub(crate) async fn hand_over(ctx: &Arc<Context>, stores: &[Store<WasmController>]) {
    let me = ctx.placement.replica().to_owned();
    let mut keys: Vec<Key> = ctx.modules.keys();
    for store in stores {
        for obj in store.state() {
            let held = obj.status.as_ref().and_then(|s| s.host.as_deref()) == Some(me.as_str());
            let key = (obj.namespace().unwrap_or_default(), obj.name_any());
            if held && !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    tracing::info!(modules = keys.len(), "handing this replica's modules over");
    futures::future::join_all(keys.iter().map(|key| async {
        let running = ctx.modules.started_for(key).is_some();
        ctx.modules.stop(key, ctx.config.stop_timeout).await;
        if release(ctx, key).await && running {
            ctx.host.metrics().replica().count_handoff();
        }
    }))
    .await;
}

/// Clears this replica's claim on `key`, if it still holds it. Whether it did.
async fn release(ctx: &Context, key: &Key) -> bool {
    let api: Api<WasmController> = Api::namespaced(ctx.client.clone(), &key.0);
    let me = ctx.placement.replica();
    let message = format!("released by replica {me}: it is stopping");
    for _ in 0..ATTEMPTS {
        let fresh = match api.get_opt(&key.1).await {
            Ok(Some(fresh)) => fresh,
            Ok(None) => return false,
            Err(err) => {
                tracing::warn!("{}: reading it to release it: {err}", module_name(key));
                return false;
            }
        };
        if fresh.status.as_ref().and_then(|s| s.host.as_deref()) != Some(me) {
            return false;
        }
        let version = fresh.resource_version().unwrap_or_default();
        match claim::release(&api, &key.1, &version, &message).await {
            Ok(_) => {
                ctx.modules.forget_claim(key);
                tracing::info!("{}: {message}", module_name(key));
                return true;
            }
            Err(ClaimError::Conflict) => {}
            Err(ClaimError::Kube(err)) => {
                tracing::warn!("{}: releasing it: {err}", module_name(key));
                return false;
            }
        }
    }
    false
}
