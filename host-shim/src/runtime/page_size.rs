//! The system page size, which every release of memory (`madvise`) is aligned to.

/// The system page size in bytes (4 KiB if `sysconf` cannot tell).
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(4096)
}
