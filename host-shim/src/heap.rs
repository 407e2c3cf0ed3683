//! Handing freed heap back to the kernel. glibc's malloc keeps the pages of freed chunks
//! resident while they lie between live ones; `malloc_trim(0)` releases them. It walks the
//! whole heap, so what frees in bursts (a suspend drops a module's instance, a shared watch
//! releases its history) asks for one trim soon ([`trim_soon`]) and many such asks within
//! [`TRIM_DELAY`] cost one trim.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How long a trim asked for by [`trim_soon`] waits for more frees to gather.
pub const TRIM_DELAY: Duration = Duration::from_secs(1);

static TRIM_PENDING: AtomicBool = AtomicBool::new(false);
static TRIMS: AtomicU64 = AtomicU64::new(0);

/// Trims the heap now: its free pages go back to the kernel (glibc's `malloc_trim`, which
/// also releases free space in the middle of the heap, not only at its top). Walks the heap:
/// call it from a blocking thread.
pub fn trim() {
    TRIMS.fetch_add(1, Ordering::Relaxed);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks and releases malloc's own free chunks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Trims the heap [`TRIM_DELAY`] from now on a blocking thread, unless a trim is already
/// due then. Outside a tokio runtime, does nothing.
pub fn trim_soon() {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if TRIM_PENDING.swap(true, Ordering::SeqCst) {
        return;
    }
    runtime.spawn(async {
        tokio::time::sleep(TRIM_DELAY).await;
        TRIM_PENDING.store(false, Ordering::SeqCst);
        let _ = tokio::task::spawn_blocking(trim).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn asks_within_the_delay_share_one_trim() {
        let before = TRIMS.load(Ordering::Relaxed);
        trim_soon();
        assert!(TRIM_PENDING.load(Ordering::SeqCst));
        trim_soon();
        tokio::time::sleep(TRIM_DELAY / 2).await;
        assert_eq!(
            TRIMS.load(Ordering::Relaxed),
            before,
            "not before the delay"
        );
        tokio::time::sleep(TRIM_DELAY).await;
        assert!(TRIMS.load(Ordering::Relaxed) > before, "trimmed after it");
        assert!(
            !TRIM_PENDING.load(Ordering::SeqCst),
            "trimmed; the next ask waits again"
        );
    }
}
