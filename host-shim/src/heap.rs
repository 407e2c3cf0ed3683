//! Handing freed heap back to the kernel. glibc's malloc keeps the pages of freed chunks
//! resident while they lie between live ones; `malloc_trim(0)` releases them. It walks the
//! whole heap, so what frees in bursts (a suspend drops a module's instance, a shared watch
//! releases its history) asks for one trim soon ([`trim_soon`]) and many such asks within
//! [`TRIM_DELAY`] cost one trim. [`tune_for_serving`] sets malloc's parameters for a
//! serving host.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// glibc's malloc parameters for a serving host, as `GLIBC_TUNABLES` reads them:
///
/// - `arena_max=1`: glibc's default (8 arenas a core) gives each tokio worker and blocking
///   thread an arena of its own; a module's host state is allocated on whichever thread
///   happens to run it, so every arena ends up holding a share of it, with its own free space
///   and fragmentation. One arena and the fixed thresholds measured about 4 MiB less PSS with
///   100 idle modules (42.6 → 38.6 MiB, median of 3).
/// - `mmap_threshold` and `trim_threshold` at 128 KiB (the bytes from which glibc serves an
///   allocation with its own `mmap`, and above which free space at the top of the heap is
///   returned): glibc's initial values. Setting them turns off glibc's dynamic threshold,
///   which after the first large buffer is freed (reading a 5 MB precompiled module, a large
///   list response) would serve every buffer up to that size from the heap and keep it there.
/// - `tcache_count=0`: no per-thread cache of freed chunks. Each thread keeps up to 7 freed
///   chunks of each of 64 sizes (up to 1 KiB) for itself; to the heap they are in use, so
///   `malloc_trim` cannot release the pages they lie on, and the host's threads (tokio's
///   workers and blocking threads) hold them all over its heap. Without it every allocation
///   takes the arena's lock (one arena, a handful of threads). The variable toggled on one
///   build, two launches each: the
///   suspended mixed fleet's malloc heap 4.09, 4.18 → 3.75, 3.80 MiB; 100 idle ring modules
///   14.1, 14.2 → 12.8, 12.8 MiB PSS (launches that sat high that hour; the book's levers page
///   has the before/after of the builds).
pub const SERVING_TUNABLES: &str = "glibc.malloc.arena_max=1:glibc.malloc.mmap_threshold=131072:\
glibc.malloc.trim_threshold=131072:glibc.malloc.tcache_count=0";

/// `arena_max` of [`SERVING_TUNABLES`], also set by `mallopt` where starting again fails.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))] // glibc only
const ARENA_MAX: i32 = 1;

/// `mmap_threshold` and `trim_threshold` of [`SERVING_TUNABLES`] in bytes, also set by
/// `mallopt` where starting again fails.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))] // glibc only
const THRESHOLD_BYTES: i32 = 128 * 1024;

/// Set in the environment of the process [`tune_for_serving`] starts again: the
/// `GLIBC_TUNABLES` it was started with (empty if none).
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))] // glibc only
const STARTED_WITH_TUNABLES: &str = "KUBE_WASM_STARTED_WITH_GLIBC_TUNABLES";

/// What [`tune_for_serving`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tuning {
    /// Nothing was changed: the environment sets malloc parameters itself (any `MALLOC_*`
    /// variable, or `glibc.malloc.*` in `GLIBC_TUNABLES`), which then win, or the allocator
    /// is not glibc's.
    Untouched,
    /// This process was started again with [`SERVING_TUNABLES`]; its environment is the one
    /// it was first started with again, so its children (the compiler) inherit that.
    Tuned,
    /// Starting again failed (the message says why): only the arena and the thresholds were
    /// set (`mallopt`), the per-thread cache stays.
    Partly(String),
}

