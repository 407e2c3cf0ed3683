//! Ready-made [`Condition`]s for [`await_condition`](super::await_condition), as
//! kube-runtime 5.0's `kube_runtime::wait::conditions`, and the combinators
//! [`Condition::not`], [`Condition::and`] and [`Condition::or`] return.

pub use super::Condition;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::Resource;
use serde::Serialize;

/// Holds once the object with uid `uid` is gone: the object is absent, or present with
/// another uid (it was deleted and recreated, even if the deletion went unseen), as
/// kube-runtime 5.0's `is_deleted`.
#[must_use]
pub fn is_deleted<K: Resource>(uid: &str) -> impl Condition<K> + '_ {
    move |obj: Option<&K>| obj.is_none_or(|obj| obj.meta().uid.as_deref() != Some(uid))
}

/// Holds once the object exists, as kube-runtime 5.0's `is_created` (the counterpart of
/// [`is_deleted`]).
#[must_use]
pub fn is_created<K: Resource>() -> impl Condition<K> {
    |obj: Option<&K>| obj.is_some()
}

/// Holds once a `CustomResourceDefinition` has the status condition `Established` set to
/// `"True"`, as kube-runtime 5.0's `is_crd_established`. Discovery may take a little longer
/// to serve the new resource.
#[must_use]
pub fn is_crd_established() -> impl Condition<CustomResourceDefinition> {
    |obj: Option<&CustomResourceDefinition>| {
        let conditions = obj
            .and_then(|crd| crd.status.as_ref())
            .and_then(|status| status.conditions.as_ref());
        conditions
            .and_then(|conds| conds.iter().find(|c| c.type_ == "Established"))
            .is_some_and(|c| c.status == "True")
    }
}

/// Holds once a `Pod`'s `status.phase` is `Running`, as kube-runtime 5.0's
/// `is_pod_running`.
#[must_use]
pub fn is_pod_running() -> impl Condition<Pod> {
    |obj: Option<&Pod>| {
        obj.and_then(|pod| pod.status.as_ref())
            .and_then(|status| status.phase.as_deref())
            == Some("Running")
    }
}

/// Holds once a `Job` has the status condition `Complete` set to `"True"`, as kube-runtime
/// 5.0's `is_job_completed`.
#[must_use]
pub fn is_job_completed() -> impl Condition<Job> {
    |obj: Option<&Job>| {
        obj.and_then(|job| job.status.as_ref())
            .and_then(|status| status.conditions.as_ref())
            .and_then(|conds| conds.iter().find(|c| c.type_ == "Complete"))
            .is_some_and(|c| c.status == "True")
    }
}

/// Holds once a `Deployment`'s latest rollout is complete — its first `Progressing` status
/// condition with reason `NewReplicaSetAvailable` has status `"True"` — as kube-runtime
/// 5.0's `is_deployment_completed`
/// (<https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#complete-deployment>).
#[must_use]
pub fn is_deployment_completed() -> impl Condition<Deployment> {
    |obj: Option<&Deployment>| {
        obj.and_then(|deployment| deployment.status.as_ref())
            .and_then(|status| status.conditions.as_ref())
            .and_then(|conds| {
                conds.iter().map(fields).find(|c| {
                    c.type_.as_deref() == Some("Progressing")
                        && c.reason.as_deref() == Some("NewReplicaSetAvailable")
                })
            })
            .is_some_and(|c| c.status.as_deref() == Some("True"))
    }
}

/// Holds once a `Service` of type `LoadBalancer` has an ingress point and every one has an
/// IP or a hostname, as kube-runtime 5.0's `is_service_loadbalancer_provisioned`. A
/// service of any other type (with a `spec`) holds at once; an absent one never does.
#[must_use]
pub fn is_service_loadbalancer_provisioned() -> impl Condition<Service> {
    |obj: Option<&Service>| {
        let Some(service) = obj else { return false };
        let Some(spec) = &service.spec else {
            return false;
        };
        if spec.type_.as_deref() != Some("LoadBalancer") {
            return true;
        }
        service
            .status
            .as_ref()
            .and_then(|status| status.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref())
            .is_some_and(|ingress| {
                ingress
                    .iter()
                    .all(|point| point.ip.is_some() || point.hostname.is_some())
            })
    }
}

/// Holds once an `Ingress` has a load-balancer ingress list and every entry has an IP or a
/// hostname, as kube-runtime 5.0's `is_ingress_provisioned`.
#[must_use]
pub fn is_ingress_provisioned() -> impl Condition<Ingress> {
    |obj: Option<&Ingress>| {
        obj.and_then(|ingress| ingress.status.as_ref())
            .and_then(|status| status.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref())
            .is_some_and(|ingress| {
                ingress
                    .iter()
                    .all(|point| point.ip.is_some() || point.hostname.is_some())
            })
    }
}

/// A status condition's `type`, `reason` and `status`, whatever their Rust types in the
/// Kubernetes version k8s-openapi was built for (1.37 made `DeploymentCondition::type_` and
/// `status` optional).
#[derive(serde::Deserialize)]
struct ConditionFields {
    #[serde(rename = "type")]
    type_: Option<String>,
    reason: Option<String>,
    status: Option<String>,
}

/// [`ConditionFields`] of a k8s-openapi condition (all `None` if it does not serialize).
fn fields(condition: &impl Serialize) -> ConditionFields {
    serde_json::to_value(condition)
        .and_then(serde_json::from_value)
        .unwrap_or(ConditionFields {
            type_: None,
            reason: None,
            status: None,
        })
}

/// The negation of a condition; see [`Condition::not`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Not<A>(pub(super) A);

impl<A: Condition<K>, K> Condition<K> for Not<A> {
    fn matches_object(&self, obj: Option<&K>) -> bool {
        !self.0.matches_object(obj)
    }
}

/// The conjunction of two conditions; see [`Condition::and`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct And<A, B>(pub(super) A, pub(super) B);

impl<A: Condition<K>, B: Condition<K>, K> Condition<K> for And<A, B> {
    fn matches_object(&self, obj: Option<&K>) -> bool {
        self.0.matches_object(obj) && self.1.matches_object(obj)
    }
}

/// The disjunction of two conditions; see [`Condition::or`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Or<A, B>(pub(super) A, pub(super) B);

impl<A: Condition<K>, B: Condition<K>, K> Condition<K> for Or<A, B> {
    fn matches_object(&self, obj: Option<&K>) -> bool {
        self.0.matches_object(obj) || self.1.matches_object(obj)
    }
}
