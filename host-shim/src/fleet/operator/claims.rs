//! Before a WasmController is reconciled: is it this replica's to run? Placement
//! ([`crate::fleet::placement`]) says who owns it; the claim on the resource says who holds it.
//! A decision read from the controller's cache that would change anything (claim, release,
//! stop) is taken again on a fresh read, since the cache may not show this replica's own last
//! write yet; claims and releases are compare-and-swap writes, retried on a conflict.

use std::sync::Arc;
use std::time::Duration;

use kube::Api;
use kube::ResourceExt as _;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use super::Context;
use super::error::Error;
use super::events::event;
use super::modules::Key;
use super::modules::module_name;
use crate::fleet::placement::claim::{self, ClaimError};
use crate::fleet::placement::decision::{Decision, Situation, decide};
use crate::fleet::placement::members::Holder;
use crate::fleet::wasm_controller::{WasmController, WasmControllerStatus};

/// How many times a claim or release is tried again on a conflict within one reconcile.
const ATTEMPTS: usize = 4;

/// Whether to go on reconciling.
pub(crate) enum Gate {
    /// The claim is ours: reconcile, and start the module only in this epoch of
    /// [`RunningModules`](super::RunningModules).
    Run {
        /// The epoch the claim was confirmed in.
        epoch: u64,
        /// The status as the claim left it, when one was written just now.
        claimed: Option<WasmControllerStatus>,
    },
    /// Not ours (now): this is the reconcile's answer.
    Done(Action),
}

/// Settles the claim of `obj` for this replica; see the [module](self).
///
/// # Errors
/// A read or write the API server refused (other than a conflict).
pub(crate) async fn settle(obj: &Arc<WasmController>, ctx: &Arc<Context>) -> Result<Gate, Error> {
    let key: Key = (obj.namespace().unwrap_or_default(), obj.name_any());
    let placement = &ctx.placement;
    let recheck = Action::requeue(placement.config().renew_period);
    // Without a current Lease nothing runs here; without itself in its view of the members
    // (starting, reconnecting, draining) this replica would take every module for another's
    // and release what it holds.
    if !placement.is_fresh() || !placement.sees_itself() {
        return Ok(Gate::Done(recheck));
    }
    let epoch = ctx.modules.epoch();
    let cached = situation_of(obj, &key, ctx).await;
    if let Some(gate) = without_writes(&decide(cached.as_situation()), epoch, ctx) {
        return Ok(gate);
    }
    let api: Api<WasmController> = Api::namespaced(ctx.client.clone(), &key.0);
    for _ in 0..ATTEMPTS {
        let Some(fresh) = api.get_opt(&key.1).await? else {
            return Ok(Gate::Done(Action::await_change()));
        };
        let now = situation_of(&fresh, &key, ctx).await;
        let resource_version = fresh.resource_version().unwrap_or_default();
        let name = module_name(&key);
        let decision = decide(now.as_situation());
        if let Decision::Wait { holder } = &decision {
            tracing::debug!("{name}: held by replica {holder}; waiting");
        }
        if let Some(gate) = without_writes(&decision, epoch, ctx) {
            return Ok(gate);
        }
        match decision {
            // Answered just above.
            Decision::Keep | Decision::Ignore | Decision::Wait { .. } => {}
            Decision::StopHere => {
                ctx.modules.forget_claim(&key);
                ctx.modules
                    .stop(&key, placement.config().fence_grace())
                    .await;
                let note = format!(
                    "replica {} stopped module `{name}`: replica {} holds it",
                    placement.replica(),
                    now.holder.as_deref().unwrap_or("(none)")
                );
                tracing::warn!("{note}");
                event(ctx, &fresh, EventType::Warning, "StoppedHere", note).await;
                return Ok(Gate::Done(Action::await_change()));
            }
            Decision::Release => {
                let running = ctx.modules.started_for(&key).is_some();
                ctx.modules.stop(&key, ctx.config.stop_timeout).await;
                let why = match &now.owner {
                    Some(owner) => format!("replica {owner} owns it now"),
                    None => "no replica owns it now".to_owned(),
                };
                let message = format!("released by replica {}: {why}", placement.replica());
                match claim::release(&api, &key.1, &resource_version, &message).await {
                    Ok(_) => {
                        ctx.modules.forget_claim(&key);
                        if running {
                            ctx.host.metrics().replica().count_handoff();
                        }
                        tracing::info!("{name}: {message}");
                        event(ctx, &fresh, EventType::Normal, "Released", message).await;
                        return Ok(Gate::Done(Action::await_change()));
                    }
                    Err(ClaimError::Conflict) => {}
                    Err(ClaimError::Kube(err)) => return Err(err.into()),
                }
            }
            Decision::Claim { from } => {
                let pending = ctx.modules.started_for(&key).is_none();
                let claimed = claim::claim(
                    &api,
                    &key.1,
                    &resource_version,
                    placement.replica(),
                    pending,
                )
                .await;
                match claimed {
                    Ok(claimed) => {
                        ctx.modules.record_claim(&key, epoch);
                        if let Some(from) = from {
                            ctx.host.metrics().replica().count_failover();
                            let note = format!(
                                "replica {} took module `{name}` over from replica {from}, \
                                 whose Lease expired",
                                placement.replica()
                            );
                            tracing::info!("{note}");
                            event(ctx, &fresh, EventType::Normal, "TakenOver", note).await;
                        }
                        return Ok(Gate::Run {
                            epoch,
                            claimed: claimed.status,
                        });
                    }
                    Err(ClaimError::Conflict) => {}
                    Err(ClaimError::Kube(err)) => return Err(err.into()),
                }
            }
        }
    }
    Ok(Gate::Done(Action::requeue(Duration::from_millis(200))))
}

