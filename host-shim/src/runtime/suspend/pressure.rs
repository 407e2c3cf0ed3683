//! Memory pressure: the host's memory cgroup nearly full. A host that runs in a container
//! with a memory limit (a Pod's `resources.limits.memory`) has no swap to fall back on: when
//! what it holds reaches the limit, the kernel first drops clean file pages — the host's own
//! code and the modules' compiled code, faulted back in at the next event — and then the
//! OOM killer ends it. Under pressure the host therefore suspends every idle module at once
//! instead of after its idle threshold: its instance memory (anonymous, which the kernel
//! cannot drop) goes to a snapshot file (page cache, which it can), whose writeback starts at
//! once; and no more instances become resident than are
//! ([`InstanceSlots::press`](crate::runtime::instance_slots::InstanceSlots::press)): a
//! module starting or resuming waits for a resident one to be suspended. Without that, a
//! thousand modules starting at once under a tight limit pushed the host's own code out of
//! memory before the first suspend, and the host thrashed.
//!
//! The measure is the **working set** as the kubelet computes it for eviction and
//! `kubectl top`: the cgroup's usage less its inactive file pages, against its limit.
//! Pressure comes on at [`ON`] of the limit and goes off below [`OFF`] (hysteresis, so that
//! a fleet near the line does not wake every module at each reading). The host reads its
//! cgroup (v2 `memory.current`, `memory.max`, `memory.stat`; v1 `memory.usage_in_bytes`,
//! `memory.limit_in_bytes` and `memory.stat`'s hierarchical limit) every [`INTERVAL`] on a
//! thread of its own, and every [`INTERVAL_UNLIMITED`] while the cgroup has no limit (a
//! limit can be set later: in-place Pod resize). Without a memory cgroup there is no
//! reading and never pressure.
//!
//! A periodic reading comes too late for a burst: a thousand modules starting within two
//! seconds fill a tight limit between two readings, and a host whose code the kernel has
//! already dropped reads late. So a module that suspends when idle also reads the cgroup
//! as it is admitted — before its instance is made, at its start or resume
//! ([`MemoryPressure::admit`]) — unless a reading is fresher than [`ADMISSION_FRESH`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::metrics::Metrics;

/// Pressure comes on when the working set reaches this fraction of the limit.
pub const ON: f64 = 0.80;
/// And goes off when it falls below this fraction.
pub const OFF: f64 = 0.70;
/// How often the cgroup is read while it has a limit.
pub const INTERVAL: Duration = Duration::from_millis(250);
/// How often while it has none.
pub const INTERVAL_UNLIMITED: Duration = Duration::from_secs(5);
/// An admission ([`MemoryPressure::admit`]) reads the cgroup again only if the last reading
/// is older than this: at most 100 readings a second however many modules start.
pub const ADMISSION_FRESH: Duration = Duration::from_millis(10);

/// cgroup v1 reports "no limit" as the largest page-aligned `i64`; anything at or above
/// this is no limit.
const V1_UNLIMITED: u64 = 1 << 62;

/// Where a host reads its memory pressure from ([`Settings::memory_pressure`](crate::Settings::memory_pressure)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PressureSource {
    /// Nowhere: never under pressure (`suspendUnderPressure: false`).
    Off,
    /// The host process's own memory cgroup, if it has one (the default).
    #[default]
    OwnCgroup,
    /// This cgroup (an embedder running its host in a cgroup of its choosing; tests).
    Cgroup(CgroupMemory),
}

impl PressureSource {
    /// The cgroup to watch, if any.
    pub fn cgroup(&self) -> Option<CgroupMemory> {
        match self {
            Self::Off => None,
            Self::OwnCgroup => CgroupMemory::of_this_process(),
            Self::Cgroup(cgroup) => Some(cgroup.clone()),
        }
    }
}

/// Where one process's memory cgroup is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupMemory {
    /// The unified hierarchy (cgroup v2): the cgroup's folder.
    V2(PathBuf),
    /// The v1 `memory` controller: the cgroup's folder in its hierarchy.
    V1(PathBuf),
}

/// One reading of a memory cgroup, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Usage less inactive file pages (the kubelet's working set).
    pub working_set: u64,
    /// The limit; `None`: none.
    pub limit: Option<u64>,
}

