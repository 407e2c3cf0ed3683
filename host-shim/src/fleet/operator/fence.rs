//! The fence: when this replica's Lease is no longer current (the renew deadline passed with
//! no successful renew, or another incarnation holds it), every module stops — a stop request,
//! then the [grace](crate::fleet::placement::PlacementConfig::fence_grace), then it is ended —
//! before any other replica may take them over. Reconciles claim them again once the Lease is
//! back.

use std::sync::Arc;

use super::Context;

/// Fences whenever the Lease lapses, until the host stops. Nothing for a sole replica.
pub(crate) async fn run(ctx: Arc<Context>) {
    let Some(mut freshness) = ctx.placement.freshness() else {
        return;
    };
    let mut had_lease = false;
    loop {
        let until = *freshness.borrow_and_update();
        let lapsed = match until {
            Some(until) => {
                had_lease = true;
                tokio::select! {
                    () = tokio::time::sleep_until(until) => *freshness.borrow() == Some(until),
                    changed = freshness.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        false
                    }
                }
            }
            None => had_lease,
        };
        if lapsed {
            had_lease = false;
            let grace = ctx.placement.config().fence_grace();
            let stopped = ctx.modules.fence(grace).await;
            ctx.host.metrics().replica().count_fence();
            tracing::warn!(
                stopped,
                "this replica could not renew its Lease in time: it stopped its modules; they \
                 start again here or elsewhere once a Lease is current"
            );
            if freshness.changed().await.is_err() {
                return;
            }
        } else if until.is_none() && freshness.changed().await.is_err() {
            return;
        }
    }
}
