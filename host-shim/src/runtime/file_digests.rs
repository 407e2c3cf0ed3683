//! The SHA-256 of module files, each hashed once while it is unchanged. A fleet of N modules
//! of one `.wasm` loads that file N times, and hashing it at each load read it N times (60 MB
//! for a Go module). Pages read more than once go to the kernel's active list, which the
//! working set counts — the host's own memory pressure, the kubelet's eviction — though
//! nothing maps them: ten suspended Go modules kept 117 MiB of active page cache that way. So
//! a file's digest is kept by the file's identity, and the file's pages are dropped from the
//! page cache once it is hashed (`posix_fadvise(POSIX_FADV_DONTNEED)`): the host needs its
//! bytes again only to compile it.

use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest as _, Sha256};

/// At most this many files' digests are kept; past it the map starts again (a host's files
/// are its manifest's modules and the images it pulled).
const MAX_KEPT: usize = 4096;

/// A digest is kept only for a file last changed at least this long before it was hashed:
/// file times have the granularity of the kernel's coarse clock (a few ms), so a file
/// rewritten in place just after it was hashed could keep its times ("racy git").
pub const SETTLED: Duration = Duration::from_secs(1);

/// What identifies a file's content without reading it: device and inode, size, and the
/// modification and change times in ns. The kernel sets the change time at every write, and a
/// user cannot set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// Whether the file's last change was at least `settled` before `at`.
    fn settled(&self, at: SystemTime, settled: Duration) -> bool {
        let changed = u64::try_from(self.ctime.0)
            .ok()
            .zip(u32::try_from(self.ctime.1).ok())
            .map(|(secs, nanos)| UNIX_EPOCH + Duration::new(secs, nanos));
        changed.is_some_and(|changed| changed + settled <= at)
    }

    fn of(meta: &Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// The SHA-256 digests of the files a host loaded, by path (see the module docs).
#[derive(Debug)]
pub struct FileDigests {
    kept: Mutex<HashMap<PathBuf, (Stamp, [u8; 32])>>,
    settled: Duration,
}

impl Default for FileDigests {
    fn default() -> Self {
        Self::new(SETTLED)
    }
}

impl FileDigests {
    /// Digests kept for files last changed at least `settled` before they were hashed
    /// ([`SETTLED`] by default).
    pub fn new(settled: Duration) -> Self {
        Self {
            kept: Mutex::default(),
            settled,
        }
    }

    /// The SHA-256 of the file at `path`: the kept digest if the file is the one hashed
    /// (same device, inode, size, modification and change times), else hashed streaming, its
    /// pages then dropped from the page cache, and kept if the file did not change meanwhile
    /// and had settled before ([`FileDigests::new`]).
    ///
    /// # Errors
    /// If the file cannot be opened or read.
    pub fn digest(&self, path: &Path) -> io::Result<[u8; 32]> {
        let mut file = File::open(path)?;
        let hashed_at = SystemTime::now();
        let before = Stamp::of(&file.metadata()?);
        if let Some((stamp, digest)) = self.kept().get(path)
            && *stamp == before
        {
            return Ok(*digest);
        }
        let mut hasher = Sha256::new();
        io::copy(&mut file, &mut hasher)?;
        let digest: [u8; 32] = hasher.finalize().into();
        drop_cached_pages(&file);
        if Stamp::of(&file.metadata()?) == before && before.settled(hashed_at, self.settled) {
            let mut kept = self.kept();
            if kept.len() >= MAX_KEPT {
                kept.clear();
            }
            kept.insert(path.to_owned(), (before, digest));
        }
        Ok(digest)
    }

    fn kept(&self) -> MutexGuard<'_, HashMap<PathBuf, (Stamp, [u8; 32])>> {
        // Entries are inserted whole; a panic elsewhere cannot leave one half-made.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Asks the kernel to drop `file`'s clean pages from the page cache; a failure only leaves
/// them there (logged).
fn drop_cached_pages(file: &File) {
    use std::os::fd::AsRawFd as _;
    // SAFETY: a plain syscall on an open descriptor; it reads no memory of this process.
    let failed = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if failed != 0 {
        tracing::debug!(
            "cannot drop a hashed module file from the page cache: {}",
            io::Error::from_raw_os_error(failed)
        );
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn sha256(bytes: &[u8]) -> [u8; 32] {
        Sha256::digest(bytes).into()
    }

    #[test]
    fn a_file_is_hashed_again_only_once_it_changed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.wasm");
        std::fs::write(&path, b"first").expect("write");
        let digests = FileDigests::default();
        assert_eq!(digests.digest(&path).expect("digest"), sha256(b"first"));
        assert!(digests.kept().is_empty(), "written just now: not kept");

        // Rewritten in place, same length: the change time moves, so it is hashed again.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        file.write_all(b"other").expect("rewrite");
        drop(file);
        assert_eq!(digests.digest(&path).expect("digest"), sha256(b"other"));

        // Replaced by a rename: another inode.
        let next = dir.path().join("next");
        std::fs::write(&next, b"third").expect("write");
        std::fs::rename(&next, &path).expect("rename");
        assert_eq!(digests.digest(&path).expect("digest"), sha256(b"third"));
        assert!(digests.digest(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn a_file_settles_a_while_after_its_last_change() {
        let stamp = |secs| Stamp {
            dev: 1,
            ino: 2,
            len: 3,
            mtime: (secs, 0),
            ctime: (secs, 500),
        };
        let at = UNIX_EPOCH + Duration::from_secs(100);
        assert!(stamp(98).settled(at, SETTLED));
        // Changed at 99 s and 500 ns: settled 1 s later, to the ns.
        assert!(!stamp(99).settled(at, SETTLED));
        assert!(stamp(99).settled(at + Duration::from_nanos(500), SETTLED));
        assert!(!stamp(100).settled(at, Duration::ZERO));
        assert!(
            !stamp(-1).settled(at, SETTLED),
            "before the epoch: not trusted"
        );
    }

    #[test]
    fn a_kept_digest_is_used_while_the_file_is_the_one_hashed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.wasm");
        std::fs::write(&path, b"bytes").expect("write");
        let digests = FileDigests::new(Duration::ZERO);
        let hashed = digests.digest(&path).expect("digest");
        assert_eq!(hashed, sha256(b"bytes"));
        // A kept digest stands for the file as it was stamped: planted, it is what the next
        // call answers, so that call did not read the file.
        let planted = [7; 32];
        digests.kept().get_mut(&path).expect("kept").1 = planted;
        assert_eq!(digests.digest(&path).expect("kept"), planted);
        assert_ne!(hashed, planted);
    }
}
