//! This replica's membership Lease: acquired (created, or taken over once a previous
//! incarnation's has expired by this replica's observation), renewed every renew period with
//! its resourceVersion as precondition, marked draining during a handoff, and deleted when the
//! replica has handed everything over.
//!
//! Freshness is what fences this replica: after each successful renew it may act until the
//! instant the renew *was sent* plus the renew deadline. The other replicas take its modules
//! only once they have seen its Lease unchanged for the whole lease duration, which is longer,
//! so a replica that cannot renew has stopped its modules before any other can start them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams, Preconditions};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::members::{DRAINING_ANNOTATION, MEMBER_LABEL, lease_name};
use super::{PlacementConfig, RETRY_AFTER_FAILURE};
use crate::metrics::ReplicaMetrics;

/// Until when this replica may act (`None`: it holds no current Lease).
pub type Freshness = Option<Instant>;

/// This replica's Lease. Cheap to clone; clones share the state.
#[derive(Clone)]
pub struct OwnLease {
    api: Api<Lease>,
    config: Arc<PlacementConfig>,
    /// Written as `holderIdentity`: the replica and a random per-process tag, so that a
    /// restarted process under the same name waits for its predecessor's Lease to expire.
    incarnation: String,
    freshness: watch::Sender<Freshness>,
    draining: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    wake: Arc<Notify>,
    metrics: ReplicaMetrics,
}

enum Renewed {
    /// Written: the Lease as the API server returned it.
    Held(Box<Lease>),
    /// Another incarnation holds it and it has not expired yet.
    HeldElsewhere,
}

impl OwnLease {
    /// The Lease of `config.replica` in the Lease namespace `api` reaches.
    pub fn new(api: Api<Lease>, config: Arc<PlacementConfig>, metrics: ReplicaMetrics) -> Self {
        let mut tag = [0u8; 6];
        if getrandom::fill(&mut tag).is_err() {
            tag[..4].copy_from_slice(&std::process::id().to_be_bytes());
        }
        Self {
            api,
            incarnation: format!("{}_{}", config.replica, hex::encode(tag)),
            config,
            freshness: watch::Sender::new(None),
            draining: Arc::default(),
            done: Arc::default(),
            wake: Arc::default(),
            metrics,
        }
    }

    /// Until when this replica may act, changing with every renew and loss.
    pub fn freshness(&self) -> watch::Receiver<Freshness> {
        self.freshness.subscribe()
    }

    /// Whether this replica holds a current Lease now.
    pub fn is_fresh(&self) -> bool {
        self.freshness
            .borrow()
            .is_some_and(|until| Instant::now() < until)
    }

