//! Turning watched objects into [`ReconcileRequest`]s: [`trigger_with`], [`trigger_self`],
//! [`trigger_owners`], `trigger_owners_shared` and `trigger_others`.

use super::{ReconcileReason, ReconcileRequest};
use crate::reflector::ObjectRef;
use futures::{Stream, TryStream, TryStreamExt, stream};
use kube_core::Resource;
use std::borrow::Borrow;

/// Maps each object of `stream` to any number of reconcile requests with `mapper`; errors
/// pass through. As kube-runtime 5.0's `controller::trigger_with`.
pub fn trigger_with<T, K, I, S>(
    stream: S,
    mapper: impl Fn(T) -> I,
) -> impl Stream<Item = Result<ReconcileRequest<K>, S::Error>>
where
    S: TryStream<Ok = T>,
    I: IntoIterator,
    I::Item: Into<ReconcileRequest<K>>,
    K: Resource,
{
    stream
        .map_ok(move |obj| stream::iter(mapper(obj).into_iter().map(|r| Ok(r.into()))))
        .try_flatten()
}

/// One request per object of `stream`, for that object ([`ReconcileReason::ObjectUpdated`]).
/// As kube-runtime 5.0's `controller::trigger_self`.
pub fn trigger_self<K, S>(
    stream: S,
    dyntype: K::DynamicType,
) -> impl Stream<Item = Result<ReconcileRequest<K>, S::Error>>
where
    S: TryStream,
    S::Ok: Borrow<K>,
    K: Resource,
    K::DynamicType: Clone,
{
    trigger_with(stream, move |obj: S::Ok| {
        Some(ReconcileRequest {
            obj_ref: ObjectRef::from_obj_with(obj.borrow(), dyntype.clone()),
            reason: ReconcileReason::ObjectUpdated,
        })
    })
}

/// Requests for the objects `mapper` relates to each object of `stream`
/// ([`ReconcileReason::RelatedObjectUpdated`], naming the watched object), as
/// kube-runtime 5.0's (crate-private) `trigger_others` behind `Controller::watches`.
pub(crate) fn trigger_others<S, O, K, I>(
    stream: S,
    mapper: impl Fn(S::Ok) -> I + Sync + Send + 'static,
    dyntype: O::DynamicType,
) -> impl Stream<Item = Result<ReconcileRequest<K>, S::Error>>
where
    S: TryStream,
    S::Ok: Borrow<O>,
    O: Resource,
    O::DynamicType: Clone,
    K: Resource,
    K::DynamicType: Clone,
    I: 'static + IntoIterator<Item = ObjectRef<K>>,
    I::IntoIter: Send,
{
    trigger_with(stream, move |obj: S::Ok| {
        let related = ObjectRef::from_obj_with(obj.borrow(), dyntype.clone()).erase();
        mapper(obj)
            .into_iter()
            .map(move |obj_ref| ReconcileRequest {
                obj_ref,
                reason: ReconcileReason::RelatedObjectUpdated {
                    obj_ref: Box::new(related.clone()),
                },
            })
    })
}

/// Requests for the owners (of type `KOwner`, from `metadata.ownerReferences`) of each
/// object of `stream`, as kube-runtime 5.0's `controller::trigger_owners`. Owner references
/// of another kind are skipped; owners are looked up in the child's namespace.
pub fn trigger_owners<KOwner, S>(
    stream: S,
    owner_type: KOwner::DynamicType,
    child_type: <S::Ok as Resource>::DynamicType,
) -> impl Stream<Item = Result<ReconcileRequest<KOwner>, S::Error>>
where
    S: TryStream,
    S::Ok: Resource,
    <S::Ok as Resource>::DynamicType: Clone,
    KOwner: Resource,
    KOwner::DynamicType: Clone,
{
    let mapper = move |obj: S::Ok| {
        let meta = obj.meta();
        let namespace = meta.namespace.clone();
        let owner_type = owner_type.clone();
        meta.owner_references
            .clone()
            .unwrap_or_default()
            .into_iter()
            .filter_map(move |owner| {
                ObjectRef::from_owner_ref(namespace.as_deref(), &owner, owner_type.clone())
            })
    };
    trigger_others::<S, S::Ok, KOwner, _>(stream, mapper, child_type)
}

/// [`trigger_owners`] for a stream of shared `Arc<K>` children (e.g. a
/// [`ReflectHandle`](crate::reflector::ReflectHandle)), as kube-runtime 5.0's
/// (crate-private) `trigger_owners_shared` behind `Controller::owns_shared_stream`.
#[cfg(feature = "unstable-runtime-subscribe")]
pub(crate) fn trigger_owners_shared<KOwner, K, S>(
    stream: S,
    owner_type: KOwner::DynamicType,
    child_type: K::DynamicType,
) -> impl Stream<Item = Result<ReconcileRequest<KOwner>, S::Error>>
where
    S: TryStream<Ok = std::sync::Arc<K>>,
    K: Resource,
    K::DynamicType: Clone,
    KOwner: Resource,
    KOwner::DynamicType: Clone,
{
    let mapper = move |obj: S::Ok| {
        let meta = obj.meta();
        let namespace = meta.namespace.clone();
        let owner_type = owner_type.clone();
        meta.owner_references
            .clone()
            .unwrap_or_default()
            .into_iter()
            .filter_map(move |owner| {
                ObjectRef::from_owner_ref(namespace.as_deref(), &owner, owner_type.clone())
            })
    };
    trigger_others::<S, K, KOwner, _>(stream, mapper, child_type)
}
