//! The host functions the guest calls: the ABI imports of module `kube_wasm_v1` on wasm32,
//! natively the host installed on the thread ([`crate::fake::FakeHost`] in tests). Each call
//! returns at once.

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

/// Submits a `stream_open` frame (ABI 1.1); returns the stream's op id.
pub fn stream_open(frame: &[u8]) -> OpId {
    imp::stream_open(frame)
}

/// Queues one `stream_send` frame on `stream` (ABI 1.1); returns the send's op id.
pub fn stream_send(stream: OpId, frame: &[u8]) -> OpId {
    imp::stream_send(stream, frame)
}

/// Grants `stream` credit for `n` more `message` completions (ABI 1.1). Returns whether the
/// stream was live.
pub fn stream_credit(stream: OpId, n: u32) -> bool {
    imp::stream_credit(stream, n)
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use kube_wasm_abi::{OpId, abi_name};

    // `wasm_import_module` takes only a literal (not even a macro): checked against
    // `kube_wasm_abi::names::IMPORT_MODULE` at compile time below.
    #[link(wasm_import_module = "kube_wasm_v1")]
    unsafe extern "C" {
        #[link_name = abi_name!(IMPORT_HTTP_REQUEST)]
        fn kube_wasm_http_request(ptr: *const u8, len: usize) -> u64;
        #[link_name = abi_name!(IMPORT_WATCH)]
        fn kube_wasm_watch(ptr: *const u8, len: usize) -> u64;
        #[link_name = abi_name!(IMPORT_DELAY)]
        fn kube_wasm_delay(millis: i64) -> u64;
        #[link_name = abi_name!(IMPORT_STOP_SIGNAL)]
        fn kube_wasm_stop_signal() -> u64;
        #[link_name = abi_name!(IMPORT_CANCEL)]
        fn kube_wasm_cancel(op: u64) -> i32;
        #[link_name = abi_name!(IMPORT_STREAM_OPEN)]
        fn kube_wasm_stream_open(ptr: *const u8, len: usize) -> u64;
        #[link_name = abi_name!(IMPORT_STREAM_SEND)]
        fn kube_wasm_stream_send(stream: u64, ptr: *const u8, len: usize) -> u64;
        #[link_name = abi_name!(IMPORT_STREAM_CREDIT)]
        fn kube_wasm_stream_credit(stream: u64, n: i32) -> i32;
    }

    const _: () = assert!(
        same(
            b"kube_wasm_v1",
            kube_wasm_abi::names::IMPORT_MODULE.as_bytes()
        ),
        "the `wasm_import_module` above is not kube_wasm_abi::names::IMPORT_MODULE"
    );

    /// `a == b`, in a `const` context.
    const fn same(a: &[u8], b: &[u8]) -> bool {
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
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

    pub fn stream_open(frame: &[u8]) -> OpId {
        unsafe { kube_wasm_stream_open(frame.as_ptr(), frame.len()) }
    }

    pub fn stream_send(stream: OpId, frame: &[u8]) -> OpId {
        unsafe { kube_wasm_stream_send(stream, frame.as_ptr(), frame.len()) }
    }

    pub fn stream_credit(stream: OpId, n: u32) -> bool {
        unsafe { kube_wasm_stream_credit(stream, i32::try_from(n).unwrap_or(i32::MAX)) == 1 }
    }
}

/// Natively, what answers the imports on this thread: the host that stands in for the real
/// one ([`crate::fake::FakeHost`] installs itself here). Each method is the import of the same
/// name; `now` is the guest's monotonic clock.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) trait NativeHost {
    fn http_request(&self, frame: &[u8]) -> OpId;
    fn watch(&self, frame: &[u8]) -> OpId;
    fn delay(&self, millis: u64) -> OpId;
    fn stop_signal(&self) -> OpId;
    fn cancel(&self, op: OpId) -> bool;
    fn stream_open(&self, frame: &[u8]) -> OpId;
    fn stream_send(&self, stream: OpId, frame: &[u8]) -> OpId;
    fn stream_credit(&self, stream: OpId, n: u32) -> bool;
    fn now(&self) -> std::time::Instant;
}

#[cfg(not(target_arch = "wasm32"))]
thread_local! {
    static NATIVE_HOST: std::cell::RefCell<Option<std::rc::Rc<dyn NativeHost>>> =
        const { std::cell::RefCell::new(None) };
}

/// Makes `host` answer this thread's imports, in place of any earlier one.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn install_native_host(host: std::rc::Rc<dyn NativeHost>) {
    NATIVE_HOST.with(|h| *h.borrow_mut() = Some(host));
}

/// Runs `f` against this thread's native host if one is installed and the thread is not
/// being torn down.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn try_with_native_host<R>(f: impl FnOnce(&dyn NativeHost) -> R) -> Option<R> {
    let host = NATIVE_HOST
        .try_with(|h| h.borrow().clone())
        .ok()
        .flatten()?;
    Some(f(&*host))
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::{NativeHost, try_with_native_host};
    use kube_wasm_abi::OpId;

    /// Runs `f` against this thread's native host.
    ///
    /// # Panics
    /// If none is installed: outside wasm32, guest code needs one.
    fn with_host<R>(f: impl FnOnce(&dyn NativeHost) -> R) -> R {
        try_with_native_host(f).expect(
            "kube-wasm guest code needs a host: run it inside the host shim (wasm32-wasip1), \
             or install kube_wasm_guest::fake::FakeHost in native tests",
        )
    }

    pub fn http_request(frame: &[u8]) -> OpId {
        with_host(|host| host.http_request(frame))
    }

    pub fn watch(frame: &[u8]) -> OpId {
        with_host(|host| host.watch(frame))
    }

    pub fn delay(millis: u64) -> OpId {
        with_host(|host| host.delay(millis))
    }

    pub fn stop_signal() -> OpId {
        with_host(|host| host.stop_signal())
    }

    pub fn stream_open(frame: &[u8]) -> OpId {
        with_host(|host| host.stream_open(frame))
    }

    pub fn stream_send(stream: OpId, frame: &[u8]) -> OpId {
        with_host(|host| host.stream_send(stream, frame))
    }

    pub fn stream_credit(stream: OpId, n: u32) -> bool {
        with_host(|host| host.stream_credit(stream, n))
    }

    /// Cancelling needs no host: an op whose host is gone (a test thread ending) is over.
    pub fn cancel(op: OpId) -> bool {
        try_with_native_host(|host| host.cancel(op)).unwrap_or(false)
    }
}
