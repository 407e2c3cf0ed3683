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
//! folder (where the profile is kept, beside the compiled module, named by the module's
//! SHA-256), the host compiles a module with no profile yet ([`Choice`]) from its
//! instrumented form ([`instrument`]), whose instances report every slot they call through
//! into a shared [`FuncRefProfile`]; once written, the profile's functions are declared
//! before the module's element segments ([`order`]) in
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

/// Which form of a module to compile, as far as it can be told without rewriting it: as it
/// is, ordered by these profiled slots, or instrumented to make a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// As it is.
    AsIs,
    /// Ordered by its profile: these slots first.
    Ordered(Vec<u32>),
    /// Instrumented, its profile kept under the module's name.
    Instrument,
}

impl Choice {
    /// What `cache` says for the module named `name` (the hex SHA-256 of its wasm as the
    /// host got it): ordered if it holds its profile, else instrumented (as it is if the
    /// profile cannot be read).
    pub fn of(cache: &ModuleCache, name: &str) -> Self {
        match profile::read(cache, name) {
            Ok(Some(slots)) => Choice::Ordered(slots),
            Ok(None) => Choice::Instrument,
            Err(e) => {
                tracing::warn!("cannot read the func-ref profile {name}: {e}");
                Choice::AsIs
            }
        }
    }

    /// The bytes that, with the module's own, determine what this choice compiles: a
    /// rewrite is a function of the module and these.
    pub fn key(&self) -> Vec<u8> {
        match self {
            Choice::AsIs => b"as-is".to_vec(),
            Choice::Instrument => b"instrumented".to_vec(),
            Choice::Ordered(slots) => {
                let mut key = b"ordered:".to_vec();
                key.extend(Sha256::digest(profile::encode(slots)));
                key
            }
        }
    }

    /// The plan for `wasm` (the module named `name`, see [`Choice::of`]): ordered or
    /// instrumented as chosen, as it is where that rewrite does not apply. Parses and
    /// re-encodes the module: CPU-bound, call from a blocking thread.
    pub fn plan<'a>(&self, cache: &ModuleCache, name: &str, wasm: &'a [u8]) -> Plan<'a> {
        match self {
            Choice::AsIs => as_is(wasm),
            Choice::Ordered(slots) => match order::ordered(wasm, slots) {
                Some(ordered) => Plan {
                    wasm: Cow::Owned(ordered),
                    profile: None,
                },
                None => as_is(wasm),
            },
            Choice::Instrument => match instrument::instrument(wasm) {
                Some(instrumented) => Plan {
                    wasm: Cow::Owned(instrumented.wasm),
                    profile: Some(Arc::new(FuncRefProfile::new(
                        cache.clone(),
                        name.to_owned(),
                        instrumented.table_slots,
                    ))),
                },
                None => as_is(wasm),
            },
        }
    }
}
