//! Releasing the compiled code of a module that no instance is running, and the host's own
//! code once no module is running.
//!
//! A module loaded from the cache of precompiled modules is a private, read-only mapping of
//! its `.cwasm` file (see [`crate::runtime::cache`]): its machine code and the data its
//! instances' memories start from. The pages an instance touches stay in the host's resident
//! set for as long as the mapping exists — while any instance of the module is resident (see
//! [`crate::runtime::module`], "Unmapped modules") — though an idle module does not run any
//! of that code until its next event: 2.3–4.0 MiB per distinct module in the examples' smaps.
//! A mapping made again is recorded anew ([`Code::map`]).
//!
//! So each compiled module counts the instances that are *running* (inside a guest entry:
//! `_start`, a resume, or the delivery of one completion), and when none has run for the
//! host's [`Settings::release_idle_code`](crate::Settings::release_idle_code), the module
//! loop of the instance that ran last asks for its pages to be released. An instance that
//! waits for its ops between two events has no stack in the guest and is not running; an
//! instance in the middle of an event (even one yielding at an epoch tick) is.
//!
//! # How the pages are released
//!
//! `madvise(MADV_DONTNEED)` on the image range ([`wasmtime::Module::image_range`]) unmaps its
//! pages from the process; a clean page of a private file mapping comes back on the next
//! touch from the page cache, as a minor fault and without reading the disk if the kernel
//! kept it cached. That is only right for *clean file* pages: a page of a private mapping
//! that was ever written is an anonymous copy, which `MADV_DONTNEED` would replace with the
//! file's contents. Wasmtime writes nothing into an image it deserialises from a file (it
//! has no relocations to apply) and makes the mapping read-only before any code runs, so no
//! page can become such a copy later; still, before each release the range's pages are
//! checked in `/proc/self/pagemap`, and a range holding any anonymous page is never released
//! (see [`Release::NotClean`]).
//!
//! # The host's own code
//!
//! The host binary is the same kind of mapping: a private, read-only mapping of the
//! executable, of which start-up (kubeconfig, TLS, the engine, the linker) touches pages
//! that an idle host never runs again — about 13 MiB of host-shim's text with one idle
//! module. [`Code::of_host_binary`] covers the runs of file pages in the read-only mappings
//! of the executable and of the shared libraries it loaded (libc, libm, libgcc_s, the
//! dynamic loader): text, read-only data, unwind tables, and the pages of `.data.rel.ro`
//! the dynamic loader did not relocate — all but a few in a position-dependent executable,
//! as the host is linked, none in a position-independent one. Every module entry also counts
//! as running it: once no instance of any module has run for the release time, the host's
//! pages are released too.
//!
//! # Released every release time too
//!
//! A module woken more often than the release time (a one-second `tokio::time::interval`)
//! never leaves its code, or the host's, idle that long, though each wake-up runs only a
//! sliver of it: a ticking store-reader kept 1.9 of its 2.1 MiB of text resident, all that
//! its start-up had touched. So one thread ([`PeriodicRelease`]) also releases every code,
//! every release time, that no instance is running at that moment however recently one
//! ran: a module's code if one of its instances entered since its last release, the host's
//! always, since the host runs its code outside entries too (suspending a module, its
//! watches, Lease renewals). What the next wake-ups run comes back as page faults, so what
//! stays resident is the working set, not the start-up. The kernel may drop these clean
//! pages under memory pressure anyway; releasing them only does it sooner.
//!
//! The alternatives: `MADV_PAGEOUT` is safe for any page but evicts clean file pages from
//! the page cache too when no other process maps them, so the next event reads the disk;
//! `MADV_COLD` only ages the pages, which stay resident until memory is short, so the
//! resident set does not shrink. A module compiled in this process (no cache, or a cache
//! that could not store it) is anonymous memory and is never released.

use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak, mpsc};
use std::time::{Duration, Instant};

/// A page-aligned range of a private, read-only file mapping (a compiled module's image, or
/// part of the host binary): start address and length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Image {
    start: usize,
    len: usize,
}

