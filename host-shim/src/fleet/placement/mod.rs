//! Placement: which host replica runs which WasmController, with Kubernetes as the only
//! coordinator — no store of the fleet's own.
//!
//! - **Membership** ([`members`], [`lease`]): each replica holds a `coordination.k8s.io` Lease
//!   `kube-wasm-host.<replica>` in the Lease namespace, renewed every renew period; one whose
//!   Lease has not changed for its duration, by the observer's clock, is gone.
//! - **Assignment** ([`rendezvous`]): a module belongs to the live member with the highest
//!   rendezvous weight for its name. It needs no coordination and moves few modules: a joining
//!   replica takes about 1/N, a leaving one gives away only its own. An assignment written on
//!   each resource would need a writer (a leader) and a second failover path; hashing needs
//!   neither, and the claims below make it safe while replicas' views briefly differ.
//! - **Fencing** ([`claim`], [`decision`]): a module runs only on the replica holding its claim
//!   (`status.host`, written by compare-and-swap). A claim is taken from another replica only
//!   after that replica released it, or after its Lease expired by the taker's observation —
//!   and a replica that cannot renew within the renew deadline (shorter than the duration)
//!   stops its modules first.
//!
//! Without a Lease namespace the host is the sole replica: it owns every module and treats
//! any other holder as gone.

pub mod claim;
pub mod decision;
pub mod lease;
pub mod members;
pub mod rendezvous;

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use tokio::sync::watch;

use crate::metrics::ReplicaMetrics;
use lease::{Freshness, OwnLease};
use members::{Holder, Members};

/// The longest wait before a failed renew is tried again.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(500);

/// How placement runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementConfig {
    /// This replica's name (default: the pod's name): `status.host`, its Lease's name.
    pub replica: String,
    /// Where the membership Leases live; `None`: this host is the sole replica.
    pub lease_namespace: Option<String>,
    /// How long a Lease stands unrenewed (`leaseDurationSeconds`; whole seconds, default
    /// 10 s). A crashed replica's modules restart elsewhere after about this long.
    pub lease_duration: Duration,
    /// How long a replica may go without a successful renew before it stops its modules
    /// (default 8 s); shorter than the duration.
    pub renew_deadline: Duration,
    /// How often the Lease is renewed (default 1 s); shorter than the renew deadline. A
    /// failed renew is tried again after at most [`RETRY_AFTER_FAILURE`].
    pub renew_period: Duration,
}

impl PlacementConfig {
    /// The defaults: duration 10 s, renew deadline 8 s, renew period 1 s. client-go's leader
    /// election uses 15/10/2 s; a 10 s duration fails over within about 10 s, and a 1 s period
    /// with quick retries keeps an apiserver restart of about 5 s inside the renew deadline,
    /// so that it stops nothing.
    pub fn new(replica: String, lease_namespace: Option<String>) -> Self {
        Self {
            replica,
            lease_namespace,
            lease_duration: Duration::from_secs(10),
            renew_deadline: Duration::from_secs(8),
            renew_period: Duration::from_secs(1),
        }
    }

    /// Checks the durations' order and the replica name (a DNS subdomain, as it names a Lease).
    ///
    /// # Errors
    /// A message naming what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.lease_duration.subsec_nanos() != 0 || self.lease_duration.is_zero() {
            return Err("the lease duration must be whole seconds, at least 1 s".into());
        }
        if !(self.renew_period < self.renew_deadline && self.renew_deadline < self.lease_duration) {
            return Err(format!(
                "the renew period ({:?}) must be shorter than the renew deadline ({:?}), and \
                 that shorter than the lease duration ({:?})",
                self.renew_period, self.renew_deadline, self.lease_duration
            ));
        }
        let name = &self.replica;
        let valid = !name.is_empty()
            && name.len() <= 230
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !valid {
            return Err(format!(
                "the replica name {name:?} must be a DNS subdomain (lower-case letters, digits, \
                 '-' and '.'), as it names the replica's Lease"
            ));
        }
        Ok(())
    }

    /// How long a replica that lost its Lease gives its modules to stop before they are
    /// ended: half the margin between the renew deadline and the lease duration, so that they
    /// are gone before another replica may start them.
    pub fn fence_grace(&self) -> Duration {
        self.lease_duration.saturating_sub(self.renew_deadline) / 2
    }
}

/// The tasks of a replica's placement.
pub struct PlacementTasks {
    /// Follows the membership Leases; runs until aborted.
    pub members: tokio::task::JoinHandle<()>,
    /// Holds this replica's Lease; ends after [`Placement::finish`], its Lease deleted.
    pub lease: tokio::task::JoinHandle<()>,
}

/// The placement of this replica. Cheap to clone.
#[derive(Clone)]
pub struct Placement {
    config: Arc<PlacementConfig>,
    sharded: Option<Sharded>,
}