/// The answer to a decision that changes nothing here — keep running, not ours, wait for
/// the holder — which the cached object is enough for; `None` for the others.
fn without_writes(decision: &Decision, epoch: u64, ctx: &Context) -> Option<Gate> {
    match decision {
        Decision::Keep => Some(Gate::Run {
            epoch,
            claimed: None,
        }),
        Decision::Ignore => Some(Gate::Done(Action::await_change())),
        // Its release is a change of the resource; its expiry changes the members.
        Decision::Wait { .. } => Some(Gate::Done(Action::requeue(
            ctx.placement.config().lease_duration,
        ))),
        Decision::Claim { .. } | Decision::Release | Decision::StopHere => None,
    }
}

/// Whether a WasmController being deleted is another live replica's to clean up: then this
/// replica leaves its finalizer alone.
pub(crate) async fn held_elsewhere(obj: &WasmController, ctx: &Context) -> bool {
    match obj.status.as_ref().and_then(|s| s.host.as_deref()) {
        Some(holder) if holder != ctx.placement.replica() => {
            ctx.placement.holder(holder).await == Holder::Alive
        }
        _ => false,
    }
}

/// What is known of one resource, owned so that the holder's liveness can be filled in.
struct Known {
    me: String,
    owner: Option<String>,
    holder: Option<String>,
    holder_alive: bool,
    held_here: bool,
}

impl Known {
    fn as_situation(&self) -> Situation<'_> {
        Situation {
            me: &self.me,
            owner: self.owner.as_deref(),
            holder: self.holder.as_deref(),
            holder_alive: self.holder_alive,
            held_here: self.held_here,
        }
    }
}

/// The situation of `obj` now; the liveness of another holder is read from the members
/// (with a fresh read of its Lease when it looks expired).
async fn situation_of(obj: &WasmController, key: &Key, ctx: &Context) -> Known {
    let me = ctx.placement.replica().to_owned();
    let holder = obj.status.as_ref().and_then(|s| s.host.clone());
    let holder_alive = match holder.as_deref() {
        Some(holder) if holder != me => ctx.placement.holder(holder).await == Holder::Alive,
        _ => false,
    };
    Known {
        owner: ctx.placement.owner_of(&module_name(key)),
        holder,
        holder_alive,
        held_here: ctx.modules.holds(key),
        me,
    }
}
