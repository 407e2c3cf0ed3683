//! The kube-wasm ABI contract, version 1.4: the one Rust definition of everything that crosses
//! the boundary between a controller module (guest) and the host shim.
//!
//! **Replaces** the HTTP connection a native controller holds to the API server: a guest never
//! opens one, it asks the host through this ABI. A ported controller never names this crate; the
//! port guide is the kube-wasm book's *Porting a Rust controller* (`docs/src/porting/rust.md` in
//! the repository; `scripts/book.sh build` renders the book).
//!
//! `SPEC.md` in this crate (also a chapter of the book, *The ABI*) is the source of truth; this
//! crate is its executable form. It holds no executor, no wasmtime and no Kubernetes types: the
//! guest crates and the host both depend on it and on nothing of each other.
//!
//! Every payload is a [`frame`]: a small JSON header followed by raw body bytes, so
//! Kubernetes JSON is never re-encoded on the way through.
//!
//! The rest of this page is the crate's README.
#![doc = include_str!("../README.md")]

pub mod env;
pub mod frame;
pub mod idle;
pub mod lines;
pub mod names;
pub mod ops;
pub mod stream;

pub use frame::{Frame, FrameError, decode_frame, encode_frame};
pub use idle::IDLE_FD;
pub use lines::LineFramer;
pub use ops::{
    Completion, DEFAULT_WATCH_TIMEOUT_SECS, ErrorCode, HttpRequest, OpError, OpId, ResponseMode,
    UpgradeFailure, WatchRequest,
};
pub use stream::{DEFAULT_STREAM_CREDIT, StreamOpen, StreamSend};

/// Major version of this ABI. Part of the import module name ([`names::IMPORT_MODULE`]); a
/// host refuses a module whose major version differs from its own.
pub const ABI_MAJOR: u16 = 1;

/// Minor version of this ABI: additions that old guests do not use. A host accepts a module
/// whose minor version is at most its own. 1.1 added duplex streams; 1.2 the `upgrade` error
/// code and its [`UpgradeFailure`] field; 1.3 the `quota` error code, which `delay` and
/// `stop_signal` may now complete with; 1.4 reactor modules and idle polls ([`idle`]).
pub const ABI_MINOR: u16 = 4;

/// The value the guest export [`names::EXPORT_ABI_VERSION`] returns: `major << 16 | minor`.
pub const ABI_VERSION: u32 = pack_version(ABI_MAJOR, ABI_MINOR);

/// Packs a version as the guest export returns it: `major << 16 | minor`.
pub const fn pack_version(major: u16, minor: u16) -> u32 {
    ((major as u32) << 16) | minor as u32
}

/// Splits a packed version (see [`pack_version`]) into `(major, minor)`.
pub const fn unpack_version(packed: u32) -> (u16, u16) {
    ((packed >> 16) as u16, (packed & 0xffff) as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_packs_and_unpacks() {
        assert_eq!(unpack_version(ABI_VERSION), (ABI_MAJOR, ABI_MINOR));
        assert_eq!(pack_version(2, 7), 0x0002_0007);
        assert_eq!(unpack_version(0x0003_0001), (3, 1));
    }
}
