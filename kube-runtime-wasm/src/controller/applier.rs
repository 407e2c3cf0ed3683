//! [`applier`]: the reconcile loop behind [`Controller::run`](super::Controller::run).

use super::runner::Runner;
use super::{Action, Config, Error, LOG_TARGET, ReconcileReason, ReconcileRequest};
use crate::reflector::{ObjectRef, Store};
use crate::scheduler::{ScheduleRequest, debounced_scheduler, max_schedule_time};
use futures::channel::{mpsc, oneshot};
use futures::{Stream, StreamExt, TryFuture, TryFutureExt, TryStream, TryStreamExt, stream};
use kube_core::Resource;
use kube_wasm_tokio::time::Instant;
use pin_project::pin_project;
use std::fmt::Debug;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tracing::Instrument as _;

/// Runs `reconciler` on the objects `queue` asks for, as kube-runtime 5.0's
/// `controller::applier` (the building block of [`Controller`](super::Controller)).
///
/// - Each request from `queue` is scheduled at once (plus `config`'s debounce), deduplicated
///   per object; the object is read from `store` when its reconciliation starts
///   ([`Error::ObjectNotFound`] if it is not there). Nothing runs before `store` is ready.
/// - One object is never reconciled twice at once: a request arriving meanwhile runs after
///   the current reconciliation. At most `config.concurrency` reconciliations run at once
///   (`0`: no limit).
/// - The [`Action`] returned by the reconciler — or by `error_policy` when the reconciler
///   fails (then the item is [`Error::ReconcilerFailed`]) — schedules the next
///   reconciliation of the object, its delay counted from the end of this one.
/// - `queue` errors are reported as [`Error::QueueError`] and the loop goes on.
/// - When `queue` ends, requeues stop being taken, the running reconciliations finish,
///   and the stream ends (a graceful shutdown).
#[allow(clippy::needless_pass_by_value, clippy::type_complexity)]
pub fn applier<K, QueueStream, ReconcilerFut, Ctx>(
    mut reconciler: impl FnMut(Arc<K>, Arc<Ctx>) -> ReconcilerFut,
    error_policy: impl Fn(Arc<K>, &ReconcilerFut::Error, Arc<Ctx>) -> Action,
    context: Arc<Ctx>,
    store: Store<K>,
    queue: QueueStream,
    config: Config,
) -> impl Stream<Item = Result<(ObjectRef<K>, Action), Error<ReconcilerFut::Error, QueueStream::Error>>>
where
    K: Clone + Resource + 'static,
    K::DynamicType: Debug + Eq + Hash + Clone + Unpin,
    ReconcilerFut: TryFuture<Ok = Action> + Unpin,
    ReconcilerFut::Error: std::error::Error + 'static,
    QueueStream: TryStream,
    QueueStream::Ok: Into<ReconcileRequest<K>>,
    QueueStream::Error: std::error::Error + 'static,
{
    let (queue_errors_tx, queue_errors) = mpsc::unbounded();
    let (requeue_tx, requeue_rx) = mpsc::unbounded::<ScheduleRequest<ReconcileRequest<K>>>();
    let (queue_done_tx, queue_done) = oneshot::channel::<()>();
    let error_policy = Arc::new(error_policy);

    // Requests from the queue run now; its errors go straight to the output. When it
    // ends, requeues are no longer taken, so the scheduler (and then the runner) ends.
    let from_queue = queue
        .into_stream()
        .filter_map(move |item| {
            let request = match item {
                Ok(request) => Some(ScheduleRequest {
                    message: request.into(),
                    run_at: Instant::now(),
                }),
                Err(err) => {
                    // The output stream owns the receiver; if it is gone nobody listens.
                    let _ = queue_errors_tx.unbounded_send(Err(Error::QueueError(err)));
                    None
                }
            };
            futures::future::ready(request)
        })
        .chain(
            stream::once(async move {
                let _ = queue_done_tx.send(());
            })
            .filter_map(|()| futures::future::ready(None)),
        );
    let requests = stream::select(from_queue, requeue_rx.take_until(queue_done));

    let ready_store = store.clone();
    let runner = Runner::new(
        debounced_scheduler(requests, config.debounce),
        config.concurrency,
        move |request: &ReconcileRequest<K>| {
            let obj_ref = request.obj_ref.clone();
            // kube-runtime's span around each reconciliation, with its target and fields.
            let span = tracing::info_span!(
                target: LOG_TARGET,
                "reconciling object",
                "object.ref" = %request.obj_ref,
                object.reason = %request.reason
            );
            let started = store.get(&obj_ref).map(|obj| {
                let reconciliation = span.in_scope(|| reconciler(obj.clone(), context.clone()));
                (obj, reconciliation)
            });
            let context = context.clone();
            let error_policy = error_policy.clone();
            let requeue_tx = requeue_tx.clone();
            Box::pin(
                async move {
                    let Some((obj, reconciliation)) = started else {
                        return Err(Error::ObjectNotFound(Box::new(obj_ref.erase())));
                    };
                    let result = TryFutureExt::into_future(reconciliation).await;
                    let (action, reason) = match &result {
                        Ok(action) => (action.clone(), ReconcileReason::ReconcilerRequestedRetry),
                        Err(err) => (
                            error_policy(obj, err, context),
                            ReconcileReason::ErrorPolicyRequestedRetry,
                        ),
                    };
                    if let Some(after) = action.requeue_after() {
                        let run_at = Instant::now()
                            .checked_add(after)
                            .unwrap_or_else(max_schedule_time);
                        let message = ReconcileRequest {
                            obj_ref: obj_ref.clone(),
                            reason,
                        };
                        // Refused only during shutdown, when requeues are moot.
                        let _ = requeue_tx.unbounded_send(ScheduleRequest { message, run_at });
                    }
                    match result {
                        Ok(action) => Ok((obj_ref, action)),
                        Err(err) => Err(Error::ReconcilerFailed(err, Box::new(obj_ref.erase()))),
                    }
                }
                .instrument(span),
            )
        },
    )
    .delay_tasks_until(async move { ready_store.wait_until_ready().await })
    .map(|item| item.unwrap_or_else(|err| Err(Error::RunnerError(err))));

    WithSideErrors {
        main: runner,
        side: queue_errors,
    }
}

/// `main`'s items, with the items of `side` (filled while `main` is polled) slipped in;
/// ends when `main` does, after draining `side`.
#[pin_project]
struct WithSideErrors<S, E> {
    #[pin]
    main: S,
    side: mpsc::UnboundedReceiver<E>,
}

impl<S, E> Stream for WithSideErrors<S, E>
where
    S: Stream<Item = E>,
{
    type Item = E;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<E>> {
        let this = self.project();
        let main = this.main.poll_next(cx);
        if let Poll::Ready(Some(item)) = main {
            return Poll::Ready(Some(item));
        }
        if let Poll::Ready(Some(err)) = this.side.poll_next_unpin(cx) {
            return Poll::Ready(Some(err));
        }
        match main {
            Poll::Ready(None) => Poll::Ready(this.side.try_recv().ok()),
            _ => Poll::Pending,
        }
    }
}
