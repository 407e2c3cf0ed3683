//! Func refs an idle instance writes, on as few pages as they can be.
//!
//! Every function a module's table or exports name gets a 32-byte `VMFuncRef` in each
//! instance's `VMContext`, numbered in the order wasmtime meets them (imports, exports,
//! element segments), and written the first time the guest calls through its table slot.
//! A kube-rs controller's table names about 900 functions once merged (28 KiB of func refs
//! an instance), of which an idle controller has called through 30 to 40 — waker vtables,
//! boxed futures' `poll`, `bytes` vtables — spread over six or seven pages, every one of
//! them private and resident in every instance. Numbered first, those few fit on one.
//!
//! Which functions those are depends on the module and is found by running it: with a cache
//! folder (where the profile is kept, beside the compiled module), [`plan`] compiles a
//! module with no profile yet from its instrumented form ([`instrument`]), whose instances
//! report every slot they call through into a shared [`FuncRefProfile`]; once written, the
//! profile's functions are declared before the module's element segments ([`order`]) in
//! every later compile of the same wasm — from the next host on, as the module's next load
//! finds the profile. Neither rewrite changes what the module does: the instrumented form
//! only calls one more import, and the ordered form declares functions, which puts nothing
//! anywhere. A profile is a hint: a stale, foreign or corrupted one changes which functions
//! come first, never what the module computes, so it needs none of the compiled artifacts'
//! checks.

pub mod import;
pub mod instrument;
pub mod order;
pub mod profile;

use std::borrow::Cow;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

pub use profile::FuncRefProfile;

use crate::runtime::cache::ModuleCache;

/// What to compile for a module: its wasm as it is, ordered by its profile, or instrumented
/// to make one.
#[derive(Debug)]
pub struct Plan<'a> {
    /// The wasm to compile.
    pub wasm: Cow<'a, [u8]>,
    /// The profile its instances report into: `Some` if `wasm` is the instrumented form.
    pub profile: Option<Arc<FuncRefProfile>>,
}

/// What to compile for `wasm` when func refs are not profiled: the wasm as it is.
pub fn as_is(wasm: &[u8]) -> Plan<'_> {
    Plan {
        wasm: Cow::Borrowed(wasm),
        profile: None,
    }
}

/// The plan for compiling `wasm` with profiles kept in `cache` (see the module docs): ordered
/// if `cache` holds its profile, else instrumented, else (a module neither rewrite applies
/// to) as it is. Parses and re-encodes the module: CPU-bound, call from a blocking thread.
pub fn plan<'a>(cache: &ModuleCache, wasm: &'a [u8]) -> Plan<'a> {
    let name = hex::encode(Sha256::digest(wasm));
    match profile::read(cache, &name) {
        Ok(Some(slots)) => match order::ordered(wasm, &slots) {
            Some(ordered) => Plan {
                wasm: Cow::Owned(ordered),
                profile: None,
            },
            None => as_is(wasm),
        },
        Ok(None) => match instrument::instrument(wasm) {
            Some(instrumented) => Plan {
                wasm: Cow::Owned(instrumented.wasm),
                profile: Some(Arc::new(FuncRefProfile::new(
                    cache.clone(),
                    name,
                    instrumented.table_slots,
                ))),
            },
            None => as_is(wasm),
        },
        Err(e) => {
            tracing::warn!("cannot read the func-ref profile {name}: {e}");
            as_is(wasm)
        }
    }
}
