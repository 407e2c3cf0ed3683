//! The guest's monotonic clock: WASI's monotonic clock (kept by the host) in a module; natively,
//! the installed host's clock: the [`FakeHost`](crate::fake::FakeHost)'s virtual clock, so
//! tests control time exactly (it only moves when the test advances it or completes a delay).

/// The current instant of the guest's monotonic clock.
pub fn now() -> std::time::Instant {
    imp::now()
}

#[cfg(target_arch = "wasm32")]
mod imp {
    pub fn now() -> std::time::Instant {
        std::time::Instant::now()
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    pub fn now() -> std::time::Instant {
        crate::imports::try_with_native_host(|host| host.now())
            .unwrap_or_else(std::time::Instant::now)
    }
}