/// Gives this process [`SERVING_TUNABLES`]. glibc reads `GLIBC_TUNABLES` only when a
/// program starts, and the per-thread cache has no `mallopt`, so the first call starts the
/// same program again (`exec` of `/proc/self/exe`, same arguments and process id) with
/// them added; in that process the call puts the environment back as it was and returns
/// [`Tuning::Tuned`]. Call it first thing in `main`, before any thread starts.
pub fn tune_for_serving() -> Tuning {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt as _;

        if let Some(before) = std::env::var_os(STARTED_WITH_TUNABLES) {
            // SAFETY: no other thread exists yet (the caller's contract), so nothing reads
            // the environment meanwhile. glibc read the tunables when this process started.
            unsafe {
                std::env::remove_var(STARTED_WITH_TUNABLES);
                if before.is_empty() {
                    std::env::remove_var("GLIBC_TUNABLES");
                } else {
                    std::env::set_var("GLIBC_TUNABLES", before);
                }
            }
            return Tuning::Tuned;
        }
        let tunables = std::env::var_os("GLIBC_TUNABLES").unwrap_or_default();
        let user_set = tunables.to_string_lossy().contains("glibc.malloc.")
            || std::env::vars_os().any(|(key, _)| key.to_string_lossy().starts_with("MALLOC_"));
        if user_set {
            return Tuning::Untouched;
        }
        let mut args = std::env::args_os();
        let program = args.next().unwrap_or_default();
        let mut serving = tunables.clone();
        if !serving.is_empty() {
            serving.push(":");
        }
        serving.push(SERVING_TUNABLES);
        let failed = std::process::Command::new("/proc/self/exe")
            .arg0(program)
            .args(args)
            .env("GLIBC_TUNABLES", serving)
            .env(STARTED_WITH_TUNABLES, tunables)
            .exec();
        // SAFETY: mallopt only sets allocator parameters; no other thread exists yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, ARENA_MAX);
            libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD_BYTES);
            libc::mallopt(libc::M_TRIM_THRESHOLD, THRESHOLD_BYTES);
        }
        Tuning::Partly(format!(
            "starting the host again with GLIBC_TUNABLES failed: {failed}"
        ))
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        Tuning::Untouched
    }
}

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

/// How many trims this process has made since it started: at most one each [`TRIM_DELAY`]
/// while everything asks through [`trim_soon`].
pub fn trims() -> u64 {
    TRIMS.load(Ordering::Relaxed)
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
    // Clears the pending flag however the task ends: dropped with a runtime that shuts down
    // before the delay is over, the flag would otherwise stay set and no trim would be made
    // again in this process.
    struct Pending;
    impl Drop for Pending {
        fn drop(&mut self) {
            TRIM_PENDING.store(false, Ordering::SeqCst);
        }
    }
    let pending = Pending;
    runtime.spawn(async move {
        tokio::time::sleep(TRIM_DELAY).await;
        drop(pending);
        let _ = tokio::task::spawn_blocking(trim).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests that ask for trims share the process's pending flag: one at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Takes the serial lock, then waits (up to 3 s) for a trim other tests of the crate
    /// asked for (the shared-watch cache asks too) to be made.
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        let guard = SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let deadline = std::time::Instant::now() + 3 * TRIM_DELAY;
        while TRIM_PENDING.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(TRIM_DELAY / 20);
        }
        guard
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    }

    #[test]
    fn asks_within_the_delay_share_one_trim() {
        let _serial = serial();
        runtime().block_on(async {
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
        });
    }

    #[test]
    fn a_trim_lost_with_its_runtime_does_not_stop_later_ones() {
        let _serial = serial();
        let runtime = runtime();
        runtime.block_on(async { trim_soon() });
        assert!(TRIM_PENDING.load(Ordering::SeqCst), "asked");
        drop(runtime);
        assert!(
            !TRIM_PENDING.load(Ordering::SeqCst),
            "the dropped task no longer holds the pending flag"
        );
    }

    #[test]
    fn the_fallback_sets_what_the_tunables_say() {
        let tunables: Vec<&str> = SERVING_TUNABLES.split(':').collect();
        for expected in [
            format!("glibc.malloc.arena_max={ARENA_MAX}"),
            format!("glibc.malloc.mmap_threshold={THRESHOLD_BYTES}"),
            format!("glibc.malloc.trim_threshold={THRESHOLD_BYTES}"),
            "glibc.malloc.tcache_count=0".to_owned(),
        ] {
            assert!(
                tunables.contains(&expected.as_str()),
                "{expected} in {tunables:?}"
            );
        }
        assert_eq!(tunables.len(), 4, "nothing the fallback does not know of");
    }
}
