//! The replicas of the fleet as this replica sees them: every replica's membership Lease in
//! the Lease namespace (label [`MEMBER_LABEL`]), each with the instant *this* replica last saw
//! it change. A Lease is expired when it has not changed for its `leaseDurationSeconds` by
//! this replica's own clock — the observation rule of client-go's leader election, which needs
//! no agreement between the replicas' clocks, only that they run at the same rate.
//!
//! The live members (not expired, not draining) are published on a watch channel whenever
//! they change; [`Members::owner_of`] applies [`rendezvous`] hashing to them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;
use tokio::time::Instant;

use super::rendezvous;

/// The label every membership Lease carries (value `"true"`).
pub const MEMBER_LABEL: &str = "kube-wasm.dev/host-replica";

/// The annotation a replica puts on its Lease while it hands its modules over (value
/// `"true"`): it stays a member whose claims are respected, but owns nothing new.
pub const DRAINING_ANNOTATION: &str = "kube-wasm.dev/draining";

/// The name of `replica`'s membership Lease.
pub fn lease_name(replica: &str) -> String {
    format!("kube-wasm-host.{replica}")
}

/// The replica a membership Lease belongs to.
fn replica_of(lease_name: &str) -> Option<&str> {
    lease_name.strip_prefix("kube-wasm-host.")
}

/// How often the live set is recomputed (Leases expire by the clock, not by events).
const TICK: Duration = Duration::from_millis(250);

/// A Lease expired for this many lease durations is deleted (a replica that crashed and will
/// not come back under its name, such as a Deployment's pod).
const FORGET_AFTER_DURATIONS: u32 = 6;

/// One replica's Lease as observed.
#[derive(Debug, Clone)]
struct Observed {
    resource_version: String,
    duration: Duration,
    draining: bool,
    /// When this replica last saw the Lease change.
    changed_at: Instant,
}

impl Observed {
    fn of(lease: &Lease, now: Instant, previous: Option<&Observed>) -> Option<Self> {
        let resource_version = lease.metadata.resource_version.clone()?;
        let seconds = lease.spec.as_ref()?.lease_duration_seconds?;
        let duration = Duration::from_secs(u64::try_from(seconds).ok()?.max(1));
        let draining = lease
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DRAINING_ANNOTATION))
            .is_some_and(|v| v == "true");
        let changed_at = match previous {
            Some(p) if p.resource_version == resource_version => p.changed_at,
            _ => now,
        };
        Some(Self {
            resource_version,
            duration,
            draining,
            changed_at,
        })
    }

    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.changed_at) > self.duration
    }
}

/// Whether a claim's holder is alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// Its Lease is current: its claims stand.
    Alive,
    /// Its Lease expired by this replica's observation (confirmed by a fresh read) or is gone:
    /// it has stopped its modules.
    Gone,
}

/// The membership view. Cheap to clone.
#[derive(Clone)]
pub struct Members {
    api: Api<Lease>,
    view: Arc<Mutex<BTreeMap<String, Observed>>>,
    live: watch::Sender<Vec<String>>,
}