#[derive(Clone)]
struct Sharded {
    lease: OwnLease,
    members: Members,
}

impl Placement {
    /// Placement as `config` says: with membership Leases through `client` when it names a
    /// Lease namespace, else as the sole replica.
    pub fn new(client: &Client, config: PlacementConfig, metrics: ReplicaMetrics) -> Self {
        let config = Arc::new(config);
        let sharded = config.lease_namespace.as_ref().map(|ns| {
            let api: Api<Lease> = Api::namespaced(client.clone(), ns);
            Sharded {
                lease: OwnLease::new(api.clone(), config.clone(), metrics),
                members: Members::new(api),
            }
        });
        Self { config, sharded }
    }

    /// The configuration.
    pub fn config(&self) -> &PlacementConfig {
        &self.config
    }

    /// This replica's name.
    pub fn replica(&self) -> &str {
        &self.config.replica
    }

    /// Starts following the membership and holding this replica's Lease (until
    /// [`finish`](Self::finish)). `None` for a sole replica.
    pub fn spawn(&self) -> Option<PlacementTasks> {
        let sharded = self.sharded.as_ref()?;
        Some(PlacementTasks {
            members: tokio::spawn(sharded.members.clone().run(self.config.replica.clone())),
            lease: tokio::spawn(sharded.lease.clone().run()),
        })
    }

    /// The replica `module` belongs to now.
    pub fn owner_of(&self, module: &str) -> Option<String> {
        match &self.sharded {
            Some(sharded) => sharded.members.owner_of(module),
            None => Some(self.config.replica.clone()),
        }
    }

    /// Whether the claims of `replica` (another one) stand.
    pub async fn holder(&self, replica: &str) -> Holder {
        match &self.sharded {
            Some(sharded) => sharded.members.holder(replica).await,
            None => Holder::Gone,
        }
    }

    /// Whether this replica sees itself among the live members: until it does (its Lease not
    /// yet in its view of the membership, or draining), its view cannot say what is its own.
    /// Always for a sole replica.
    pub fn sees_itself(&self) -> bool {
        self.sharded
            .as_ref()
            .is_none_or(|s| s.members.is_live(&self.config.replica))
    }

    /// Whether this replica may run modules now (holds a current Lease).
    pub fn is_fresh(&self) -> bool {
        self.sharded.as_ref().is_none_or(|s| s.lease.is_fresh())
    }

    /// Until when this replica may act; `None` for a sole replica, which always may.
    pub fn freshness(&self) -> Option<watch::Receiver<Freshness>> {
        self.sharded.as_ref().map(|s| s.lease.freshness())
    }

    /// A tick whenever every resource should be looked at again: the live members changed,
    /// or this replica got its Lease (back). Never ends for a sole replica, never ticks either.
    pub fn changes(&self) -> impl Stream<Item = ()> + Send + 'static {
        let receivers = self
            .sharded
            .as_ref()
            .map(|s| (s.members.live(), s.lease.freshness()));
        futures::stream::unfold(
            (receivers, false),
            |(receivers, mut was_fresh)| async move {
                let Some((mut live, mut fresh)) = receivers else {
                    futures::future::pending::<()>().await;
                    return None;
                };
                loop {
                    tokio::select! {
                        changed = live.changed() => {
                            changed.ok()?;
                            return Some(((), (Some((live, fresh)), was_fresh)));
                        }
                        changed = fresh.changed() => {
                            changed.ok()?;
                            let now_fresh = fresh.borrow_and_update().is_some();
                            let regained = now_fresh && !was_fresh;
                            was_fresh = now_fresh;
                            if regained {
                                return Some(((), (Some((live, fresh)), was_fresh)));
                            }
                        }
                    }
                }
            },
        )
    }

    /// Marks this replica draining: it keeps its claims until it releases them, but no
    /// module is assigned to it any more.
    pub async fn start_draining(&self) {
        if let Some(sharded) = &self.sharded {
            sharded.lease.start_draining().await;
        }
    }

    /// Gives up this replica's Lease (it has released every module).
    pub fn finish(&self) {
        if let Some(sharded) = &self.sharded {
            sharded.lease.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_must_nest_and_the_name_must_name_a_lease() {
        let config = PlacementConfig::new("host-a".into(), Some("ns".into()));
        assert_eq!(config.validate(), Ok(()));
        let mut slow = config.clone();
        slow.renew_deadline = Duration::from_secs(10);
        assert_eq!(config.fence_grace(), Duration::from_secs(1));
        assert!(slow.validate().is_err());
        let mut fractional = config.clone();
        fractional.lease_duration = Duration::from_millis(10_500);
        assert!(fractional.validate().is_err());
        for bad in ["Host_A", "", "-a", "a b"] {
            let mut named = config.clone();
            named.replica = bad.into();
            assert!(named.validate().is_err(), "{bad}");
        }
    }
}
