//! The profile of a module's first run: which slots of its table it called through, kept in
//! the cache folder beside the compiled module.
//!
//! Every instance of an instrumented module reports into one [`FuncRefProfile`] (a bit per
//! slot, shared by every instance of the same wasm); the profile is written once, as a file
//! beside the cache's entries ([`ModuleCache::write_beside`]), whichever comes first: [`WRITE_AFTER`] after
//! the first instance started, or an instance ending other than by failing (a host's
//! graceful stop ends them all). The file is text: [`HEADER`], then one slot per line in
//! increasing order.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::instrument::MAX_TABLE_SLOTS;
use crate::runtime::cache::ModuleCache;

/// The first line of a profile file.
pub const HEADER: &str = "kube-wasm func-ref profile v1";

/// How long after its first instance started a module's profile is written, if no instance
/// ended before: long enough for a controller's start-up, its first lists and reconciles.
pub const WRITE_AFTER: Duration = Duration::from_secs(60);

/// The largest profile file read, in bytes: a line per slot of the largest table.
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

/// The slots an instrumented module's instances called through, until it is written.
#[derive(Debug)]
pub struct FuncRefProfile {
    /// A bit per slot.
    marks: Box<[AtomicU64]>,
    /// The slots recorded: `0..table_slots`.
    table_slots: u32,
    cache: ModuleCache,
    /// The name it is kept under ([`read`]).
    name: String,
    written: AtomicBool,
    scheduled: AtomicBool,
}

impl FuncRefProfile {
    /// An empty profile of a module whose table has `table_slots` slots (at most
    /// [`MAX_TABLE_SLOTS`] are recorded), to be written to `cache` under `name`.
    pub fn new(cache: ModuleCache, name: String, table_slots: u32) -> Self {
        let table_slots = table_slots.min(MAX_TABLE_SLOTS);
        Self {
            marks: (0..table_slots.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            table_slots,
            cache,
            name,
            written: AtomicBool::new(false),
            scheduled: AtomicBool::new(false),
        }
    }

    /// Records an indirect call through `slot`; a slot past the table is ignored.
    pub fn mark(&self, slot: u32) {
        if slot < self.table_slots
            && let Some(word) = self.marks.get((slot / 64) as usize)
        {
            word.fetch_or(1 << (slot % 64), Ordering::Relaxed);
        }
    }

    /// The slots recorded so far, in increasing order.
    pub fn slots(&self) -> Vec<u32> {
        let mut slots = Vec::new();
        for (word, bits) in (0u32..).zip(&self.marks) {
            let mut bits = bits.load(Ordering::Relaxed);
            while bits != 0 {
                slots.push(word * 64 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
        slots
    }

    /// Whether the profile was written.
    pub fn is_written(&self) -> bool {
        self.written.load(Ordering::Relaxed)
    }

    /// Writes the profile, unless it was written already; a failure is logged (the module
    /// is then profiled again by the next host).
    pub fn write(&self) {
        if self.written.swap(true, Ordering::Relaxed) {
            return;
        }
        let slots = self.slots();
        match self
            .cache
            .write_beside(&file_name(&self.name), &encode(&slots))
        {
            Ok(path) => tracing::debug!(
                "func-ref profile written: {} slots, {}",
                slots.len(),
                path.display()
            ),
            Err(e) => tracing::warn!("cannot write the func-ref profile {}: {e}", self.name),
        }
    }

    /// Writes the profile [`WRITE_AFTER`] from now on a tokio task, unless it was asked
    /// before or is written by then. Call from inside a tokio runtime.
    pub fn write_later(self: &Arc<Self>) {
        self.write_after(WRITE_AFTER);
    }

    fn write_after(self: &Arc<Self>, delay: Duration) {
        if self.scheduled.swap(true, Ordering::Relaxed) {
            return;
        }
        let profile: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(profile) = profile.upgrade() {
                tokio::task::spawn_blocking(move || profile.write());
            }
        });
    }
}

/// The file of `slots` (see the module docs).
pub fn encode(slots: &[u32]) -> Vec<u8> {
    let mut text = format!("{HEADER}\n");
    for slot in slots {
        text += &format!("{slot}\n");
    }
    text.into_bytes()
}

/// The slots of a profile file, below [`MAX_TABLE_SLOTS`]; `None` if it is not one.
pub fn decode(file: &[u8]) -> Option<Vec<u32>> {
    let text = std::str::from_utf8(file).ok()?;
    let mut lines = text.lines();
    if lines.next()? != HEADER {
        return None;
    }
    lines
        .map(|line| line.parse::<u32>().ok().filter(|&s| s < MAX_TABLE_SLOTS))
        .collect()
}

/// The slots of the profile kept in `cache` under `name`; `None` if there is none, or the file
/// is not a profile.
///
/// # Errors
/// If the file exists but cannot be read.
pub fn read(cache: &ModuleCache, name: &str) -> std::io::Result<Option<Vec<u32>>> {
    Ok(cache
        .read_beside(&file_name(name), MAX_PROFILE_BYTES)?
        .and_then(|file| decode(&file)))
}

/// The file a profile is kept in, beside the cache's entries.
fn file_name(name: &str) -> String {
    format!("{name}.funcrefs")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> (tempfile::TempDir, ModuleCache) {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ModuleCache::open(&dir.path().join("cache")).expect("cache");
        (dir, cache)
    }

    #[test]
    fn marked_slots_are_written_once_and_read_back() {
        let (_dir, cache) = cache();
        let profile = FuncRefProfile::new(cache.clone(), "m".into(), 130);
        for slot in [129, 3, 64, 3, 130, 5000, u32::MAX] {
            profile.mark(slot);
        }
        assert_eq!(profile.slots(), [3, 64, 129]);
        assert!(read(&cache, "m").expect("reads").is_none());
        profile.write();
        assert!(profile.is_written());
        profile.mark(7);
        profile.write();
        assert_eq!(read(&cache, "m").expect("reads"), Some(vec![3, 64, 129]));
    }

    #[tokio::test]
    async fn a_profile_asked_for_later_is_written_once_its_delay_passed() {
        let (_dir, cache) = cache();
        let profile = Arc::new(FuncRefProfile::new(cache.clone(), "m".into(), 8));
        profile.mark(2);
        profile.write_after(Duration::from_secs(2));
        // Asked again: the first delay stands.
        profile.write_after(Duration::ZERO);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!profile.is_written());
        let mut found = None;
        for _ in 0..500 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            found = read(&cache, "m").expect("reads");
            if found.is_some() {
                break;
            }
        }
        assert_eq!(found, Some(vec![2]));
        assert!(profile.is_written());
    }

    #[test]
    fn what_is_not_a_profile_reads_as_none() {
        assert_eq!(decode(&encode(&[1, 2])), Some(vec![1, 2]));
        assert_eq!(decode(&encode(&[])), Some(vec![]));
        assert_eq!(decode(b"1\n2\n"), None);
        assert_eq!(decode(format!("{HEADER}\nx\n").as_bytes()), None);
        assert_eq!(
            decode(format!("{HEADER}\n{}\n", MAX_TABLE_SLOTS).as_bytes()),
            None
        );
        assert_eq!(decode(&[0xff, 0xfe]), None);
    }
}
