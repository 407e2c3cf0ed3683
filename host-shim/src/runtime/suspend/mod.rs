//! Suspending idle modules to disk (and resuming them transparently).
//!
//! Between two guest entries no wasm frame is on the stack (SPEC.md, "Design in one
//! paragraph"), so a module between entries is entirely its linear memory and its mutable
//! globals (its tables never change: [`prepare()`] checks that at load time and exports the
//! globals wasmtime could not otherwise read). The host-side state — the op table, streams,
//! WASI context, completion queue — is host memory and stays where it is.
//!
//! - **Suspend**: the memory is streamed to a [`Snapshot`] file (no copy of it in host memory;
//!   the 4 KiB chunks that still hold what a fresh instance holds are left out, see
//!   [`ImageDigest`]), the globals are kept in host memory, and the
//!   `Store` is dropped, which frees its instance, its linear memory and its fiber stack (or
//!   returns them to the pool, with a pooling allocator).
//! - **Resume** (at the first completion that arrives for a live op, or just before the
//!   module's earliest timer falls due): a new `Store` with the
//!   same host state, the pre-instantiated module instantiated again (its `_start` is not
//!   called), the memory grown to the snapshot's size and the file's chunks written into it
//!   (only the 4 KiB pages that differ from the fresh instance's are written, so pages the
//!   guest never changed stay shared with the module's copy-on-write image), the globals set;
//!   then the completion is delivered as usual. The file is removed.
//!
//! Op tasks go on while a module is suspended; their completions wait in its queue. A stop
//! request behaves as for a resident module: the `stop` completion resumes it, and a module
//! that never asked for the stop signal is ended without being resumed.
//!
//! Snapshots live in a folder this host creates (mode `0700`, removed when the host ends)
//! inside the configured [`Settings::suspend_dir`](crate::runtime::host::Settings::suspend_dir); each
//! file (mode `0600`) is named after its module and removed at resume or when the module
//! ends. A snapshot that cannot be written leaves the module resident (logged and counted);
//! one that cannot be read back ends the module with
//! [`ModuleError::Resume`](crate::ModuleError::Resume), and its restart policy applies.
//!
//! Files are written to the page cache and never synced: a snapshot only has to outlive the
//! host process's suspension of the module, not a crash of the machine. Under memory
//! [pressure] their writeback starts at once, so that their pages are clean, and reclaimable,
//! soon after the suspend rather than after the kernel's dirty expiry.
//!
//! When a module is suspended is its [`SuspendPolicy`] with an [`IdleThreshold`]; a module
//! whose live ops all stand waiting is suspended between its timers too, when the next is
//! far enough for the host's [cost](SuspendCost) of a suspend and a resume, and resumed
//! [ahead](ResumeAhead) of the earliest. Under [memory pressure](pressure) (the host's
//! cgroup nearly at its limit) an idle module is suspended at once.

pub mod check_record;
pub mod cost;
pub mod image;
pub mod policy;
pub mod prepare;
pub mod pressure;

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek as _, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use wasmtime::{AsContextMut, Instance, Val};

pub use cost::SuspendCost;
pub use image::ImageDigest;
pub use policy::{IdleThreshold, ResumeAhead, SuspendPolicy};
pub use prepare::{Checked, Prepared, SnapshotLayout, Suspendable, check, prepare};
pub use pressure::MemoryPressure;

use crate::runtime::abi::memory::MEMORY_EXPORT;

/// The unit in which memory is written and zero ranges are skipped: 4 KiB, the kernel's page.
/// (At 64 KiB, one wasm page, a ring controller's snapshot held 236 KiB, much of it zeroes
/// inside chunks that were not all zero.)
pub const CHUNK: usize = 4 << 10;

/// The first bytes of a snapshot file of a module whose fresh memory is not known (format
/// version 1): this magic, the memory size in bytes (u64 LE), then for each chunk that is not
/// all zero its byte offset (u64 LE) and its bytes ([`CHUNK`], or what is left at the end of
/// memory). A chunk left out is zero.
const MAGIC: &[u8; 8] = b"KWSNAP1\n";