impl Reading {
    /// The working set as a fraction of the limit; `None` without a limit.
    pub fn fill(&self) -> Option<f64> {
        self.limit
            .map(|limit| self.working_set as f64 / limit.max(1) as f64)
    }
}

impl CgroupMemory {
    /// The memory cgroup of this process, found from `/proc/self/cgroup` under
    /// `/sys/fs/cgroup`; `None` if it has none.
    pub fn of_this_process() -> Option<Self> {
        let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        Self::find(&membership, Path::new("/sys/fs/cgroup"))
    }

    /// The memory cgroup `membership` (the text of `/proc/<pid>/cgroup`) names, under the
    /// cgroup file systems mounted at `root`. A cgroup path that does not exist under the
    /// mount (a container without its own cgroup namespace sees the host's path) falls back
    /// to the mount's root, which is then the container's own cgroup.
    pub fn find(membership: &str, root: &Path) -> Option<Self> {
        let mut v2 = None;
        for line in membership.lines() {
            let mut fields = line.splitn(3, ':');
            let (Some(_id), Some(controllers), Some(path)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let relative = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "memory") {
                let mount = root.join("memory");
                let dir = mount.join(relative);
                let dir = if dir.is_dir() { dir } else { mount };
                return dir
                    .join("memory.limit_in_bytes")
                    .is_file()
                    .then_some(Self::V1(dir));
            }
            if controllers.is_empty() {
                v2 = Some(relative.to_owned());
            }
        }
        let relative = v2?;
        let dir = root.join(&relative);
        let dir = if dir.is_dir() {
            dir
        } else {
            root.to_path_buf()
        };
        dir.join("memory.current")
            .is_file()
            .then_some(Self::V2(dir))
    }

    /// Reads the cgroup now; `None` if its files cannot be read or parsed.
    pub fn read(&self) -> Option<Reading> {
        match self {
            Self::V2(dir) => {
                let usage = read_number(&dir.join("memory.current"))?;
                let limit = std::fs::read_to_string(dir.join("memory.max")).ok()?;
                let limit = match limit.trim() {
                    "max" => None,
                    bytes => Some(bytes.parse().ok()?),
                };
                let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
                let inactive_file = stat_field(&stat, "inactive_file").unwrap_or(0);
                Some(Reading {
                    working_set: usage.saturating_sub(inactive_file),
                    limit,
                })
            }
            Self::V1(dir) => {
                let usage = read_number(&dir.join("memory.usage_in_bytes"))?;
                let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
                let inactive_file = stat_field(&stat, "total_inactive_file").unwrap_or(0);
                // A parent's limit binds too: memory.stat has the smallest of the cgroup's own
                // and its ancestors'; memory.limit_in_bytes only where the kernel leaves it out.
                let limit = match stat_field(&stat, "hierarchical_memory_limit") {
                    Some(hierarchical) => hierarchical,
                    None => read_number(&dir.join("memory.limit_in_bytes"))?,
                };
                Some(Reading {
                    working_set: usage.saturating_sub(inactive_file),
                    limit: (limit < V1_UNLIMITED).then_some(limit),
                })
            }
        }
    }
}

fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The value of `key` in a `memory.stat` text (`key value` lines).
fn stat_field(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
}

/// Whether the host is under memory pressure after `reading`, given whether it was before.
pub fn under_pressure(was: bool, reading: Reading) -> bool {
    match reading.fill() {
        None => false,
        Some(fill) if was => fill >= OFF,
        Some(fill) => fill >= ON,
    }
}

/// The host's memory pressure, as its modules see it: `true` while under pressure. Cheap to
/// clone.
#[derive(Debug, Clone)]
pub struct MemoryPressure {
    receiver: watch::Receiver<bool>,
    /// `None`: never under pressure.
    watcher: Option<Arc<Watcher>>,
}

