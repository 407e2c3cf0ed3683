//! Reactor modules' idle polls (ABI 1.4; SPEC.md, "Reactor modules and idle polls"): the
//! host's WASI `poll_oneoff`, which knows the idle descriptor.
//!
//! A Go guest's runtime waits in `poll_oneoff` when no goroutine can run; its SDK keeps the
//! export's own goroutine waiting to read the idle descriptor ([`IDLE_FD`]) in that wait. This
//! host answers such an **idle poll** at once with the descriptor readable, so the export
//! returns, and records the poll's earliest clock as the guest's next timer
//! ([`IdleState`](crate::runtime::idle_state::IdleState)),
//! which the module loop turns into a wake op (see [`crate::runtime::module`]).
//!
//! `poll_oneoff` is this host's, in place of wasmtime-wasi's, for every module: an idle poll
//! is answered at once; a poll of relative clocks alone sleeps until the earliest, but never
//! past the entry's deadline (a guest blocked in a syscall is ended, as one looping is); any
//! other poll (another descriptor, an absolute clock) is answered `notsup`. (wasmtime-wasi's
//! function cannot be called from here: a host function called by the host has no caller
//! memory to read its arguments from.) No guest of this project polls anything else: the Rust
//! guests never block, and Go's poller only sees the descriptors it can make non-blocking,
//! which in a module is the idle descriptor alone.
//!
//! Nothing here panics or keeps guest memory beyond a call, whatever the guest passes: a bad
//! pointer is answered with `fault`, too many subscriptions with `notsup`, and what one call
//! copies out of the guest is bounded.

use std::time::Duration;

use kube_wasm_abi::IDLE_FD;
use wasmtime::{Caller, Extern, Linker, Memory};

use crate::runtime::abi::memory::{MEMORY_EXPORT, guest_range};
use crate::runtime::module::EntryDeadlineExceeded;
use crate::runtime::state::HostState;

/// WASI preview 1's import module.
const WASI: &str = "wasi_snapshot_preview1";

/// The most subscriptions one poll this host answers itself may have (Go's network poller
/// has one clock and one per armed descriptor); a larger poll goes to wasmtime-wasi.
const MAX_SUBSCRIPTIONS: u32 = 64;

/// Sizes of WASI preview 1's `subscription` and `event`.
const SUBSCRIPTION_SIZE: usize = 48;
const EVENT_SIZE: usize = 32;

/// `eventtype`.
const EVENTTYPE_CLOCK: u8 = 0;
const EVENTTYPE_FD_READ: u8 = 1;
const EVENTTYPE_FD_WRITE: u8 = 2;

/// `subclockflags::subscription_clock_abstime`.
const CLOCK_ABSTIME: u16 = 1;

/// `errno`s.
const ERRNO_SUCCESS: i32 = 0;
const ERRNO_FAULT: i32 = 21;
const ERRNO_INVAL: i32 = 28;
const ERRNO_NOTSUP: i32 = 58;