/// The first bytes of a snapshot file of a module with an [`ImageDigest`] (format version
/// 2): as version 1, but a chunk left out holds what a fresh instance holds, and an offset
/// with its lowest bit set ([`ZEROED`]) is a chunk the guest zeroed where the fresh instance
/// holds data, with no bytes after it.
const MAGIC_FRESH: &[u8; 8] = b"KWSNAP2\n";

/// The bit of an entry's offset that marks a zeroed chunk (format version 2).
const ZEROED: u64 = 1;

/// The magic of a snapshot whose left-out chunks are as in a fresh instance (format 2) or
/// zero (format 1).
fn magic(from_image: bool) -> &'static [u8; 8] {
    if from_image { MAGIC_FRESH } else { MAGIC }
}

/// The folder of this host's snapshots: created with mode `0700` under a base folder,
/// removed with everything in it when dropped.
#[derive(Debug)]
pub struct SnapshotDir {
    dir: tempfile::TempDir,
}

impl SnapshotDir {
    /// Creates a fresh private folder inside `base` (creating `base`, mode `0700`, if needed).
    ///
    /// # Errors
    /// If either folder cannot be created.
    pub fn create(base: &Path) -> io::Result<Self> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(base)?;
        let dir = tempfile::Builder::new()
            .prefix("host-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(base)?;
        Ok(Self { dir })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// This host's folder of snapshots, made on first use inside a base folder (or why it could
/// not be, reported once, when it was tried).
#[derive(Debug)]
pub struct LazySnapshotDir {
    base: PathBuf,
    made: OnceLock<Result<SnapshotDir, String>>,
}

impl LazySnapshotDir {
    /// A folder to be made inside `base` on first use.
    pub fn new(base: PathBuf) -> Self {
        Self {
            base,
            made: OnceLock::new(),
        }
    }

    /// The folder, created on first use.
    ///
    /// # Errors
    /// Why it could not be created (logged once, when it was tried).
    pub fn get(&self) -> Result<&Path, &str> {
        let made = self.made.get_or_init(|| {
            SnapshotDir::create(&self.base)
                .inspect(|dir| {
                    tracing::info!(
                        "snapshots of suspended modules go to {}",
                        dir.path().display()
                    )
                })
                .map_err(|e| {
                    let why = format!(
                        "cannot create a snapshot folder in {}: {e}",
                        self.base.display()
                    );
                    tracing::warn!("{why}; modules stay resident");
                    why
                })
        });
        match made {
            Ok(dir) => Ok(dir.path()),
            Err(why) => Err(why),
        }
    }
}

/// The default base folder of snapshots: `<cache_dir>/suspended` with a cache folder, else
/// `kube-wasm-suspended` in the system's temporary folder.
pub fn default_base(cache_dir: Option<&Path>) -> PathBuf {
    match cache_dir {
        Some(cache) => cache.join("suspended"),
        None => std::env::temp_dir().join("kube-wasm-suspended"),
    }
}

/// The state of a suspended module: its memory in a file, its mutable globals here. Dropping
/// it removes the file.
#[derive(Debug)]
pub struct Snapshot {
    file: tempfile::NamedTempFile,
    memory_bytes: u64,
    /// Whether chunks left out are as in a fresh instance (format 2), not zero (format 1).
    from_image: bool,
    chunks: u64,
    file_bytes: u64,
    crc: u32,
    globals: Vec<Val>,
}

impl Snapshot {
    /// The size of the module's linear memory, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    /// The size of the file, in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }
}

/// Writes the state of `instance` (its memory, and the globals `layout` names) to a new file
/// in `dir` named after `module`. Blocking I/O: call it from a blocking thread.
///
/// # Errors
/// A message if the instance lacks the memory or a global, a global holds a reference, or
/// the file cannot be written (the file is removed then).
pub fn capture(
    mut store: impl AsContextMut,
    instance: &Instance,
    layout: &SnapshotLayout,
    dir: &Path,
    module: &str,
    write_back: bool,
) -> Result<Snapshot, String> {
    let mut store = store.as_context_mut();
    let mut globals = Vec::with_capacity(layout.globals.len());
    for name in &layout.globals {
        let global = instance
            .get_global(&mut store, name)
            .ok_or_else(|| format!("the instance has no global export `{name}`"))?;
        let value = global.get(&mut store);
        if !matches!(
            value,
            Val::I32(_) | Val::I64(_) | Val::F32(_) | Val::F64(_) | Val::V128(_)
        ) {
            return Err(format!("global `{name}` holds a reference"));
        }
        globals.push(value);
    }
    let memory = instance
        .get_memory(&mut store, MEMORY_EXPORT)
        .ok_or_else(|| format!("the instance exports no `{MEMORY_EXPORT}`"))?;
    let mut file = tempfile::Builder::new()
        .prefix(&format!("{module}-"))
        .suffix(".snapshot")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot create a snapshot file in {}: {e}", dir.display()))?;
    let image = layout.image.as_ref();
    let written = write_memory(file.as_file_mut(), memory.data(&store), image)
        .map_err(|e| format!("cannot write {}: {e}", file.path().display()))?;
    if write_back {
        start_write_back(file.as_file());
    }
    Ok(Snapshot {
        file,
        memory_bytes: u64::try_from(memory.data_size(&store)).unwrap_or(u64::MAX),
        from_image: image.is_some(),
        chunks: written.chunks,
        file_bytes: written.bytes,
        crc: written.crc,
        globals,
    })
}

/// Starts writing `file`'s dirty pages to disk without waiting for it
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that the kernel can reclaim them once
/// written. Dirty pages are not reclaimable: under a cgroup v1 memory limit, which has no
/// writeback of its own, they stay until the flusher writes them some 30 s later, and a fleet
/// suspending into them stalls. A failure only means they stay dirty (logged).
fn start_write_back(file: &File) {
    use std::os::fd::AsRawFd as _;
    // SAFETY: a plain syscall on an open descriptor; it reads no memory of this process.
    let done =
        unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    if done != 0 {
        tracing::debug!(
            "the snapshot's writeback could not start: {}",
            io::Error::last_os_error()
        );
    }
}

/// Puts `snapshot` back into `instance`, a fresh instance of the same module: grows its
/// memory to the snapshot's size, writes the file's chunks into it, zeroes what the
/// snapshot holds as zero, and sets the globals. Blocking I/O: call it from a blocking
/// thread.
///
/// # Errors
/// A message if the memory cannot grow, the file is unreadable, truncated or altered, or a
/// global cannot be set.
pub fn restore(
    mut store: impl AsContextMut,
    instance: &Instance,
    layout: &SnapshotLayout,
    snapshot: &Snapshot,
) -> Result<(), String> {
    let mut store = store.as_context_mut();
    let memory = instance
        .get_memory(&mut store, MEMORY_EXPORT)
        .ok_or_else(|| format!("the instance exports no `{MEMORY_EXPORT}`"))?;
    let current = u64::try_from(memory.data_size(&store)).unwrap_or(u64::MAX);
    let page = memory.page_size(&store);
    if snapshot.memory_bytes < current || !(snapshot.memory_bytes - current).is_multiple_of(page) {
        return Err(format!(
            "the snapshot holds {} bytes of memory, which a fresh instance of {current} bytes \
             (pages of {page}) cannot grow to",
            snapshot.memory_bytes
        ));
    }
    memory
        .grow(&mut store, (snapshot.memory_bytes - current) / page)
        .map_err(|e| format!("cannot grow memory to {} bytes: {e}", snapshot.memory_bytes))?;
    let mut file = snapshot.file.as_file();
    file.seek(SeekFrom::Start(0))
        .map_err(|e| format!("cannot read {}: {e}", snapshot.path().display()))?;
    let fresh = usize::try_from(current).unwrap_or(usize::MAX);
    read_memory(file, memory.data_mut(&mut store), fresh, snapshot)
        .map_err(|e| format!("snapshot {}: {e}", snapshot.path().display()))?;
    for (name, value) in layout.globals.iter().zip(&snapshot.globals) {
        instance
            .get_global(&mut store, name)
            .ok_or_else(|| format!("the instance has no global export `{name}`"))?
            .set(&mut store, *value)
            .map_err(|e| format!("cannot set global `{name}`: {e}"))?;
    }
    Ok(())
}

/// What [`write_memory`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Written {
    chunks: u64,
    bytes: u64,
    crc: u32,
}

/// A writer or reader that counts and checksums what passes through it.
struct Summing<T> {
    inner: T,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<T> Summing<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            crc: crc32fast::Hasher::new(),
            bytes: 0,
        }
    }

    fn count(&mut self, data: &[u8]) {
        self.crc.update(data);
        self.bytes += data.len() as u64;
    }
}

