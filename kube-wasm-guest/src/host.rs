//! The host functions the guest calls: the ABI imports of module `kube_wasm_v1` on wasm32,
//! the thread's [`crate::fake::FakeHost`] natively. Each call returns at once.

use kube_wasm_abi::OpId;

/// Submits an `http_request` frame; returns the op id.
pub fn http_request(frame: &[u8]) -> OpId {
    imp::http_request(frame)
}

/// Submits a `watch` frame; returns the op id.
pub fn watch(frame: &[u8]) -> OpId {
    imp::watch(frame)
}

/// Starts a timer of `millis` milliseconds; returns the op id.
pub fn delay(millis: u64) -> OpId {
    imp::delay(millis)
}

/// Asks to be told when the host wants the module to stop; returns the op id.
pub fn stop_signal() -> OpId {
    imp::stop_signal()
}

/// Cancels a live op. Returns whether the host still knew it.
pub fn cancel(op: OpId) -> bool {
    imp::cancel(op)
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use kube_wasm_abi::OpId;

    #[link(wasm_import_module = "kube_wasm_v1")]
    unsafe extern "C" {
        #[link_name = "http_request"]
        fn kube_wasm_http_request(ptr: *const u8, len: usize) -> u64;
        #[link_name = "watch"]
        fn kube_wasm_watch(ptr: *const u8, len: usize) -> u64;
        #[link_name = "delay"]
        fn kube_wasm_delay(millis: i64) -> u64;
        #[link_name = "stop_signal"]
        fn kube_wasm_stop_signal() -> u64;
        #[link_name = "cancel"]
        fn kube_wasm_cancel(op: u64) -> i32;
    }

    // SAFETY (all functions below): the imports only read `len` bytes at `ptr`, which come
    // from a live slice, during the call; they keep no pointer and return plain integers.
    pub fn http_request(frame: &[u8]) -> OpId {
        unsafe { kube_wasm_http_request(frame.as_ptr(), frame.len()) }
    }

    pub fn watch(frame: &[u8]) -> OpId {
        unsafe { kube_wasm_watch(frame.as_ptr(), frame.len()) }
    }

    pub fn delay(millis: u64) -> OpId {
        unsafe { kube_wasm_delay(i64::try_from(millis).unwrap_or(i64::MAX)) }
    }

    pub fn stop_signal() -> OpId {
        unsafe { kube_wasm_stop_signal() }
    }

    pub fn cancel(op: OpId) -> bool {
        unsafe { kube_wasm_cancel(op) == 1 }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use crate::fake::{Submitted, try_with_installed, with_installed};
    use kube_wasm_abi::{HttpRequest, OpId, WatchRequest, decode_frame};

    pub fn http_request(frame: &[u8]) -> OpId {
        with_installed(|host| match decode_frame::<HttpRequest>(frame) {
            Ok(f) => host.submit(|id| Submitted::Http {
                id,
                request: f.header,
                body: f.body.to_vec(),
            }),
            Err(e) => host.bad_call("http_request", e),
        })
    }

    pub fn watch(frame: &[u8]) -> OpId {
        with_installed(|host| match decode_frame::<WatchRequest>(frame) {
            Ok(f) => host.submit(|id| Submitted::Watch {
                id,
                request: f.header,
            }),
            Err(e) => host.bad_call("watch", e),
        })
    }

    pub fn delay(millis: u64) -> OpId {
        with_installed(|host| host.submit(|id| Submitted::Delay { id, millis }))
    }

    pub fn stop_signal() -> OpId {
        with_installed(|host| host.submit(|id| Submitted::StopSignal { id }))
    }

    /// Cancelling needs no host: an op whose host is gone (a test thread ending) is over.
    pub fn cancel(op: OpId) -> bool {
        try_with_installed(|host| host.cancel(op)).unwrap_or(false)
    }
}