/// What the periodic readings and the admissions share: the cgroup, the last reading's
/// outcome, and whom to tell of a change.
struct Watcher {
    cgroup: CgroupMemory,
    metrics: Metrics,
    on_change: Box<dyn Fn(bool) + Send + Sync>,
    sender: watch::Sender<bool>,
    last: Mutex<Last>,
    /// An admission reuses a reading younger than this ([`ADMISSION_FRESH`]).
    admission_fresh: Duration,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("cgroup", &self.cgroup)
            .finish_non_exhaustive()
    }
}

/// The outcome of the last reading.
#[derive(Debug, Clone, Copy)]
struct Last {
    under: bool,
    /// Whether the cgroup had a limit.
    limited: bool,
    /// When it was read; `None`: not yet.
    at: Option<Instant>,
}

impl Watcher {
    /// Reads the cgroup and applies the reading: records a change in the metrics, tells
    /// `on_change` and the receivers. Returns the outcome. With `fresh_for`, returns the
    /// last outcome instead if that reading found no limit (the thread reads again) or is
    /// younger than `fresh_for`.
    fn observe(&self, fresh_for: Option<Duration>) -> Last {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(fresh_for), Some(at)) = (fresh_for, last.at)
            && (!last.limited || at.elapsed() < fresh_for)
        {
            return *last;
        }
        let reading = self.cgroup.read();
        let under = reading.is_some_and(|r| under_pressure(last.under, r));
        if under != last.under {
            self.metrics.set_memory_pressure(under);
            if let Some(r) = reading {
                tracing::info!(
                    working_set = r.working_set,
                    limit = r.limit,
                    "memory pressure {}: idle modules are suspended {}",
                    if under { "on" } else { "off" },
                    if under {
                        "at once"
                    } else {
                        "after their idle threshold"
                    },
                );
            }
            (self.on_change)(under);
            self.sender.send_replace(under);
        }
        *last = Last {
            under,
            limited: reading.is_some_and(|r| r.limit.is_some()),
            at: Some(Instant::now()),
        };
        *last
    }
}

impl MemoryPressure {
    /// Never under pressure (no cgroup, or the host told not to look).
    pub fn never() -> Self {
        let (_, receiver) = watch::channel(false);
        Self {
            receiver,
            watcher: None,
        }
    }

    /// Watches `cgroup` on a thread of its own (every [`INTERVAL`], or
    /// [`INTERVAL_UNLIMITED`] without a limit), which ends when every clone of the returned
    /// value is dropped; records the state in `metrics` and tells `on_change` of each change,
    /// from that thread or from an [`admit`](Self::admit).
    ///
    /// # Errors
    /// If the thread cannot be started.
    pub fn watch(
        cgroup: CgroupMemory,
        metrics: Metrics,
        on_change: impl Fn(bool) + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        Self::watch_every(
            cgroup,
            metrics,
            on_change,
            [INTERVAL, INTERVAL_UNLIMITED],
            ADMISSION_FRESH,
        )
    }

    /// [`watch`](Self::watch) with the readings `[limited, unlimited]` apart, admissions
    /// reusing a reading younger than `admission_fresh`.
    fn watch_every(
        cgroup: CgroupMemory,
        metrics: Metrics,
        on_change: impl Fn(bool) + Send + Sync + 'static,
        [limited, unlimited]: [Duration; 2],
        admission_fresh: Duration,
    ) -> std::io::Result<Self> {
        let (sender, receiver) = watch::channel(false);
        let watcher = Arc::new(Watcher {
            cgroup,
            metrics,
            on_change: Box::new(on_change),
            sender,
            last: Mutex::new(Last {
                under: false,
                limited: false,
                at: None,
            }),
            admission_fresh,
        });
        let thread = watcher.clone();
        std::thread::Builder::new()
            .name("memory-pressure".into())
            .spawn(move || {
                while !thread.sender.is_closed() {
                    let last = thread.observe(None);
                    std::thread::sleep(if last.limited { limited } else { unlimited });
                }
            })?;
        Ok(Self {
            receiver,
            watcher: Some(watcher),
        })
    }

    /// Whether the host is under pressure now.
    pub fn now(&self) -> bool {
        *self.receiver.borrow()
    }