impl Members {
    /// An empty view of the Leases `api` reaches (the Lease namespace).
    pub fn new(api: Api<Lease>) -> Self {
        Self {
            api,
            view: Arc::default(),
            live: watch::Sender::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Observed>> {
        self.view.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live members (sorted), changing as Leases appear, expire, drain and go.
    pub fn live(&self) -> watch::Receiver<Vec<String>> {
        self.live.subscribe()
    }

    /// Whether `replica` is among the live members now.
    pub fn is_live(&self, replica: &str) -> bool {
        self.live.borrow().iter().any(|m| m == replica)
    }

    /// The live member `module` belongs to, by rendezvous hashing.
    pub fn owner_of(&self, module: &str) -> Option<String> {
        let live = self.live.borrow();
        rendezvous::owner(live.iter().map(String::as_str), module).map(str::to_owned)
    }

    /// Whether `replica`'s claims stand. A Lease this replica sees current is alive. Anything
    /// else is settled by a fresh read of the Lease: gone (404) → [`Holder::Gone`]; unchanged
    /// since it was last seen and expired → [`Holder::Gone`]; otherwise it is (re)observed now
    /// and [`Holder::Alive`]. A failed read answers [`Holder::Alive`]: when unsure, the claim
    /// stands.
    pub async fn holder(&self, replica: &str) -> Holder {
        let now = Instant::now();
        if self.lock().get(replica).is_some_and(|o| !o.expired(now)) {
            return Holder::Alive;
        }
        let lease = match self.api.get_opt(&lease_name(replica)).await {
            Ok(Some(lease)) => lease,
            Ok(None) => {
                self.lock().remove(replica);
                return Holder::Gone;
            }
            Err(err) => {
                tracing::debug!("reading the Lease of replica {replica}: {err}");
                return Holder::Alive;
            }
        };
        let now = Instant::now();
        let mut view = self.lock();
        let Some(observed) = Observed::of(&lease, now, view.get(replica)) else {
            return Holder::Alive;
        };
        let gone = observed.expired(now);
        view.insert(replica.to_owned(), observed);
        if gone { Holder::Gone } else { Holder::Alive }
    }

    /// Follows the membership Leases until dropped: a watch with kube-runtime's back-off, the
    /// live set recomputed on every event and every [`TICK`], and Leases expired for
    /// [`FORGET_AFTER_DURATIONS`] deleted (with their resourceVersion as precondition, so a
    /// Lease renewed meanwhile stays).
    pub async fn run(self, me: String) {
        let config = watcher::Config::default().labels(&format!("{MEMBER_LABEL}=true"));
        let mut events = watcher::watcher(self.api.clone(), config)
            .default_backoff()
            .boxed();
        let mut initial: Option<BTreeMap<String, Observed>> = None;
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(event)) => self.apply(event, &mut initial),
                    Some(Err(err)) => tracing::debug!("watching the membership Leases: {err}"),
                    None => return,
                },
                _ = tick.tick() => self.forget_long_expired(&me),
            }
            self.publish();
        }
    }

    fn apply(&self, event: Event<Lease>, initial: &mut Option<BTreeMap<String, Observed>>) {
        let now = Instant::now();
        let replica = |lease: &Lease| {
            lease
                .metadata
                .name
                .as_deref()
                .and_then(replica_of)
                .map(str::to_owned)
        };
        match event {
            Event::Init => *initial = Some(BTreeMap::new()),
            Event::InitApply(lease) => {
                if let (Some(fresh), Some(name)) = (initial.as_mut(), replica(&lease)) {
                    let view = self.lock();
                    if let Some(observed) = Observed::of(&lease, now, view.get(&name)) {
                        fresh.insert(name, observed);
                    }
                }
            }
            Event::InitDone => {
                if let Some(fresh) = initial.take() {
                    *self.lock() = fresh;
                }
            }
            Event::Apply(lease) => {
                if let Some(name) = replica(&lease) {
                    let mut view = self.lock();
                    if let Some(observed) = Observed::of(&lease, now, view.get(&name)) {
                        view.insert(name, observed);
                    }
                }
            }
            Event::Delete(lease) => {
                if let Some(name) = replica(&lease) {
                    self.lock().remove(&name);
                }
            }
        }
    }

    fn publish(&self) {
        let now = Instant::now();
        let live: Vec<String> = self
            .lock()
            .iter()
            .filter(|(_, o)| !o.expired(now) && !o.draining)
            .map(|(name, _)| name.clone())
            .collect();
        self.live.send_if_modified(|current| {
            if *current == live {
                return false;
            }
            tracing::info!(members = ?live, "the live replicas changed");
            *current = live;
            true
        });
    }

    fn forget_long_expired(&self, me: &str) {
        let now = Instant::now();
        let stale: BTreeSet<(String, String)> = self
            .lock()
            .iter()
            .filter(|(name, o)| {
                name.as_str() != me
                    && now.duration_since(o.changed_at) > o.duration * FORGET_AFTER_DURATIONS
            })
            .map(|(name, o)| (name.clone(), o.resource_version.clone()))
            .collect();
        for (replica, resource_version) in stale {
            self.lock().remove(&replica);
            let api = self.api.clone();
            tokio::spawn(async move {
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        resource_version: Some(resource_version),
                        uid: None,
                    }),
                    ..DeleteParams::default()
                };
                match api.delete(&lease_name(&replica), &params).await {
                    Ok(_) => tracing::info!("deleted the Lease of replica {replica}, long expired"),
                    Err(err) => tracing::debug!("deleting the Lease of replica {replica}: {err}"),
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;

    fn lease(rv: &str, seconds: i32, draining: bool) -> Lease {
        let mut lease = Lease::default();
        lease.metadata.resource_version = Some(rv.into());
        if draining {
            lease.metadata.annotations =
                Some([(DRAINING_ANNOTATION.to_owned(), "true".to_owned())].into());
        }
        lease.spec = Some(LeaseSpec {
            lease_duration_seconds: Some(seconds),
            ..LeaseSpec::default()
        });
        lease
    }

    #[test]
    fn a_lease_expires_by_the_observers_clock_and_only_a_change_renews_it() {
        let start = Instant::now();
        let first = Observed::of(&lease("1", 10, false), start, None).expect("observed");
        assert!(!first.expired(start + Duration::from_secs(10)));
        assert!(first.expired(start + Duration::from_millis(10_001)));
        let later = start + Duration::from_secs(8);
        let same = Observed::of(&lease("1", 10, false), later, Some(&first)).expect("observed");
        assert_eq!(
            same.changed_at, start,
            "the same resourceVersion renews nothing"
        );
        let renewed = Observed::of(&lease("2", 10, false), later, Some(&first)).expect("observed");
        assert_eq!(renewed.changed_at, later);
        assert!(!renewed.expired(start + Duration::from_secs(17)));
    }

    #[test]
    fn draining_is_read_and_a_lease_without_a_duration_is_not_a_member() {
        let now = Instant::now();
        assert!(Observed::of(&lease("1", 10, true), now, None).is_some_and(|o| o.draining));
        let mut bare = lease("1", 10, false);
        bare.spec = None;
        assert!(Observed::of(&bare, now, None).is_none());
        assert_eq!(replica_of(&lease_name("host-a")), Some("host-a"));
        assert_eq!(replica_of("other-lease"), None);
    }
}
