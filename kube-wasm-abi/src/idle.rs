//! Reactor modules and idle polls (ABI 1.4; SPEC.md, "Reactor modules and idle polls").
//!
//! A guest whose language runtime schedules its own tasks inside an export — Go's, built as
//! a WASI reactor — cannot return from an entry on its own when it stalls: the runtime waits
//! in WASI `poll_oneoff` instead. It tells the host by subscribing, in that wait, to reading
//! the [`IDLE_FD`] descriptor: the host answers such an **idle poll** at once with the
//! descriptor readable, which lets the export return, and keeps the poll's earliest clock as
//! the guest's next timer, when it calls [`EXPORT_WAKE`](crate::names::EXPORT_WAKE).

/// The idle descriptor: the WASI file descriptor number a reactor module subscribes to in an
/// idle poll (`0x4000_0000`). Only `poll_oneoff` knows it; it never holds data.
pub const IDLE_FD: u32 = 0x4000_0000;
