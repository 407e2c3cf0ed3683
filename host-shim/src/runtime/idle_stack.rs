//! Releasing the unused part of a thread's own stack.
//!
//! A thread's stack keeps resident every page its deepest call ever touched: a tokio worker
//! that once ran a module's start-up, a large reconcile or a TLS handshake keeps 80–100 KiB
//! of its 2 MiB stack for its life, though between events it parks a few frames deep. The
//! host's workers call [`release_unused_if_due`] as they park (tokio's `on_thread_park`): the
//! pages below the current frame (less [`KEPT_BELOW_BYTES`]) are dropped with
//! `madvise(MADV_DONTNEED)`, at most every [`RELEASE_EVERY`], and the next deep call faults
//! them back zero-filled. Nothing below the current frame is live, so nothing is lost.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::page_size::page_size;

/// How often one thread releases its stack at most.
pub const RELEASE_EVERY: Duration = Duration::from_secs(2);

/// Bytes kept below the caller's frame: the calls that follow (parking) use them at once.
pub const KEPT_BELOW_BYTES: usize = 16 * 1024;

thread_local! {
    static LAST_RELEASE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Releases the calling thread's unused stack ([`release_unused`]) unless it did less than
/// [`RELEASE_EVERY`] ago. Returns the bytes of address space released (0 if none).
pub fn release_unused_if_due() -> usize {
    let now = Instant::now();
    let due = LAST_RELEASE.with(|last| match last.get() {
        Some(at) if now.duration_since(at) < RELEASE_EVERY => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if due { release_unused() } else { 0 }
}

/// Drops the pages of the calling thread's stack below its current frame, less
/// [`KEPT_BELOW_BYTES`]. Returns the bytes of address space released: 0 on the process's main
/// thread (glibc reports its stack bounds from the stack size limit, not from its mapping, so
/// it is left alone), when the stack's bounds are unknown (`pthread_getattr_np` failed), or
/// when nothing lies that far below.
#[inline(never)]
pub fn release_unused() -> usize {
    // SAFETY: getpid and gettid have no preconditions.
    if unsafe { libc::gettid() == libc::getpid() } {
        return 0;
    }
    let Some(lowest) = stack_lowest_address() else {
        return 0;
    };
    let marker = 0u8;
    let frame = std::hint::black_box(&marker) as *const u8 as usize;
    let page = page_size();
    let Some(start) = lowest.checked_next_multiple_of(page) else {
        return 0;
    };
    let end = frame.saturating_sub(KEPT_BELOW_BYTES) / page * page;
    if end <= start {
        return 0;
    }
    // SAFETY: `[start, end)` lies in this thread's stack (between its lowest usable address
    // and more than `KEPT_BELOW_BYTES` below the current frame), where no frame is live:
    // dropping those pages loses nothing, and a later call faults them back zero-filled.
    let result =
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
    if result == 0 { end - start } else { 0 }
}

/// The lowest usable address of the calling thread's stack (above its guard).
fn stack_lowest_address() -> Option<usize> {
    // SAFETY: `attr` is initialised by `pthread_getattr_np` before it is read, and destroyed
    // once; `pthread_attr_getstack` writes only the two out-parameters.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut address = std::ptr::null_mut();
        let mut size = 0;
        let found = libc::pthread_attr_getstack(&attr, &mut address, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (found == 0 && !address.is_null()).then_some(address as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Touches `depth` KiB of stack below the caller.
    #[inline(never)]
    fn deep(depth: usize) -> u8 {
        let mut buffer = [0u8; 1024];
        std::hint::black_box(&mut buffer);
        if depth == 0 {
            buffer[0]
        } else {
            deep(depth - 1).wrapping_add(buffer[1])
        }
    }

    fn resident_stack_pages() -> usize {
        let lowest = stack_lowest_address().expect("stack bounds");
        let marker = 0u8;
        let frame = std::hint::black_box(&marker) as *const u8 as usize;
        let page = page_size();
        let start = lowest.next_multiple_of(page);
        let len = frame / page * page - start;
        let mut vec = vec![0u8; len / page];
        // SAFETY: the range is this thread's mapped stack; `vec` has one byte per page.
        let result = unsafe { libc::mincore(start as *mut libc::c_void, len, vec.as_mut_ptr()) };
        assert_eq!(result, 0, "mincore");
        vec.iter().filter(|&&byte| byte & 1 == 1).count()
    }

    #[test]
    fn a_threads_deep_stack_is_released_and_used_again() {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                std::hint::black_box(deep(512));
                let before = resident_stack_pages();
                let released = release_unused();
                let after = resident_stack_pages();
                assert!(released >= 256 * 1024, "released {released} bytes");
                assert!(
                    after + 64 <= before,
                    "{before} resident pages before, {after} after"
                );
                // Deep calls run on, on fresh pages.
                assert_eq!(deep(512), 0);
            })
            .expect("thread")
            .join()
            .expect("the thread ran");
    }

    #[test]
    fn the_main_threads_stack_is_left_alone() {
        // The harness runs each test on a thread of its own; a child process's only thread
        // is its main thread.
        // SAFETY: the child only calls `release_unused` and `_exit`, both async-signal-safe
        // enough for a child of a multi-threaded parent (no locks are taken).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork");
        if pid == 0 {
            let released = release_unused();
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(if released == 0 { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the child's main thread released its stack (status {status})"
        );
    }

    #[test]
    fn a_thread_releases_at_most_once_a_period() {
        std::thread::spawn(|| {
            std::hint::black_box(deep(256));
            assert!(release_unused_if_due() > 0, "the first release");
            std::hint::black_box(deep(256));
            assert_eq!(release_unused_if_due(), 0, "within the period");
        })
        .join()
        .expect("the thread ran");
    }
}
