//! The per-module memory cap: a wasmtime [`ResourceLimiter`] that refuses to let a module's
//! linear memory grow past its limit, and ends the module with a clear error when it tries.
//!
//! A guest that asks for more memory than its cap traps at that `memory.grow` (rather than
//! seeing `-1`, which a Rust guest turns into an allocation-failure abort with a less helpful
//! message). The module loop recognises [`MemoryLimitExceeded`] and reports it.

use wasmtime::ResourceLimiter;

/// A linear memory tried to grow past the module's memory limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("tried to grow its memory to {requested} bytes, over its limit of {limit} bytes")]
pub struct MemoryLimitExceeded {
    /// The module's memory limit in bytes.
    pub limit: usize,
    /// The size in bytes the memory was to grow to.
    pub requested: usize,
}

/// The limiter of one module's store: linear memories up to `limit` bytes each (a kube-wasm
/// module has exactly one), tables up to their own declared maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryCap {
    limit: Option<usize>,
}

impl MemoryCap {
    /// A cap of `limit` bytes; `None` is no cap beyond wasm's own (4 GiB for wasm32) and the
    /// engine's.
    pub fn new(limit: Option<usize>) -> Self {
        Self { limit }
    }

    /// The cap in bytes, if any.
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if let Some(limit) = self.limit
            && desired > limit
        {
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                limit,
                requested: desired,
            }));
        }
        Ok(maximum.is_none_or(|max| desired <= max))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(maximum.is_none_or(|max| desired <= max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_past_the_cap_is_an_error_and_below_is_allowed() {
        let mut cap = MemoryCap::new(Some(1 << 20));
        assert!(cap.memory_growing(0, 1 << 20, None).expect("at the cap"));
        let err = cap
            .memory_growing(1 << 20, (1 << 20) + 65536, None)
            .expect_err("over the cap");
        let over = err.downcast_ref::<MemoryLimitExceeded>().expect("typed");
        assert_eq!(over.limit, 1 << 20);
        assert_eq!(over.requested, (1 << 20) + 65536);
        assert!(
            !cap.memory_growing(0, 65536 * 2, Some(65536))
                .expect("module max")
        );
        let mut none = MemoryCap::new(None);
        assert!(
            none.memory_growing(0, usize::MAX / 2, None)
                .expect("no cap")
        );
    }
}