impl<W: Write> Write for Summing<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(data)?;
        self.count(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Summing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count(&buf[..n]);
        Ok(n)
    }
}

/// The unit in which restored memory is compared before it is written: 4 KiB, the host's
/// page, the unit in which a fresh instance shares its copy-on-write memory image.
const PAGE: usize = 4 << 10;

/// Copies `from` into `to` (of the same length) page by page, leaving alone every page that
/// already holds the same bytes; returns how many pages it wrote. The pages of `to` that
/// start before byte `compared` are read to compare; the others are known to be zero (memory
/// just grown), so only `from` is looked at, and reading them does not fault them in.
///
/// A fresh instance's memory is the module's copy-on-write image (its data segments, shared
/// by every instance of the module) and untouched zero pages: writing a page, even with the
/// bytes it already holds, gives the instance a private copy of it. Most of a snapshot's
/// pages are read-only data the guest never changed, so a resumed module keeps sharing them,
/// as a module that was never suspended does.
fn write_changed_pages(to: &mut [u8], from: &[u8], compared: usize) -> usize {
    let mut written = 0;
    for (index, (to, from)) in to.chunks_mut(PAGE).zip(from.chunks(PAGE)).enumerate() {
        let same = if index * PAGE < compared {
            to == from
        } else {
            is_zero(from)
        };
        if !same {
            to.copy_from_slice(from);
            written += 1;
        }
    }
    written
}

