//! [`ReconcileRequest`] and [`ReconcileReason`]: what the scheduler queues.

use crate::reflector::ObjectRef;
use kube_core::{DynamicObject, Resource};
use std::fmt::{self, Debug, Display};
use std::hash::{Hash, Hasher};

/// A request to reconcile one object, as kube-runtime 5.0's `controller::ReconcileRequest`.
///
/// Equality and hashing use only [`obj_ref`](Self::obj_ref), not the reason: an object takes
/// one scheduler slot however many reasons it was requested for.
pub struct ReconcileRequest<K: Resource> {
    /// The object to reconcile.
    pub obj_ref: ObjectRef<K>,
    /// Why the reconciliation was requested (for logs; the reconciler does not see it).
    pub reason: ReconcileReason,
}

impl<K: Resource> Debug for ReconcileRequest<K>
where
    K::DynamicType: Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileRequest")
            .field("obj_ref", &self.obj_ref)
            .field("reason", &self.reason)
            .finish()
    }
}

impl<K: Resource> Clone for ReconcileRequest<K>
where
    K::DynamicType: Clone,
{
    fn clone(&self) -> Self {
        Self {
            obj_ref: self.obj_ref.clone(),
            reason: self.reason.clone(),
        }
    }
}

impl<K: Resource> PartialEq for ReconcileRequest<K>
where
    K::DynamicType: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.obj_ref == other.obj_ref
    }
}

impl<K: Resource> Eq for ReconcileRequest<K> where K::DynamicType: Eq {}

impl<K: Resource> Hash for ReconcileRequest<K>
where
    K::DynamicType: Hash,
{
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.obj_ref.hash(state);
    }
}

impl<K: Resource> From<ObjectRef<K>> for ReconcileRequest<K> {
    /// A request with the reason [`ReconcileReason::Unknown`].
    fn from(obj_ref: ObjectRef<K>) -> Self {
        Self {
            obj_ref,
            reason: ReconcileReason::Unknown,
        }
    }
}

/// Why a reconciliation was requested, as kube-runtime 5.0's `controller::ReconcileReason`.
#[derive(Debug, Clone)]
pub enum ReconcileReason {
    /// Requested from outside the controller's own triggers (e.g. a queue stream given to
    /// [`applier`](super::applier)), with no reason given.
    Unknown,
    /// The object itself was applied (created or changed).
    ObjectUpdated,
    /// A related object (owned, or mapped by `watches`) changed.
    RelatedObjectUpdated {
        /// The related object.
        obj_ref: Box<ObjectRef<DynamicObject>>,
    },
    /// The reconciler returned an [`Action`](super::Action) with a requeue delay.
    ReconcilerRequestedRetry,
    /// The error policy returned an [`Action`](super::Action) with a requeue delay.
    ErrorPolicyRequestedRetry,
    /// [`Controller::reconcile_all_on`](super::Controller::reconcile_all_on) fired.
    BulkReconcile,
    /// A reason given by a custom integration.
    Custom {
        /// The reason, as displayed.
        reason: String,
    },
}

impl Display for ReconcileReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown => f.write_str("unknown"),
            Self::ObjectUpdated => f.write_str("object updated"),
            Self::RelatedObjectUpdated { obj_ref } => {
                write!(f, "related object updated: {obj_ref}")
            }
            Self::ReconcilerRequestedRetry => f.write_str("reconciler requested retry"),
            Self::ErrorPolicyRequestedRetry => f.write_str("error policy requested retry"),
            Self::BulkReconcile => f.write_str("bulk reconcile requested"),
            Self::Custom { reason } => f.write_str(reason),
        }
    }
}