impl Image {
    /// The whole pages of `[start, end)`: a mapping starts on a page, and its last, partial
    /// page is left alone. `None` if that is no page.
    fn whole_pages(start: usize, end: usize) -> Option<Self> {
        let page = page_size();
        let start = start.checked_next_multiple_of(page)?;
        let end = end - end % page;
        (end > start).then_some(Image {
            start,
            len: end - start,
        })
    }
}

/// Who is running the code now, and where it is mapped.
#[derive(Debug)]
struct Use {
    /// Where the code is mapped now; empty: nowhere (a module no instance holds, see
    /// [`crate::runtime::module`]'s "Unmapped modules"), or nothing releasable.
    images: Vec<Image>,
    /// Which mapping `images` belongs to (see [`Code::map`]).
    generation: u64,
    /// Instances inside a guest entry.
    running: usize,
    /// When the last entry of any instance ended; `None`: never entered.
    last_exit: Option<Instant>,
    /// Whether the pages were released after the last entry.
    released: bool,
    /// Releases so far.
    releases: u64,
}

/// Machine code in file mappings, and who is running it: the compiled code of one module,
/// shared by all its instances (every module of the host loaded from the same wasm), or the
/// host binary's code ([`Code::of_host_binary`]), run by every module.
#[derive(Debug)]
pub struct Code {
    /// Whether its mappings are clean file mappings whose pages can be released: a module
    /// deserialised from a cache file, or the host binary's code.
    releasable: bool,
    /// Whether it also runs outside guest entries (the host binary's code), so that a
    /// release since the last entry says nothing about what is resident now.
    runs_outside_entries: bool,
    state: Mutex<Use>,
}

/// What became of a request to release a module's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Its pages were released: `bytes` of address space (not all of it was resident).
    Done {
        /// Length of the released range.
        bytes: usize,
    },
    /// An instance is running it.
    Running,
    /// An instance ran it less than the idle time ago (or none ever did).
    Recent,
    /// Already released, and not run since.
    AlreadyReleased,
    /// Not mapped now: no instance holds the module (see [`Code::map`]).
    Unmapped,
    /// It is not a file mapping (compiled in this process): never released.
    NotFileBacked,
    /// Its range holds an anonymous page (written since it was mapped): never released.
    NotClean,
    /// The kernel refused (`errno`).
    Failed(i32),
}

/// Marks one instance as running the code until dropped.
#[must_use = "the instance counts as running only while this lives"]
#[derive(Debug)]
pub struct Entered(Arc<Code>);

impl Drop for Entered {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.running = state.running.saturating_sub(1);
        state.last_exit = Some(Instant::now());
    }
}

/// The system page size in bytes (4 KiB if `sysconf` cannot tell).
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(4096)
}

impl Code {
    /// The code of a module, mapped nowhere yet (see [`Code::map`]); `file_backed` says
    /// whether its mappings are deserialised from a file (`Module::deserialize_open_file`),
    /// which makes them releasable.
    pub fn of_module(file_backed: bool) -> Self {
        let mut code = Self::for_ranges(std::iter::empty());
        code.releasable = file_backed;
        code
    }

    /// Records `module`'s image as where this code is mapped now (if the code is
    /// releasable), replacing any earlier mapping; returns the generation to pass to
    /// [`Code::unmap`].
    ///
    /// # Safety
    /// The caller keeps `module` (a clone of it) alive until it has called
    /// [`Code::unmap`] with the returned generation: the image is released with
    /// `madvise` until then, so it must stay mapped.
    pub unsafe fn map(&self, module: &wasmtime::Module) -> u64 {
        let range = module.image_range();
        let image = Image::whole_pages(range.start as usize, range.end as usize);
        let mut state = self.lock();
        state.generation += 1;
        state.images = if self.releasable {
            image.into_iter().collect()
        } else {
            Vec::new()
        };
        state.released = false;
        state.generation
    }

    /// Forgets the mapping of `generation` if it is still the current one (a mapping made
    /// since is kept). After this, nothing of that mapping is released.
    pub fn unmap(&self, generation: u64) {
        let mut state = self.lock();
        if state.generation == generation {
            state.images.clear();
        }
    }