/// One chunk of zeroes, to compare with.
static ZEROES: [u8; CHUNK] = [0; CHUNK];

/// Whether `bytes` are all zero: `memcmp`s with [`ZEROES`], fast in every build profile.
fn is_zero(bytes: &[u8]) -> bool {
    bytes
        .chunks(CHUNK)
        .all(|part| ZEROES.get(..part.len()) == Some(part))
}

/// Streams `memory` to `file` in the snapshot format: with the module's `image`, only the
/// chunks that differ from a fresh instance's (format 2); without, every chunk that is not
/// all zero (format 1). Only a small write buffer is allocated, never a copy of the memory.
fn write_memory(
    file: &mut File,
    memory: &[u8],
    image: Option<&ImageDigest>,
) -> io::Result<Written> {
    use image::Compared;
    let mut out = Summing::new(BufWriter::with_capacity(256 << 10, file));
    out.write_all(magic(image.is_some()))?;
    out.write_all(&(memory.len() as u64).to_le_bytes())?;
    // Format 1 writes what a walk over an image of zeroes finds changed.
    let zeroes = ImageDigest::default();
    let mut walk = image.unwrap_or(&zeroes).walk();
    let mut chunks = 0;
    for (i, chunk) in memory.chunks(CHUNK).enumerate() {
        let offset = (i * CHUNK) as u64;
        match walk.compare(i as u64, chunk) {
            Compared::Fresh => continue,
            Compared::Zeroed => out.write_all(&(offset | ZEROED).to_le_bytes())?,
            Compared::Changed => {
                out.write_all(&offset.to_le_bytes())?;
                out.write_all(chunk)?;
            }
        }
        chunks += 1;
    }
    out.flush()?;
    Ok(Written {
        chunks,
        bytes: out.bytes,
        crc: out.crc.clone().finalize(),
    })
}

