//! The guest's ABI exports (wasm32 only). See SPEC.md, "Exports".

use crate::entry;
use kube_wasm_abi::abi_name;
use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    /// Buffers handed to the host by `kube_wasm_alloc` and not yet returned through
    /// `kube_wasm_complete`: address → length.
    static LENT: RefCell<HashMap<usize, usize>> = RefCell::new(HashMap::new());
}

/// `kube_wasm_abi_version() -> i32`: the packed ABI version this guest speaks.
#[unsafe(export_name = abi_name!(EXPORT_ABI_VERSION))]
pub extern "C" fn kube_wasm_abi_version() -> u32 {
    kube_wasm_abi::ABI_VERSION
}

/// `kube_wasm_alloc(len: i32) -> i32`: a buffer of `len` bytes for the host to write one
/// completion frame into; 0 if memory is exhausted.
#[unsafe(export_name = abi_name!(EXPORT_ALLOC))]
pub extern "C" fn kube_wasm_alloc(len: usize) -> *mut u8 {
    let mut buf: Vec<u8> = Vec::new();
    if buf.try_reserve_exact(len.max(1)).is_err() {
        return std::ptr::null_mut();
    }
    let ptr = buf.as_mut_ptr();
    let capacity = buf.capacity();
    std::mem::forget(buf);
    LENT.with(|lent| lent.borrow_mut().insert(ptr as usize, capacity));
    ptr
}

/// `kube_wasm_complete(op: i64, ptr: i32, len: i32)`: takes back the buffer from
/// `kube_wasm_alloc`, delivers the completion to `op` and runs until stalled. A pointer that
/// `kube_wasm_alloc` did not hand out, or a length beyond it, is ignored.
#[unsafe(export_name = abi_name!(EXPORT_COMPLETE))]
pub extern "C" fn kube_wasm_complete(op: u64, ptr: *mut u8, len: usize) {
    let Some(capacity) = LENT.with(|lent| lent.borrow_mut().remove(&(ptr as usize))) else {
        eprintln!("kube-wasm: completion for op {op} in a buffer the guest did not lend; ignored");
        return;
    };
    // SAFETY: `ptr` and `capacity` come from a `Vec<u8>` that `kube_wasm_alloc` leaked and
    // that was removed from `LENT` just now, so it is reclaimed exactly once. The host wrote
    // `len` bytes into it; lengths past the capacity are clamped.
    let buf = unsafe { Vec::from_raw_parts(ptr, len.min(capacity), capacity) };
    entry::complete(op, buf);
}