    /// Marks the Lease draining (the other replicas stop assigning modules here) and returns
    /// once that is written or a renew period has passed.
    pub async fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
        let mut freshness = self.freshness();
        freshness.borrow_and_update();
        self.wake.notify_one();
        let _ = tokio::time::timeout(self.config.renew_period, freshness.changed()).await;
    }

    /// Stops renewing and deletes the Lease (its resourceVersion as precondition): the
    /// replica has stopped and released every module.
    pub fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Acquires and renews until [`finish`](Self::finish), then deletes the Lease.
    pub async fn run(self) {
        let mut held: Option<Lease> = None;
        let mut foreign: Option<(String, Instant)> = None;
        let mut last_warning: Option<Instant> = None;
        while !self.done.load(Ordering::SeqCst) {
            let sent = Instant::now();
            let attempt = tokio::time::timeout(
                self.config.renew_period.max(Duration::from_secs(1)),
                self.renew(held.take(), &mut foreign),
            )
            .await;
            let mut next = self.config.renew_period;
            if !matches!(attempt, Ok(Ok(_))) {
                next = next.min(RETRY_AFTER_FAILURE);
            }
            match attempt {
                Ok(Ok(Renewed::Held(lease))) => {
                    let lease = *lease;
                    self.metrics.observe_renew(sent.elapsed());
                    held = Some(lease);
                    self.freshness
                        .send_replace(Some(sent + self.config.renew_deadline));
                }
                Ok(Ok(Renewed::HeldElsewhere)) => self.lose("held by a previous incarnation"),
                Ok(Err(err)) => {
                    self.metrics.count_renew_failure();
                    if last_warning.is_none_or(|at| at.elapsed() > self.config.lease_duration) {
                        tracing::warn!("renewing this replica's Lease: {err}");
                        last_warning = Some(Instant::now());
                    }
                }
                Err(_) => self.metrics.count_renew_failure(),
            }
            tokio::select! {
                () = tokio::time::sleep(next) => {}
                () = self.wake.notified() => {}
            }
        }
        self.freshness.send_replace(None);
        if let Some(lease) = held {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    resource_version: lease.metadata.resource_version.clone(),
                    uid: lease.metadata.uid.clone(),
                }),
                ..DeleteParams::default()
            };
            match self.api.delete(&self.name(), &params).await {
                Ok(_) => tracing::info!("deleted this replica's Lease"),
                Err(err) => tracing::warn!("deleting this replica's Lease: {err}"),
            }
        }
    }

    fn name(&self) -> String {
        lease_name(&self.config.replica)
    }

    fn lose(&self, why: &str) {
        let had = self.freshness.send_replace(None).is_some();
        if had {
            tracing::warn!("this replica lost its Lease: {why}");
        }
    }

    /// One acquire-or-renew: a replace of the Lease last written when there is one (one
    /// request), else a read and then a create, a renew or a takeover.
    async fn renew(
        &self,
        held: Option<Lease>,
        foreign: &mut Option<(String, Instant)>,
    ) -> kube::Result<Renewed> {
        if let Some(lease) = held {
            match self.write(lease).await {
                Ok(lease) => return Ok(Renewed::Held(Box::new(lease))),
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {
                    // Someone else wrote it: read it again below.
                }
                Err(err) => return Err(err),
            }
        }
        let Some(current) = self.api.get_opt(&self.name()).await? else {
            *foreign = None;
            let lease = self.stamped(Lease {
                metadata: ObjectMeta {
                    name: Some(self.name()),
                    labels: Some([(MEMBER_LABEL.to_owned(), "true".to_owned())].into()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    acquire_time: Some(now()),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            });
            let created = self.api.create(&PostParams::default(), &lease).await?;
            tracing::info!(lease = %self.name(), "acquired this replica's Lease");
            return Ok(Renewed::Held(Box::new(created)));
        };
        let holder = current
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone());
        if holder.as_deref() == Some(self.incarnation.as_str()) {
            return self
                .write(current)
                .await
                .map(|l| Renewed::Held(Box::new(l)));
        }
        // Another incarnation's: taken over only once unchanged for its duration.
        self.lose("held by another incarnation");
        let rv = current
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        let duration = current
            .spec
            .as_ref()
            .and_then(|s| s.lease_duration_seconds)
            .and_then(|s| u64::try_from(s).ok())
            .map_or(self.config.lease_duration, Duration::from_secs);
        let since = match foreign {
            Some((seen, at)) if *seen == rv => *at,
            _ => {
                *foreign = Some((rv, Instant::now()));
                return Ok(Renewed::HeldElsewhere);
            }
        };
        if since.elapsed() <= duration {
            return Ok(Renewed::HeldElsewhere);
        }
        let mut taken = current;
        let spec = taken.spec.get_or_insert_with(LeaseSpec::default);
        spec.acquire_time = Some(now());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
        let taken = self.write(taken).await?;
        *foreign = None;
        tracing::info!(
            lease = %self.name(),
            previous = holder.as_deref().unwrap_or(""),
            "took over this replica's Lease from an expired incarnation"
        );
        Ok(Renewed::Held(Box::new(taken)))
    }

    /// Writes `lease` as this incarnation's, renewed now (a replace: its resourceVersion is
    /// the precondition).
    async fn write(&self, lease: Lease) -> kube::Result<Lease> {
        let lease = self.stamped(lease);
        self.api
            .replace(&self.name(), &PostParams::default(), &lease)
            .await
    }

    fn stamped(&self, mut lease: Lease) -> Lease {
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = Some(self.incarnation.clone());
        spec.lease_duration_seconds =
            Some(i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX));
        spec.renew_time = Some(now());
        let annotations = lease.metadata.annotations.get_or_insert_with(BTreeMap::new);
        if self.draining.load(Ordering::SeqCst) {
            annotations.insert(DRAINING_ANNOTATION.to_owned(), "true".to_owned());
        } else {
            annotations.remove(DRAINING_ANNOTATION);
        }
        lease
    }
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}