/// Reads a snapshot written by [`write_memory`] into `memory`, a fresh instance's memory
/// grown to the snapshot's size, whose first `fresh` bytes are the fresh instance's before it
/// grew (data segments; past them, memory was just grown, so it is zero). Writes only the
/// pages that differ (see [`write_changed_pages`]) and zeroes the chunks format 2 marks
/// [`ZEROED`]; in format 1, also zeroes every chunk of the first `fresh` bytes that the
/// snapshot does not hold and that is not zero already. Checks the header, the chunk
/// offsets, the chunk count, the length and the checksum `expected` recorded at write time.
fn read_memory(
    file: impl Read,
    memory: &mut [u8],
    fresh: usize,
    expected: &Snapshot,
) -> Result<(), String> {
    let io = |e: io::Error| e.to_string();
    // Buffered: each chunk is a small read after its offset.
    let mut input = Summing::new(BufReader::with_capacity(256 << 10, file));
    let mut header = [0u8; 16];
    input.read_exact(&mut header).map_err(io)?;
    let (magic, size) = header.split_at(8);
    let from_image = expected.from_image;
    if magic != self::magic(from_image) {
        return Err("not a snapshot file of its format (bad header)".into());
    }
    let size = u64::from_le_bytes(size.try_into().map_err(|_| "short header")?);
    if size != memory.len() as u64 || size != expected.memory_bytes {
        return Err(format!(
            "holds {size} bytes of memory, expected {}",
            expected.memory_bytes
        ));
    }
    let mut restored = vec![false; memory.len().div_ceil(CHUNK)];
    let mut buffer = vec![0u8; CHUNK];
    for _ in 0..expected.chunks {
        let mut offset = [0u8; 8];
        input.read_exact(&mut offset).map_err(io)?;
        let entry = u64::from_le_bytes(offset);
        let zeroed = from_image && entry % CHUNK as u64 == ZEROED;
        let offset = if zeroed { entry - ZEROED } else { entry };
        let index = usize::try_from(offset / CHUNK as u64).unwrap_or(usize::MAX);
        if offset % CHUNK as u64 != 0 || index >= restored.len() || restored[index] {
            return Err(format!("bad chunk offset {entry}"));
        }
        restored[index] = true;
        let start = index * CHUNK;
        let end = (start + CHUNK).min(memory.len());
        if zeroed {
            let chunk = &mut memory[start..end];
            if start < fresh && !is_zero(chunk) {
                chunk.fill(0);
            }
            continue;
        }
        let chunk = &mut buffer[..end - start];
        input.read_exact(chunk).map_err(io)?;
        write_changed_pages(&mut memory[start..end], chunk, fresh.saturating_sub(start));
    }
    let mut rest = [0u8; 1];
    if input.read(&mut rest).map_err(io)? != 0 {
        return Err("has more data than it was written with".into());
    }
    if input.bytes != expected.file_bytes || input.crc.clone().finalize() != expected.crc {
        return Err("does not hold what was written (checksum mismatch)".into());
    }
    if from_image {
        return Ok(());
    }
    let fresh = fresh.min(memory.len());
    let fresh_chunks = fresh.div_ceil(CHUNK);
    for (index, _) in restored
        .iter()
        .take(fresh_chunks)
        .enumerate()
        .filter(|(_, done)| !**done)
    {
        let start = index * CHUNK;
        let chunk = &mut memory[start..(start + CHUNK).min(fresh)];
        if !is_zero(chunk) {
            chunk.fill(0);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt as _;

    fn snapshot_of(dir: &Path, memory: &[u8]) -> Snapshot {
        snapshot_against(dir, memory, None)
    }

    fn snapshot_against(dir: &Path, memory: &[u8], image: Option<&ImageDigest>) -> Snapshot {
        let mut file = tempfile::Builder::new()
            .prefix("t-")
            .tempfile_in(dir)
            .expect("file");
        let written = write_memory(file.as_file_mut(), memory, image).expect("written");
        Snapshot {
            file,
            memory_bytes: memory.len() as u64,
            from_image: image.is_some(),
            chunks: written.chunks,
            file_bytes: written.bytes,
            crc: written.crc,
            globals: Vec::new(),
        }
    }

    fn sample_memory() -> Vec<u8> {
        // Chunk 0 and 3 non-zero, 1-2 zero, a short tail chunk non-zero.
        let mut memory = vec![0u8; 4 * CHUNK + 100];
        memory[5] = 1;
        memory[3 * CHUNK + CHUNK - 1] = 0xff;
        memory[4 * CHUNK + 99] = 7;
        memory
    }

    #[test]
    fn memory_round_trips_and_zero_chunks_are_skipped() {
        let dir = tempfile::tempdir().expect("dir");
        let memory = sample_memory();
        let snapshot = snapshot_of(dir.path(), &memory);
        assert_eq!(snapshot.chunks, 3);
        assert_eq!(
            snapshot.file_bytes,
            16 + 3 * 8 + 2 * CHUNK as u64 + 100,
            "zero chunks take no space"
        );
        assert_eq!(
            std::fs::metadata(snapshot.path()).expect("file").len(),
            snapshot.file_bytes
        );
        // A fresh instance whose data segments left bytes where the snapshot has zeroes.
        let mut target = vec![0u8; memory.len()];
        target[CHUNK + 10] = 9;
        target[2] = 3;
        let fresh = 2 * CHUNK;
        read_memory(
            snapshot.file.reopen().expect("reopen"),
            &mut target,
            fresh,
            &snapshot,
        )
        .expect("restores");
        assert!(target == memory, "restored memory equals the snapshot");
        // Past the fresh instance's size memory was just grown: it is taken as zero.
        let mut grown = vec![0u8; memory.len()];
        grown[2 * CHUNK + 1] = 5;
        let file = std::fs::read(snapshot.path()).expect("read");
        read_memory(&file[..], &mut grown, fresh, &snapshot).expect("restores");
        assert_eq!(grown[2 * CHUNK + 1], 5, "not scanned: a grown page is zero");
    }

    #[test]
    fn against_the_image_only_chunks_that_differ_from_a_fresh_instance_are_written() {
        let dir = tempfile::tempdir().expect("dir");
        let segments: [(u64, &[u8]); 3] = [
            (0, b"code and data"),
            (CHUNK as u64, b"read-only"),
            (2 * CHUNK as u64 + 5, b"zeroed later"),
        ];
        let image = ImageDigest::from_segments(segments);
        // A fresh instance of 3 chunks, grown by 2.
        let fresh_len = 3 * CHUNK;
        let fresh = image::tests::fresh_memory(fresh_len, &segments);
        let mut live = fresh.clone();
        live.resize(5 * CHUNK, 0);
        live[3] = b'D';
        live[2 * CHUNK..3 * CHUNK].fill(0);
        live[4 * CHUNK + 1] = 9;
        let snapshot = snapshot_against(dir.path(), &live, Some(&image));
        assert_eq!(
            snapshot.chunks, 3,
            "chunk 0 changed, chunk 2 zeroed, chunk 4 grown; chunks 1 and 3 as fresh"
        );
        assert_eq!(
            snapshot.file_bytes,
            16 + 3 * 8 + 2 * CHUNK as u64,
            "a zeroed chunk is its offset alone"
        );
        let mut target = fresh.clone();
        target.resize(live.len(), 0);
        let file = std::fs::read(snapshot.path()).expect("read");
        read_memory(&file[..], &mut target, fresh_len, &snapshot).expect("restores");
        assert!(target == live, "restored memory equals the live one");
        // Format 1 files are not taken for format 2 ones, nor the other way round.
        let zero_based = snapshot_of(dir.path(), &live);
        let mut other = fresh.clone();
        other.resize(live.len(), 0);
        let file = std::fs::read(zero_based.path()).expect("read");
        assert!(
            read_memory(&file[..], &mut other, fresh_len, &snapshot)
                .unwrap_err()
                .contains("format")
        );
        let file = std::fs::read(snapshot.path()).expect("read");
        assert!(
            read_memory(&file[..], &mut other, fresh_len, &zero_based)
                .unwrap_err()
                .contains("format")
        );
    }

    #[test]
    fn only_changed_pages_are_written() {
        let mut from = vec![0u8; 3 * PAGE + 10];
        from[PAGE + 1] = 1;
        from[3 * PAGE + 9] = 2;
        let all = from.len();
        let mut to = from.clone();
        assert_eq!(
            write_changed_pages(&mut to, &from, all),
            0,
            "nothing differs"
        );
        to[5] = 7;
        to[2 * PAGE] = 8;
        assert_eq!(
            write_changed_pages(&mut to, &from, all),
            2,
            "pages 0 and 2 differ"
        );
        assert!(to == from);
        let mut zero = vec![0u8; all];
        assert_eq!(
            write_changed_pages(&mut zero, &from, all),
            2,
            "page 1 and the short tail page hold data; zero pages stay unwritten"
        );
        assert!(zero == from);
        // Past `compared` the target is taken as zero: only `from` decides.
        let mut grown = vec![0u8; all];
        grown[2 * PAGE + 3] = 9;
        assert_eq!(
            write_changed_pages(&mut grown, &from, PAGE),
            2,
            "pages 1 and 3 hold data; page 2 is zero in the snapshot, so it is not read"
        );
        assert_eq!(grown[2 * PAGE + 3], 9, "a grown page is not read");
        assert!(grown[PAGE..2 * PAGE] == from[PAGE..2 * PAGE]);
    }

    #[test]
    fn zero_detection() {
        assert!(is_zero(&[]));
        assert!(is_zero(&[0; 100]));
        assert!(is_zero(&ZEROES));
        let mut chunk = vec![0u8; CHUNK];
        chunk[CHUNK - 1] = 1;
        assert!(!is_zero(&chunk));
        assert!(!is_zero(&[0, 0, 3]));
        assert!(is_zero(&vec![0u8; 3 * CHUNK + 1]));
        let mut long = vec![0u8; 3 * CHUNK + 1];
        long[3 * CHUNK] = 1;
        assert!(!is_zero(&long));
    }

    #[test]
    fn altered_or_truncated_files_are_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let memory = sample_memory();
        let snapshot = snapshot_of(dir.path(), &memory);
        let path = snapshot.path().to_owned();
        let good = std::fs::read(&path).expect("read");
        let read_back = |bytes: &[u8]| {
            let mut target = vec![0u8; memory.len()];
            read_memory(bytes, &mut target, 0, &snapshot)
        };
        assert!(read_back(&good).is_ok());
        let mut flipped = good.clone();
        flipped[100] ^= 1;
        assert!(read_back(&flipped).unwrap_err().contains("checksum"));
        assert!(read_back(&good[..good.len() - 1]).is_err());
        let mut longer = good.clone();
        longer.push(0);
        assert!(read_back(&longer).unwrap_err().contains("more data"));
        let mut bad_offset = good.clone();
        bad_offset[16] = 1;
        assert!(read_back(&bad_offset).unwrap_err().contains("offset"));
        assert!(read_back(b"not a snapshot at all").is_err());
        let mut target = vec![0u8; CHUNK];
        assert!(
            read_memory(&good[..], &mut target, 0, &snapshot)
                .unwrap_err()
                .contains("expected")
        );
    }

    #[test]
    fn the_folder_is_private_and_removed_with_its_files() {
        let base = tempfile::tempdir().expect("base");
        let dir = SnapshotDir::create(&base.path().join("a/b")).expect("created");
        let meta = std::fs::metadata(dir.path()).expect("dir");
        assert_eq!(meta.mode() & 0o777, 0o700);
        let snapshot = snapshot_of(dir.path(), &[1, 2, 3]);
        assert_eq!(
            std::fs::metadata(snapshot.path()).expect("file").mode() & 0o777,
            0o600
        );
        let (file, folder) = (snapshot.path().to_owned(), dir.path().to_owned());
        drop(snapshot);
        assert!(!file.exists(), "dropping a snapshot removes its file");
        drop(dir);
        assert!(!folder.exists(), "dropping the folder removes it");
    }

    #[test]
    fn default_base_is_inside_the_cache() {
        assert_eq!(
            default_base(Some(Path::new("/c"))),
            Path::new("/c/suspended")
        );
        assert!(default_base(None).starts_with(std::env::temp_dir()));
    }
}