    /// Whether the host is under pressure as a module that suspends when idle is about to
    /// make its instance (start or resume): reads the cgroup first if it has a limit and the
    /// last reading is older than [`ADMISSION_FRESH`], so that a change is applied (the
    /// instance slots pressed) before the instance adds to the working set. Reads a few
    /// files of the cgroup file system: tens of microseconds, blocking.
    pub fn admit(&self) -> bool {
        match &self.watcher {
            Some(watcher) => watcher.observe(Some(watcher.admission_fresh)).under,
            None => false,
        }
    }

    /// Waits until the pressure changes; never returns once it can no longer change.
    pub async fn changed(&mut self) {
        if self.receiver.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        std::fs::create_dir_all(dir).expect("dir");
        for (name, text) in files {
            std::fs::write(dir.join(name), text).expect("write");
        }
    }

    /// A v2 cgroup at `dir` using `mib` MiB, none of it inactive file pages, with `max` as
    /// its `memory.max`.
    fn fill_v2(dir: &Path, mib: u64, max: &str) {
        let current = (mib * MIB).to_string();
        write(
            dir,
            &[
                ("memory.current", &current),
                ("memory.max", max),
                ("memory.stat", "inactive_file 0\n"),
            ],
        );
    }

    #[test]
    fn a_v2_cgroup_is_read_as_the_kubelet_reads_its_working_set() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("kubepods/pod1/host");
        write(
            &dir,
            &[
                ("memory.current", "104857600\n"),
                ("memory.max", "209715200\n"),
                (
                    "memory.stat",
                    "anon 52428800\ninactive_file 31457280\nactive_file 1\n",
                ),
            ],
        );
        let cgroup = CgroupMemory::find("0::/kubepods/pod1/host\n", root.path()).expect("found");
        assert_eq!(cgroup, CgroupMemory::V2(dir.clone()));
        let reading = cgroup.read().expect("read");
        assert_eq!(reading.working_set, 70 * MIB);
        assert_eq!(reading.limit, Some(200 * MIB));
        assert_eq!(reading.fill(), Some(0.35));