/// Defines `poll_oneoff` in place of wasmtime-wasi's, already in `linker`.
///
/// # Errors
/// If the definition fails.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    linker.func_wrap_async(
        WASI,
        "poll_oneoff",
        |mut caller: Caller<'_, HostState>,
         (subs, events, count, nevents): (i32, i32, i32, i32)| {
            Box::new(async move {
                let call = PollCall {
                    subs,
                    events,
                    count,
                    nevents,
                };
                poll(&mut caller, call).await
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The arguments of one `poll_oneoff` call.
#[derive(Debug, Clone, Copy)]
struct PollCall {
    subs: i32,
    events: i32,
    count: i32,
    nevents: i32,
}

/// One subscription, as far as this host answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sub {
    /// A clock with a relative timeout.
    Clock { userdata: u64, timeout: Duration },
    /// Reading the idle descriptor.
    IdleRead { userdata: u64 },
    /// Writing the idle descriptor: never ready.
    IdleWrite,
}

/// Reads the subscriptions in `bytes` (whole ones only): `None` if any is one this host does
/// not serve (another descriptor, an absolute clock, an unknown type).
fn subscriptions(bytes: &[u8]) -> Option<Vec<Sub>> {
    let mut subs = Vec::with_capacity(bytes.len() / SUBSCRIPTION_SIZE);
    for raw in bytes.chunks_exact(SUBSCRIPTION_SIZE) {
        let userdata = u64_at(raw, 0);
        let sub = match raw[8] {
            EVENTTYPE_CLOCK => {
                let flags = u16::from_le_bytes([raw[40], raw[41]]);
                if flags & CLOCK_ABSTIME != 0 {
                    return None;
                }
                Sub::Clock {
                    userdata,
                    timeout: Duration::from_nanos(u64_at(raw, 24)),
                }
            }
            EVENTTYPE_FD_READ | EVENTTYPE_FD_WRITE => {
                let fd = u32::from_le_bytes([raw[16], raw[17], raw[18], raw[19]]);
                if fd != IDLE_FD {
                    return None;
                }
                if raw[8] == EVENTTYPE_FD_READ {
                    Sub::IdleRead { userdata }
                } else {
                    Sub::IdleWrite
                }
            }
            _ => return None,
        };
        subs.push(sub);
    }
    Some(subs)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// An event to write: its userdata and type (no error, no bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Event {
    userdata: u64,
    kind: u8,
}

/// What a poll of `subs` (all this host's to answer) comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// These events at once.
    Now(Vec<Event>),
    /// An idle poll: the idle descriptor's read event at once; `next` is the earliest clock.
    Idle {
        event: Event,
        next: Option<Duration>,
    },
    /// Sleep this long, then the events of the clocks due by then.
    Sleep(Duration),
    /// Nothing can ever complete it (only writes of the idle descriptor).
    Never,
}

/// How this host answers a poll of `subs` (see SPEC.md's table).
fn answer(subs: &[Sub]) -> Answer {
    let clocks = || {
        subs.iter().filter_map(|sub| match *sub {
            Sub::Clock { userdata, timeout } => Some((userdata, timeout)),
            _ => None,
        })
    };
    let expired: Vec<Event> = clocks()
        .filter(|(_, timeout)| timeout.is_zero())
        .map(|(userdata, _)| Event {
            userdata,
            kind: EVENTTYPE_CLOCK,
        })
        .collect();
    if !expired.is_empty() {
        return Answer::Now(expired);
    }
    let earliest = clocks().map(|(_, timeout)| timeout).min();
    let idle_read = subs.iter().find_map(|sub| match *sub {
        Sub::IdleRead { userdata } => Some(userdata),
        _ => None,
    });
    match (idle_read, earliest) {
        (Some(userdata), next) => Answer::Idle {
            event: Event {
                userdata,
                kind: EVENTTYPE_FD_READ,
            },
            next,
        },
        (None, Some(earliest)) => Answer::Sleep(earliest),
        (None, None) => Answer::Never,
    }
}

/// Answers `call` with an errno (see the module's docs).
///
/// # Errors
/// [`EntryDeadlineExceeded`] if the poll would block past the entry's deadline (or for
/// ever): it traps the guest, and the module is ended as one running past its deadline.
async fn poll(caller: &mut Caller<'_, HostState>, call: PollCall) -> wasmtime::Result<i32> {
    let count = call.count as u32;
    if count == 0 {
        return Ok(ERRNO_INVAL);
    }
    if count > MAX_SUBSCRIPTIONS {
        return Ok(ERRNO_NOTSUP);
    }
    let Some(memory) = memory(caller) else {
        return Ok(ERRNO_FAULT);
    };
    let len = count as usize * SUBSCRIPTION_SIZE;
    let bytes = {
        let data = memory.data(&*caller);
        match guest_range(call.subs, len as i32, data.len()) {
            Ok(range) => data[range].to_vec(),
            Err(_) => return Ok(ERRNO_FAULT),
        }
    };
    let Some(subs) = subscriptions(&bytes) else {
        return Ok(ERRNO_NOTSUP);
    };
    let events = match answer(&subs) {
        Answer::Now(events) => events,
        Answer::Idle { event, next } => {
            let next = next.and_then(|after| tokio::time::Instant::now().checked_add(after));
            caller.data_mut().idle.record_idle_poll(next);
            vec![event]
        }
        Answer::Sleep(earliest) => {
            let (spent, deadline) = {
                let state = caller.data();
                let spent = state.idle.entry_elapsed();
                (spent, state.entry_deadline)
            };
            if spent.saturating_add(earliest) > deadline {
                return Err(wasmtime::Error::new(EntryDeadlineExceeded));
            }
            tokio::time::sleep(earliest).await;
            subs.iter()
                .filter_map(|sub| match *sub {
                    Sub::Clock { userdata, timeout } if timeout <= earliest => Some(Event {
                        userdata,
                        kind: EVENTTYPE_CLOCK,
                    }),
                    _ => None,
                })
                .collect()
        }
        Answer::Never => return Err(wasmtime::Error::new(EntryDeadlineExceeded)),
    };
    let mut out = vec![0u8; events.len() * EVENT_SIZE];
    for (event, raw) in events.iter().zip(out.chunks_exact_mut(EVENT_SIZE)) {
        raw[0..8].copy_from_slice(&event.userdata.to_le_bytes());
        raw[10] = event.kind;
    }
    let written = write(caller, call.events, &out)
        .and_then(|()| write(caller, call.nevents, &(events.len() as u32).to_le_bytes()));
    Ok(match written {
        Ok(()) => ERRNO_SUCCESS,
        Err(errno) => errno,
    })
}

fn memory(caller: &mut Caller<'_, HostState>) -> Option<Memory> {
    match caller.get_export(MEMORY_EXPORT) {
        Some(Extern::Memory(memory)) => Some(memory),
        _ => None,
    }
}

/// Writes `bytes` at `ptr` in the caller's memory; `Err(fault)` if they do not fit.
fn write(caller: &mut Caller<'_, HostState>, ptr: i32, bytes: &[u8]) -> Result<(), i32> {
    let memory = memory(caller).ok_or(ERRNO_FAULT)?;
    let data = memory.data_mut(&mut *caller);
    let len = i32::try_from(bytes.len()).map_err(|_| ERRNO_FAULT)?;
    let range = guest_range(ptr, len, data.len()).map_err(|_| ERRNO_FAULT)?;
    data[range].copy_from_slice(bytes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(kind: u8, userdata: u64, fd: u32, timeout: u64, flags: u16) -> [u8; 48] {
        let mut raw = [0u8; 48];
        raw[0..8].copy_from_slice(&userdata.to_le_bytes());
        raw[8] = kind;
        if kind == EVENTTYPE_CLOCK {
            raw[16..20].copy_from_slice(&1u32.to_le_bytes());
            raw[24..32].copy_from_slice(&timeout.to_le_bytes());
            raw[40..42].copy_from_slice(&flags.to_le_bytes());
        } else {
            raw[16..20].copy_from_slice(&fd.to_le_bytes());
        }
        raw
    }

    fn read(subs: &[[u8; 48]]) -> Option<Vec<Sub>> {
        subscriptions(&subs.concat())
    }

    #[test]
    fn an_idle_poll_is_answered_at_once_with_its_earliest_clock_as_the_next_timer() {
        // Go's netpoll(delay): the clock first, then the idle descriptor.
        let subs = read(&[
            sub(EVENTTYPE_CLOCK, 0, 0, 10_000_000_000, 0),
            sub(EVENTTYPE_FD_READ, 77, IDLE_FD, 0, 0),
        ])
        .expect("ours");
        assert_eq!(
            answer(&subs),
            Answer::Idle {
                event: Event {
                    userdata: 77,
                    kind: EVENTTYPE_FD_READ
                },
                next: Some(Duration::from_secs(10)),
            }
        );
        // netpoll(-1): no clock, no timer.
        let subs = read(&[sub(EVENTTYPE_FD_READ, 5, IDLE_FD, 0, 0)]).expect("ours");
        assert!(matches!(answer(&subs), Answer::Idle { next: None, .. }));
    }

    #[test]
    fn a_non_blocking_check_is_answered_with_its_clock() {
        // netpoll(0): a clock of timeout 0 and the idle descriptor.
        let subs = read(&[
            sub(EVENTTYPE_CLOCK, 0, 0, 0, 0),
            sub(EVENTTYPE_FD_READ, 77, IDLE_FD, 0, 0),
        ])
        .expect("ours");
        assert_eq!(
            answer(&subs),
            Answer::Now(vec![Event {
                userdata: 0,
                kind: EVENTTYPE_CLOCK
            }])
        );
    }

    #[test]
    fn clocks_alone_sleep_and_writes_of_the_idle_descriptor_never_complete() {
        let subs = read(&[
            sub(EVENTTYPE_CLOCK, 1, 0, 3_000, 0),
            sub(EVENTTYPE_CLOCK, 2, 0, 2_000, 0),
        ])
        .expect("ours");
        assert_eq!(answer(&subs), Answer::Sleep(Duration::from_micros(2)));
        let subs = read(&[sub(EVENTTYPE_FD_WRITE, 1, IDLE_FD, 0, 0)]).expect("ours");
        assert_eq!(answer(&subs), Answer::Never);
    }

    #[test]
    fn other_descriptors_absolute_clocks_and_unknown_types_are_not_served() {
        assert_eq!(read(&[sub(EVENTTYPE_FD_READ, 1, 0, 0, 0)]), None);
        assert_eq!(read(&[sub(EVENTTYPE_FD_WRITE, 1, 1, 0, 0)]), None);
        assert_eq!(read(&[sub(EVENTTYPE_CLOCK, 1, 0, 5, CLOCK_ABSTIME)]), None);
        assert_eq!(read(&[sub(9, 1, 0, 0, 0)]), None);
        assert_eq!(read(&[]), Some(Vec::new()));
    }
}
