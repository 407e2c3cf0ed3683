//! Whether the machine was short of memory during a run: the kernel's global reclaim, read from
//! `/proc/vmstat`. Under global reclaim the kernel takes clean file-backed pages (a host's code,
//! a module's mapped code cache, a native controller's text) from idle processes, so their PSS
//! reads lower than on a machine at rest: a run under pressure once put a host with a suspended
//! Go module at 1.3 MiB PSS (RSS 1.6 MiB), where the same host at rest holds 20 MiB. The
//! report says so beside such figures.
//!
//! Reclaim inside a cgroup at its `memory.max` (the budget workloads) is not counted: it takes
//! pages from that cgroup alone. `pgsteal_kswapd` counts pages kswapd reclaimed when a zone ran
//! low on free pages, and the `allocstall_*` counters the allocations that reclaimed pages
//! themselves (global direct reclaim; a cgroup's limit reclaim does not count there).

use std::fmt;

/// The global reclaim counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReclaimCounters {
    /// `pgsteal_kswapd`: pages kswapd reclaimed since boot.
    pub kswapd_pages: u64,
    /// The sum of the `allocstall_*` counters: allocations that entered global direct reclaim.
    pub direct_stalls: u64,
}

impl ReclaimCounters {
    /// The counters now; all zero where `/proc/vmstat` cannot be read (then every run reads
    /// as free of reclaim).
    pub fn now() -> Self {
        std::fs::read_to_string("/proc/vmstat")
            .map(|text| Self::parse(&text))
            .unwrap_or_default()
    }

    /// The counters of a `/proc/vmstat` text (`name value` lines; missing names count 0).
    pub fn parse(text: &str) -> Self {
        let mut counters = Self::default();
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            let (Some(name), Some(value)) = (fields.next(), fields.next()) else {
                continue;
            };
            let Ok(value) = value.parse::<u64>() else {
                continue;
            };
            if name == "pgsteal_kswapd" {
                counters.kswapd_pages = value;
            } else if name.starts_with("allocstall_") {
                counters.direct_stalls += value;
            }
        }
        counters
    }

    /// The reclaim from `self` until `later`.
    pub fn until(&self, later: &Self) -> Reclaim {
        Reclaim {
            kswapd_kib: later.kswapd_pages.saturating_sub(self.kswapd_pages) * page_kib(),
            direct_stalls: later.direct_stalls.saturating_sub(self.direct_stalls),
        }
    }
}

/// Global reclaim over a span of time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reclaim {
    /// What kswapd reclaimed, in KiB.
    pub kswapd_kib: u64,
    /// Allocations that entered global direct reclaim.
    pub direct_stalls: u64,
}

impl Reclaim {
    /// True if the kernel reclaimed nothing globally: resident figures are as on a machine at
    /// rest.
    pub fn none(&self) -> bool {
        self.kswapd_kib == 0 && self.direct_stalls == 0
    }
}

impl fmt::Display for Reclaim {
    /// `none`, or what was reclaimed and what it means for the figures.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.none() {
            return f.write_str("none");
        }
        write!(
            f,
            "{:.1} MiB reclaimed by kswapd, {} allocations stalled in reclaim — the machine ran \
             short of memory: resident (PSS, RSS) figures may read lower than at rest",
            self.kswapd_kib as f64 / 1024.0,
            self.direct_stalls
        )
    }
}

/// The page size in KiB (4 where it cannot be read).
fn page_kib() -> u64 {
    // SAFETY: sysconf reads a constant of the system.
    let bytes = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(bytes).map_or(4, |b| (b / 1024).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_counters_and_their_difference() {
        let before = ReclaimCounters::parse(
            "nr_free_pages 10\npgsteal_kswapd 100\npgsteal_direct 7\nallocstall_dma 1\n\
             allocstall_normal 2\nallocstall_movable 3\n",
        );
        assert_eq!(
            before,
            ReclaimCounters {
                kswapd_pages: 100,
                direct_stalls: 6
            }
        );
        let after = ReclaimCounters {
            kswapd_pages: 356,
            direct_stalls: 6,
        };
        let reclaim = before.until(&after);
        assert_eq!(reclaim.kswapd_kib, 256 * page_kib());
        assert_eq!(reclaim.direct_stalls, 0);
        assert!(!reclaim.none());
        assert!(reclaim.to_string().contains("MiB reclaimed by kswapd"));
        assert!(before.until(&before).none());
        assert_eq!(before.until(&before).to_string(), "none");
        assert_eq!(
            ReclaimCounters::parse("garbage\npgsteal_kswapd x\n"),
            ReclaimCounters::default()
        );
    }
}