        write(&dir, &[("memory.max", "max\n")]);
        assert_eq!(cgroup.read().expect("read").limit, None);
        write(&dir, &[("memory.max", "lots\n")]);
        assert_eq!(cgroup.read(), None, "an unparsable limit is no reading");
    }

    #[test]
    fn a_v1_cgroup_takes_the_smaller_of_its_own_and_its_parents_limit() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("memory/bench/host");
        write(
            &dir,
            &[
                ("memory.usage_in_bytes", "94371840"),
                ("memory.limit_in_bytes", "9223372036854771712"),
                (
                    "memory.stat",
                    "cache 1\nhierarchical_memory_limit 104857600\ntotal_inactive_file 10485760\n",
                ),
            ],
        );
        let membership = "12:pids:/bench\n5:cpu,cpuacct:/bench\n4:memory:/bench/host\n";
        let cgroup = CgroupMemory::find(membership, root.path()).expect("found");
        assert_eq!(cgroup, CgroupMemory::V1(dir.clone()));
        let reading = cgroup.read().expect("read");
        assert_eq!(reading.working_set, 80 * MIB);
        assert_eq!(reading.limit, Some(100 * MIB));

        write(
            &dir,
            &[(
                "memory.stat",
                "hierarchical_memory_limit 9223372036854771712\n",
            )],
        );
        assert_eq!(cgroup.read().expect("read").limit, None, "v1's no limit");
        write(
            &dir,
            &[
                ("memory.stat", "total_inactive_file 0\n"),
                ("memory.limit_in_bytes", "104857600"),
            ],
        );
        assert_eq!(
            cgroup.read().expect("read").limit,
            Some(100 * MIB),
            "the cgroup's own limit where memory.stat has no hierarchical one"
        );
    }

    #[test]
    fn a_path_missing_under_the_mount_is_the_mount_itself_and_no_controller_is_none() {
        let root = tempfile::tempdir().expect("tempdir");
        write(
            &root.path().join("memory"),
            &[("memory.limit_in_bytes", "1048576")],
        );
        // A container without its own cgroup namespace sees its path on the machine.
        let found = CgroupMemory::find("4:memory:/docker/abc\n", root.path());
        assert_eq!(found, Some(CgroupMemory::V1(root.path().join("memory"))));

        let empty = tempfile::tempdir().expect("tempdir");
        assert_eq!(CgroupMemory::find("0::/\n", empty.path()), None);
        assert_eq!(CgroupMemory::find("4:memory:/x\n", empty.path()), None);
        assert_eq!(CgroupMemory::find("garbage", root.path()), None);
    }

    #[test]
    fn pressure_comes_on_at_eighty_percent_and_goes_off_below_seventy() {
        let at = |mib: u64| Reading {
            working_set: mib * MIB,
            limit: Some(100 * MIB),
        };
        assert!(!under_pressure(false, at(79)));
        assert!(under_pressure(false, at(80)));
        assert!(under_pressure(true, at(75)), "between the two it stays on");
        assert!(under_pressure(true, at(70)));
        assert!(!under_pressure(true, at(69)));
        assert!(!under_pressure(false, at(75)), "and stays off");
        let unlimited = Reading {
            working_set: 1 << 40,
            limit: None,
        };
        assert!(!under_pressure(true, unlimited), "no limit, no pressure");
    }

    #[tokio::test]
    async fn the_watch_turns_pressure_on_and_off_as_the_cgroup_fills_and_empties() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("host");
        let fill = |mib: u64| fill_v2(&dir, mib, "104857600");
        fill(50);
        let metrics = Metrics::new();
        let changes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = changes.clone();
        let mut pressure = MemoryPressure::watch(CgroupMemory::V2(dir.clone()), metrics.clone(), {
            move |under| seen.lock().expect("changes").push(under)
        })
        .expect("thread");
        assert!(!pressure.now());
        fill(95);
        tokio::time::timeout(Duration::from_secs(5), pressure.changed())
            .await
            .expect("pressure on");
        assert!(pressure.now());
        assert!(metrics.encode().contains("kube_wasm_memory_pressure 1"));
        fill(10);
        tokio::time::timeout(Duration::from_secs(5), pressure.changed())
            .await
            .expect("pressure off");
        assert!(!pressure.now());
        assert_eq!(*changes.lock().expect("changes"), [true, false]);
    }

    #[test]
    fn an_admission_reads_the_cgroup_before_the_next_periodic_reading_unless_one_is_fresh() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("host");
        let fill = |mib: u64, max: &str| fill_v2(&dir, mib, max);
        fill(50, "104857600");
        let metrics = Metrics::new();
        let changes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = changes.clone();
        let hour = Duration::from_secs(3600);
        // Longer than ADMISSION_FRESH, so that the reuse below does not depend on this test
        // running its next lines within 10 ms (it once did not, on a busy machine).
        let fresh = Duration::from_millis(500);
        let pressure = MemoryPressure::watch_every(
            CgroupMemory::V2(dir.clone()),
            metrics.clone(),
            move |under| seen.lock().expect("changes").push(under),
            [hour, hour],
            fresh,
        )
        .expect("thread");
        // The thread's first reading, then none for an hour.
        let first = Instant::now();
        while pressure
            .watcher
            .as_ref()
            .expect("watched")
            .last
            .lock()
            .expect("last")
            .at
            .is_none()
        {
            assert!(first.elapsed() < Duration::from_secs(5), "no first reading");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!pressure.admit());

        fill(95, "104857600");
        std::thread::sleep(fresh);
        assert!(
            pressure.admit(),
            "read at admission, an hour before the thread's next"
        );
        assert!(pressure.now(), "and told to every module");
        assert!(metrics.encode().contains("kube_wasm_memory_pressure 1"));
        assert_eq!(*changes.lock().expect("changes"), [true]);

        fill(10, "104857600");
        assert!(pressure.admit(), "a fresh reading is reused");
        std::thread::sleep(fresh);
        assert!(!pressure.admit());
        assert_eq!(*changes.lock().expect("changes"), [true, false]);

        fill(95, "max");
        std::thread::sleep(fresh);
        assert!(!pressure.admit(), "no limit: no pressure");
        fill(95, "104857600");
        std::thread::sleep(fresh);
        assert!(
            !pressure.admit(),
            "without a limit admissions leave the reading to the thread"
        );
        assert!(!MemoryPressure::never().admit());
    }
}
