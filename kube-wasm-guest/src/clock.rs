//! The guest's monotonic clock: WASI's monotonic clock (kept by the host) in a module; natively,
//! the [`FakeHost`](crate::fake::FakeHost)'s virtual clock while one is installed, so tests
//! control time exactly (it only moves when the test advances it or completes a delay).

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
        crate::fake::try_with_installed(|host| host.now()).unwrap_or_else(std::time::Instant::now)
    }
}
