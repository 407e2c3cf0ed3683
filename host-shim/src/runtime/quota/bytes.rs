//! The buffered-bytes quota: a module's budget of bytes the host holds for it, shared by its
//! ops, taken before bytes are buffered and given back when they are dropped.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most bytes one budget can hold (a permit count of tokio's semaphore is a `u32`).
const MAX_BUDGET: usize = u32::MAX as usize;

/// One module's budget of buffered bytes ([`super::Quotas::buffered_bytes`]). Cheap to clone;
/// clones share the budget.
#[derive(Debug, Clone)]
pub struct ByteBudget {
    bytes: Arc<Semaphore>,
    limit: usize,
}

/// Bytes taken from a [`ByteBudget`]; dropping it gives them back.
#[derive(Debug, Default)]
pub struct HeldBytes {
    permit: Option<OwnedSemaphorePermit>,
}

impl ByteBudget {
    /// A budget of `limit` bytes (at most 4 GiB − 1; more counts as that).
    pub fn new(limit: usize) -> Self {
        let limit = limit.min(MAX_BUDGET);
        Self {
            bytes: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    /// The budget's size in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now.
    pub fn in_use(&self) -> usize {
        self.limit - self.bytes.available_permits()
    }

    /// Takes `n` bytes if that many are free now; `None` if not. For bytes that must not
    /// wait: a request body, a response body being collected (waiting there could deadlock
    /// ops that hold bytes and wait for each other).
    pub fn try_hold(&self, n: usize) -> Option<HeldBytes> {
        if n == 0 {
            return Some(HeldBytes::default());
        }
        let n = u32::try_from(n).ok()?;
        self.bytes
            .clone()
            .try_acquire_many_owned(n)
            .ok()
            .map(|permit| HeldBytes {
                permit: Some(permit),
            })
    }

    /// Takes `n` bytes, waiting until they are free: how a stream's next completion waits for
    /// the guest to take earlier ones. `None` if `n` exceeds the whole budget (it never fits).
    pub async fn hold(&self, n: usize) -> Option<HeldBytes> {
        if n == 0 {
            return Some(HeldBytes::default());
        }
        if n > self.limit {
            return None;
        }
        let n = u32::try_from(n).ok()?;
        // The semaphore is never closed.
        self.bytes
            .clone()
            .acquire_many_owned(n)
            .await
            .ok()
            .map(|permit| HeldBytes {
                permit: Some(permit),
            })
    }
}

impl HeldBytes {
    /// How many bytes are held.
    pub fn len(&self) -> usize {
        self.permit.as_ref().map_or(0, |p| p.num_permits())
    }

    /// Whether no bytes are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `other`'s bytes to these (both came from the same budget).
    pub fn merge(&mut self, other: HeldBytes) {
        match (&mut self.permit, other.permit) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bytes_are_held_until_dropped() {
        let budget = ByteBudget::new(100);
        let mut a = budget.try_hold(60).expect("fits");
        assert!(budget.try_hold(41).is_none(), "only 40 left");
        a.merge(budget.try_hold(40).expect("fits"));
        assert_eq!((a.len(), budget.in_use()), (100, 100));
        drop(a);
        assert_eq!(budget.in_use(), 0);
        assert!(budget.try_hold(0).expect("zero always fits").is_empty());
    }

    #[tokio::test]
    async fn hold_waits_for_bytes_and_refuses_what_never_fits() {
        let budget = ByteBudget::new(10);
        assert!(budget.hold(11).await.is_none());
        let held = budget.try_hold(10).expect("fits");
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.hold(5).await.map(|h| h.len()) }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "waits while the budget is spent");
        drop(held);
        assert_eq!(waiting.await.expect("joins"), Some(5));
    }
}