    /// The host binary's code: the runs of file pages in the private, not writable mappings
    /// of the running executable and its shared libraries (see [`host_mappings`]): text,
    /// read-only data, unwind tables, and `.data.rel.ro` but for the pages the dynamic loader
    /// relocated, which are anonymous copies. Read from `/proc/self/maps` and
    /// `/proc/self/pagemap`; nothing (never released) if they cannot be read.
    pub fn of_host_binary() -> Self {
        let ranges = match host_mappings() {
            Ok(ranges) => ranges,
            Err(err) => {
                tracing::debug!("the host binary's mappings cannot be read: {err}");
                Vec::new()
            }
        };
        let mut code = Self::for_ranges(ranges.into_iter());
        // The loader relocates before `main` and then makes these mappings read-only, so
        // which of their pages are anonymous copies is settled for the process's life.
        let state = code.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        state.images = state
            .images
            .iter()
            .flat_map(|&image| file_page_runs(image).unwrap_or_default())
            .collect();
        code.releasable = !state.images.is_empty();
        code.runs_outside_entries = true;
        code
    }

    /// Code in the file mappings `[start, end)`, each shrunk to whole pages.
    fn for_ranges(ranges: impl Iterator<Item = (usize, usize)>) -> Self {
        let images: Vec<Image> = ranges
            .filter_map(|(start, end)| Image::whole_pages(start, end))
            .collect();
        Self {
            releasable: !images.is_empty(),
            runs_outside_entries: false,
            state: Mutex::new(Use {
                images,
                generation: 0,
                running: 0,
                last_exit: None,
                released: false,
                releases: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Use> {
        // Every update leaves the counts consistent; a panic elsewhere cannot break them.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts one instance as running the code until the returned guard is dropped. Call it
    /// before entering the guest.
    pub fn enter(self: &Arc<Self>) -> Entered {
        let mut state = self.lock();
        state.running += 1;
        state.released = false;
        drop(state);
        Entered(self.clone())
    }

    /// How many times the code was released.
    pub fn releases(&self) -> u64 {
        self.lock().releases
    }

    /// Releases the code's resident pages if it is a clean file mapping, no instance is
    /// running it, and none has for `idle` (measured at `now`). A running instance that
    /// enters while the pages are released only takes page faults: nothing is lost.
    pub fn release_if_idle(&self, idle: Duration, now: Instant) -> Release {
        if !self.releasable {
            return Release::NotFileBacked;
        }
        let mut state = self.lock();
        if state.images.is_empty() {
            return Release::Unmapped;
        }
        if state.running > 0 {
            return Release::Running;
        }
        if state.released {
            return Release::AlreadyReleased;
        }
        match state.last_exit {
            Some(exit) if now.saturating_duration_since(exit) >= idle => {}
            _ => return Release::Recent,
        }
        self.release_pages(&mut state)
    }

    /// Releases the code's resident pages if it is a clean file mapping and no instance is
    /// running it, whether or not it was released since it last ran.
    pub fn release_unless_running(&self) -> Release {
        if !self.releasable {
            return Release::NotFileBacked;
        }
        let mut state = self.lock();
        if state.images.is_empty() {
            return Release::Unmapped;
        }
        if state.running > 0 {
            return Release::Running;
        }
        self.release_pages(&mut state)
    }

    /// The periodic release ([`PeriodicRelease`]): releases the code's resident pages if it
    /// is a clean file mapping and no instance is running it, however recently one ran —
    /// module code only if an instance entered it since its last release, the host binary's
    /// code whenever.
    pub fn release_periodically(&self) -> Release {
        if self.runs_outside_entries {
            self.release_unless_running()
        } else {
            self.release_if_idle(Duration::ZERO, Instant::now())
        }
    }

    /// Checks and releases every image under the lock (`state`), so an instance entering
    /// meanwhile waits for the (sub-millisecond) release rather than faulting pages in while
    /// it happens.
    fn release_pages(&self, state: &mut Use) -> Release {
        for &image in &state.images {
            match only_file_pages(image) {
                Ok(true) => {}
                Ok(false) => return Release::NotClean,
                Err(err) => return Release::Failed(err.raw_os_error().unwrap_or(0)),
            }
        }
        for &image in &state.images {
            // SAFETY: the range is a private, read-only file mapping that lives as long as
            // it is in `state` (it belongs to the `Module` whose image it is, which
            // `Code::map`'s caller keeps until it is unmapped under this lock, to the
            // executable, or to a shared library pinned for the process's life, see
            // `host_mappings`),
            // and it holds no anonymous page (checked just above; a read-only mapping cannot
            // gain one), so dropping its pages loses nothing: each comes back from the file
            // on its next touch.
            let result = unsafe {
                libc::madvise(
                    image.start as *mut libc::c_void,
                    image.len,
                    libc::MADV_DONTNEED,
                )
            };
            if result != 0 {
                return Release::Failed(io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
        }
        state.released = true;
        state.releases += 1;
        Release::Done {
            bytes: state.images.iter().map(|image| image.len).sum(),
        }
    }
}

/// One thread that releases the code of the host and of every module added to it every
/// release time ([`Code::release_periodically`]; see "Released every release time too"
/// above). Codes that cannot be released (compiled in memory, written, refused by the
/// kernel) are dropped from it; a code is held weakly. The thread ends once this is dropped.
#[derive(Debug)]
pub struct PeriodicRelease {
    codes: Arc<Mutex<Vec<Weak<Code>>>>,
    /// Dropped to end the thread at once.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeriodicRelease {
    /// Starts the thread, releasing every `period`.
    ///
    /// # Errors
    /// If the OS refuses to start a thread.
    pub fn start(period: Duration) -> io::Result<Self> {
        let codes: Arc<Mutex<Vec<Weak<Code>>>> = Arc::default();
        let list = codes.clone();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("kube-wasm-code".into())
            .stack_size(64 << 10)
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                    let mut codes = list.lock().unwrap_or_else(PoisonError::into_inner);
                    codes.retain(|code| {
                        code.upgrade().is_some_and(|code| {
                            let outcome = code.release_periodically();
                            tracing::trace!(?outcome, "periodic release");
                            !matches!(
                                outcome,
                                Release::NotFileBacked | Release::NotClean | Release::Failed(_)
                            )
                        })
                    });
                }
            })?;
        Ok(Self {
            codes,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Releases `code` every period from now on, unless it cannot be released at all.
    pub fn add(&self, code: &Arc<Code>) {
        if !code.releasable {
            return;
        }
        self.codes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::downgrade(code));
    }
}

impl Drop for PeriodicRelease {
    /// Ends the thread and waits for it (at most one release pass): after this, no code
    /// added to it is touched.
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The ranges `[start, end)` of the private, not writable file mappings of the running
/// executable and of the shared libraries it has loaded, from `/proc/self/maps`. The
/// executable is recognised by device and inode, or by the path `/proc/self/exe` names (which
/// works too for a binary replaced on disk since it started); a library is one that
/// `dlopen(RTLD_NOLOAD)` finds loaded, and is pinned then (`RTLD_NODELETE`), so that its
/// range never holds anything else while the host releases its pages.
fn host_mappings() -> io::Result<Vec<(usize, usize)>> {
    use std::os::unix::fs::MetadataExt as _;
    let exe = std::fs::metadata("/proc/self/exe")?;
    let exe_path = std::fs::read_link("/proc/self/exe")?;
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let mut pinned: Vec<(String, bool)> = Vec::new();
    let mut is_pinned_library = |path: &str| -> bool {
        if let Some(&(_, known)) = pinned.iter().find(|(seen, _)| seen == path) {
            return known;
        }
        let loaded = path.starts_with('/') && pin_loaded_library(path);
        pinned.push((path.to_owned(), loaded));
        loaded
    };
    Ok(maps
        .lines()
        .filter_map(|line| {
            // `start-end perms offset major:minor inode path`
            let mut fields = line.split_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let perms = fields.next()?;
            let _offset = fields.next()?;
            let (major, minor) = fields.next()?.split_once(':')?;
            let inode: u64 = fields.next()?.parse().ok()?;
            let dev = libc::makedev(
                u32::from_str_radix(major, 16).ok()?,
                u32::from_str_radix(minor, 16).ok()?,
            );
            let path = fields.collect::<Vec<_>>().join(" ");
            let private_read_only =
                perms.starts_with('r') && !perms.contains('w') && perms.ends_with('p');
            let executable =
                (inode == exe.ino() && dev == exe.dev()) || Path::new(&path) == exe_path;
            let host = private_read_only && inode != 0 && (executable || is_pinned_library(&path));
            host.then_some((
                usize::from_str_radix(start, 16).ok()?,
                usize::from_str_radix(end, 16).ok()?,
            ))
        })
        .collect())
}

/// Whether the shared object at `path` is loaded in this process; if it is, it is never
/// unloaded from now on (`dlopen(RTLD_NOLOAD | RTLD_NODELETE)`, then `dlclose` of that handle).
fn pin_loaded_library(path: &str) -> bool {
    let Ok(path) = std::ffi::CString::new(path) else {
        return false;
    };
    // SAFETY: `path` is a NUL-terminated string; with `RTLD_NOLOAD` nothing is loaded (no
    // initialiser runs), and the handle is closed at once, `RTLD_NODELETE` keeping the object.
    unsafe {
        let handle = libc::dlopen(
            path.as_ptr(),
            libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
        );
        if handle.is_null() {
            return false;
        }
        libc::dlclose(handle);
    }
    true
}

/// Whether every page of `image` that is resident or swapped is a file page.
fn only_file_pages(image: Image) -> io::Result<bool> {
    Ok(page_kinds(image)?.iter().all(|&file| file))
}

/// The maximal runs of `image`'s pages that hold no anonymous page (see [`only_file_pages`]).
fn file_page_runs(image: Image) -> io::Result<Vec<Image>> {
    let page = page_size();
    let kinds = page_kinds(image)?;
    let mut runs = Vec::new();
    let mut run_start = None;
    for (index, &file) in kinds.iter().chain([&false]).enumerate() {
        match (file, run_start) {
            (true, None) => run_start = Some(index),
            (false, Some(first)) => {
                runs.push(Image {
                    start: image.start + first * page,
                    len: (index - first) * page,
                });
                run_start = None;
            }
            _ => {}
        }
    }
    Ok(runs)
}

/// For each page of `image`, whether it is absent or a file page (bit 61 of its
/// `/proc/self/pagemap` entry; bit 63: present, bit 62: swapped — a swapped page is
/// anonymous).
fn page_kinds(image: Image) -> io::Result<Vec<bool>> {
    const PRESENT: u64 = 1 << 63;
    const SWAPPED: u64 = 1 << 62;
    const FILE: u64 = 1 << 61;
    let page = page_size();
    let mut pagemap = File::open("/proc/self/pagemap")?;
    pagemap.seek(SeekFrom::Start((image.start / page * 8) as u64))?;
    let mut entries = vec![0u8; image.len / page * 8];
    pagemap.read_exact(&mut entries)?;
    Ok(entries
        .chunks_exact(8)
        .map(|entry| {
            let bits = u64::from_ne_bytes(entry.try_into().unwrap_or_default());
            bits & SWAPPED == 0 && (bits & PRESENT == 0 || bits & FILE != 0)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::os::fd::AsRawFd as _;

    /// A private mapping of a file of `pages` pages of `b'x'`, readable (and writable if
    /// `writable`), unmapped on drop.
    struct Mapping {
        start: usize,
        len: usize,
        _file: File,
    }

    impl Mapping {
        fn new(dir: &std::path::Path, pages: usize, writable: bool) -> Self {
            let len = pages * page_size();
            let path = dir.join("image");
            let mut file = File::create(&path).expect("create");
            file.write_all(&vec![b'x'; len]).expect("write");
            let file = File::open(&path).expect("open");
            let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
            // SAFETY: a fresh private mapping of a file this test owns.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    prot,
                    libc::MAP_PRIVATE,
                    file.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(ptr, libc::MAP_FAILED, "mmap");
            Self {
                start: ptr as usize,
                len,
                _file: file,
            }
        }

        fn bytes(&self) -> &[u8] {
            // SAFETY: mapped readable for `len` bytes until drop.
            unsafe { std::slice::from_raw_parts(self.start as *const u8, self.len) }
        }

        /// Reads every page (volatile reads: the optimiser may not skip them).
        fn touch(&self) -> u64 {
            (0..self.len)
                .step_by(page_size())
                // SAFETY: inside the readable mapping.
                .map(|offset| {
                    u64::from(unsafe {
                        std::ptr::read_volatile((self.start + offset) as *const u8)
                    })
                })
                .sum()
        }

        /// Pages of the mapping in this process's page tables.
        fn resident_pages(&self) -> usize {
            Self::resident_in(self.start, self.len)
        }

        /// Pages of `[start, start + len)` in this process's page tables.
        fn resident_in(start: usize, len: usize) -> usize {
            let page = page_size();
            let mut pagemap = File::open("/proc/self/pagemap").expect("pagemap");
            pagemap
                .seek(SeekFrom::Start((start / page * 8) as u64))
                .expect("seek");
            let mut entries = vec![0u8; len / page * 8];
            pagemap.read_exact(&mut entries).expect("read");
            entries
                .chunks_exact(8)
                .filter(|e| u64::from_ne_bytes((*e).try_into().expect("8 bytes")) & 1 << 63 != 0)
                .count()
        }

        fn code(&self) -> Arc<Code> {
            Arc::new(Code::for_ranges(std::iter::once((
                self.start,
                self.start + self.len,
            ))))
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: unmaps exactly what `new` mapped.
            unsafe { libc::munmap(self.start as *mut libc::c_void, self.len) };
        }
    }

    #[test]
    fn released_only_when_no_instance_runs_and_none_ran_lately() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mapping = Mapping::new(dir.path(), 16, false);
        let code = mapping.code();
        mapping.touch();
        assert_eq!(mapping.resident_pages(), 16);
        let now = Instant::now;
        assert_eq!(
            code.release_if_idle(Duration::ZERO, now()),
            Release::Recent,
            "never entered"
        );

        let first = code.enter();
        let second = code.enter();
        mapping.touch();
        drop(first);
        assert_eq!(
            code.release_if_idle(Duration::ZERO, now()),
            Release::Running,
            "one instance still runs"
        );
        drop(second);
        assert_eq!(mapping.resident_pages(), 16, "nothing released so far");
        assert_eq!(
            code.release_if_idle(Duration::from_secs(60), now()),
            Release::Recent
        );
        assert_eq!(mapping.resident_pages(), 16);

        let later = now() + Duration::from_secs(61);
        assert_eq!(
            code.release_if_idle(Duration::from_secs(60), later),
            Release::Done {
                bytes: 16 * page_size()
            }
        );
        assert_eq!(mapping.resident_pages(), 0);
        assert_eq!(code.releases(), 1);
        assert_eq!(
            code.release_if_idle(Duration::ZERO, later),
            Release::AlreadyReleased
        );
        // The pages come back from the file, unchanged.
        assert_eq!(mapping.touch(), 16 * u64::from(b'x'));
        assert!(mapping.bytes().iter().all(|&b| b == b'x'));

        // Entered again: released again once idle.
        drop(code.enter());
        assert_eq!(
            code.release_if_idle(Duration::ZERO, now()),
            Release::Done {
                bytes: 16 * page_size()
            }
        );
        assert_eq!(code.releases(), 2);
    }

    #[test]
    fn a_range_with_a_written_page_is_never_released() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mapping = Mapping::new(dir.path(), 4, true);
        let code = mapping.code();
        mapping.touch();
        // SAFETY: the mapping is writable; this makes page 2 a private anonymous copy.
        unsafe { *((mapping.start + 2 * page_size()) as *mut u8) = b'y' };
        drop(code.enter());
        assert_eq!(
            code.release_if_idle(Duration::ZERO, Instant::now()),
            Release::NotClean
        );
        assert_eq!(mapping.resident_pages(), 4);
        assert_eq!(mapping.bytes()[2 * page_size()], b'y', "the write is kept");
    }

    #[test]
    fn the_runs_between_written_pages_are_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mapping = Mapping::new(dir.path(), 6, true);
        mapping.touch();
        let page = page_size();
        for written in [0, 3] {
            // SAFETY: the mapping is writable; this makes the page a private anonymous copy.
            unsafe { *((mapping.start + written * page) as *mut u8) = b'y' };
        }
        let runs = file_page_runs(Image {
            start: mapping.start,
            len: 6 * page,
        })
        .expect("pagemap");
        let found: Vec<(usize, usize)> = runs
            .iter()
            .map(|run| ((run.start - mapping.start) / page, run.len / page))
            .collect();
        assert_eq!(found, [(1, 2), (4, 2)], "(first page, pages) of each run");
    }

    #[test]
    fn the_host_binarys_code_covers_its_shared_libraries() {
        let code = Code::of_host_binary();
        let images = code.lock().images.clone();
        let covered = |address: usize| {
            images
                .iter()
                .any(|image| (image.start..image.start + image.len).contains(&address))
        };
        assert!(
            covered(the_host_binarys_code_covers_its_shared_libraries as *const () as usize),
            "the executable's text"
        );
        let getpid = libc::getpid as *const () as usize;
        // SAFETY: `dladdr` fills `info` for an address of this process; `dli_fname` is then a
        // NUL-terminated string owned by the dynamic loader.
        let object = unsafe {
            let mut info: libc::Dl_info = std::mem::zeroed();
            assert_ne!(libc::dladdr(getpid as *const libc::c_void, &mut info), 0);
            std::ffi::CStr::from_ptr(info.dli_fname)
                .to_string_lossy()
                .into_owned()
        };
        assert!(object.contains("libc.so"), "getpid lies in {object}");
        assert!(covered(getpid), "libc's text");
    }

    #[test]
    fn the_host_binarys_code_is_released_and_runs_on() {
        let code = Arc::new(Code::of_host_binary());
        assert!(
            !code.lock().images.is_empty(),
            "the test binary's text is a clean file mapping"
        );
        let resident = |code: &Code| -> usize {
            code.lock()
                .images
                .iter()
                .map(|image| Mapping::resident_in(image.start, image.len))
                .sum()
        };
        let before = resident(&code);
        drop(code.enter());
        assert!(matches!(
            code.release_if_idle(Duration::ZERO, Instant::now()),
            Release::Done { .. }
        ));
        let after = resident(&code);
        assert!(
            after < before / 2,
            "{before} resident pages before the release, {after} after"
        );
        // Whatever ran since (this test, the harness) came back from the file.
        let text: String = (0..3).map(|i| i.to_string()).collect();
        assert_eq!(text, "012");
    }

    /// Waits up to 5 s for `code` to have been released at least `at_least` times.
    fn released(code: &Code, at_least: u64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while code.releases() < at_least && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        code.releases() >= at_least
    }

    #[test]
    fn the_periodic_release_waits_only_for_running_instances() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mapping = Mapping::new(dir.path(), 8, false);
        let code = mapping.code();
        let running = code.enter();
        mapping.touch();
        let periodic = PeriodicRelease::start(Duration::from_millis(20)).expect("thread");
        periodic.add(&code);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(code.releases(), 0, "not while an instance runs");
        assert_eq!(mapping.resident_pages(), 8);
        drop(running);
        assert!(
            released(&code, 1),
            "released without waiting for an idle time"
        );
        assert_eq!(mapping.resident_pages(), 0);

        // Entered again, briefly, as a module woken by a short timer: released again.
        let entry = code.enter();
        assert_eq!(mapping.touch(), 8 * u64::from(b'x'), "the pages come back");
        drop(entry);
        assert!(released(&code, 2), "released again after the next entry");
        // Not entered since: a module's code runs only inside entries, so nothing to release.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(code.releases(), 2, "not released again without an entry");

        // Stopped: nothing is released any more.
        drop(periodic);
        let entry = code.enter();
        mapping.touch();
        drop(entry);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(code.releases(), 2, "not released once stopped");
        assert_eq!(mapping.resident_pages(), 8);
    }

    #[test]
    fn code_that_runs_outside_entries_is_released_every_period() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mapping = Mapping::new(dir.path(), 8, false);
        let mut code = Code::for_ranges(std::iter::once((
            mapping.start,
            mapping.start + mapping.len,
        )));
        code.runs_outside_entries = true;
        let code = Arc::new(code);
        mapping.touch();
        let periodic = PeriodicRelease::start(Duration::from_millis(20)).expect("thread");
        periodic.add(&code);
        assert!(released(&code, 1), "released, never entered");
        assert_eq!(mapping.resident_pages(), 0);
        // Touched outside any entry (as the host's own tasks run its code): released again.
        assert_eq!(mapping.touch(), 8 * u64::from(b'x'), "the pages come back");
        let after = code.releases();
        assert!(released(&code, after + 1), "released again");
        assert_eq!(mapping.resident_pages(), 0);
    }

    #[test]
    fn code_compiled_in_memory_is_never_released() {
        let code = Arc::new(Code::for_ranges(std::iter::empty()));
        drop(code.enter());
        assert_eq!(
            code.release_if_idle(Duration::ZERO, Instant::now()),
            Release::NotFileBacked
        );
    }

    #[test]
    fn a_module_from_a_cache_file_runs_again_after_its_code_is_released() {
        let engine = wasmtime::Engine::default();
        let wasm = wat::parse_str(
            r#"(module
                 (memory (export "memory") 1)
                 (data (i32.const 0) "\2a")
                 (func (export "answer") (result i32)
                   i32.const 0
                   i32.load8_u
                   i32.const 1000
                   i32.add))"#,
        )
        .expect("wat");
        let artifact = engine.precompile_module(&wasm).expect("precompiles");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.cwasm");
        std::fs::write(&path, artifact).expect("write");
        // SAFETY: the artifact was just made by this engine.
        let module = unsafe {
            wasmtime::Module::deserialize_open_file(&engine, File::open(&path).expect("open"))
        }
        .expect("deserialises");
        let code = Arc::new(Code::of_module(true));
        // SAFETY: `module` lives until the end of the test, after `unmap`.
        let generation = unsafe { code.map(&module) };
        let call = || {
            let _running = code.enter();
            let mut store = wasmtime::Store::new(&engine, ());
            let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instance");
            let answer = instance
                .get_typed_func::<(), i32>(&mut store, "answer")
                .expect("export");
            answer.call(&mut store, ()).expect("runs")
        };
        assert_eq!(call(), 1042);
        assert!(matches!(
            code.release_if_idle(Duration::ZERO, Instant::now()),
            Release::Done { .. }
        ));
        assert_eq!(call(), 1042);

        // Mapped again (as a module that no instance held is loaded again): the older
        // mapping's unmap leaves the newer one alone.
        // SAFETY: as above.
        let newer = unsafe { code.map(&module) };
        assert_ne!(newer, generation);
        code.unmap(generation);
        drop(code.enter());
        assert!(matches!(
            code.release_if_idle(Duration::ZERO, Instant::now()),
            Release::Done { .. }
        ));
        code.unmap(newer);
        drop(code.enter());
        assert_eq!(
            code.release_if_idle(Duration::ZERO, Instant::now()),
            Release::Unmapped,
            "nothing is released once the mapping is forgotten"
        );
        assert_eq!(code.release_unless_running(), Release::Unmapped);
    }

    #[test]
    fn a_module_compiled_in_memory_maps_nothing_releasable() {
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, wat::parse_str("(module)").expect("wat"))
            .expect("compiles");
        let code = Code::of_module(false);
        // SAFETY: nothing is recorded for code that is not releasable.
        unsafe { code.map(&module) };
        assert!(code.lock().images.is_empty());
        assert_eq!(code.release_unless_running(), Release::NotFileBacked);
    }
}
