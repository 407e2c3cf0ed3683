//! A control group for one launch's processes: a memory limit (cgroup v1
//! `memory.limit_in_bytes`, v2 `memory.max`; no swap), what the kernel charged to it (usage,
//! its peak, anonymous and file-backed pages from `memory.stat`), the OOM kills inside it,
//! and the CPU time its processes used (v1 `cpuacct.usage`, v2 `cpu.stat`).
//!
//! A process joins the group before it runs anything of its own: [`Cgroup::command`] starts it
//! through `sh`, which writes its own PID into the group's `cgroup.procs` and then `exec`s
//! the program, so every page the program touches is charged to the group. Children (the
//! host's compiler) inherit the group.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

/// Where cgroups are mounted.
const ROOT: &str = "/sys/fs/cgroup";
/// The parent group of every launch's group.
const PARENT: &str = "kube-wasm-bench";

/// The cgroup version of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    /// Separate hierarchies per controller (`memory/`, `cpuacct/`).
    V1,
    /// The unified hierarchy (`cgroup.controllers` at the root).
    V2,
}

fn version() -> Version {
    if Path::new(ROOT).join("cgroup.controllers").exists() {
        Version::V2
    } else {
        Version::V1
    }
}

/// What the kernel charged to a group at one moment, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charged {
    /// Everything charged (v1 `memory.usage_in_bytes`, v2 `memory.current`).
    pub usage: u64,
    /// Anonymous memory (v1 `total_rss` + `total_rss_huge`… as `memory.stat` reports it, v2
    /// `anon`): what the kernel cannot drop.
    pub anon: u64,
    /// File-backed pages, page cache included (v1 `total_cache`, v2 `file`): what it drops
    /// or writes back when memory is short.
    pub file: u64,
}

/// One launch's control group. Dropping it kills what is left in it and removes it.
#[derive(Debug)]
pub struct Cgroup {
    version: Version,
    /// Its memory limit, in bytes.
    limit: Option<u64>,
    /// The memory group (v2: the one group).
    memory: PathBuf,
    /// The CPU accounting group (v2: the same as `memory`).
    cpu: PathBuf,
}

impl Cgroup {
    /// Creates the group `name` (fresh: an old one of that name is removed first) with the
    /// memory limit `limit` in bytes (`None`: unlimited) and swap off for it.
    ///
    /// # Errors
    /// If the group cannot be made (not root, no cgroup mount) or the limit not set.
    pub fn create(name: &str, limit: Option<u64>) -> anyhow::Result<Self> {
        let version = version();
        let (memory, cpu) = match version {
            Version::V1 => (
                Path::new(ROOT).join("memory").join(PARENT).join(name),
                Path::new(ROOT).join("cpuacct").join(PARENT).join(name),
            ),
            Version::V2 => {
                let group = Path::new(ROOT).join(PARENT).join(name);
                (group.clone(), group)
            }
        };
        if version == Version::V2 {
            let parent = Path::new(ROOT).join(PARENT);
            std::fs::create_dir_all(&parent)?;
            // The parent hands the memory and cpu controllers down to its children.
            let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+memory +cpu");
        }
        let group = Self {
            version,
            limit,
            memory,
            cpu,
        };
        group.remove();
        for dir in [&group.memory, &group.cpu] {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the cgroup {}", dir.display()))?;
        }
        if let Some(limit) = limit {
            group.set_limit(limit)?;
        }
        Ok(group)
    }

    fn write(&self, dir: &Path, file: &str, value: &str) -> anyhow::Result<()> {
        let path = dir.join(file);
        std::fs::write(&path, value)
            .with_context(|| format!("writing {value} to {}", path.display()))
    }

    fn read(&self, dir: &Path, file: &str) -> anyhow::Result<String> {
        let path = dir.join(file);
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    }

    fn read_u64(&self, dir: &Path, file: &str) -> anyhow::Result<u64> {
        let text = self.read(dir, file)?;
        text.trim()
            .parse()
            .with_context(|| format!("{file} {text:?} is not a number"))
    }

    /// Sets the memory limit to `bytes`, swap included (no swap).
    fn set_limit(&self, bytes: u64) -> anyhow::Result<()> {
        match self.version {
            Version::V1 => {
                self.write(&self.memory, "memory.limit_in_bytes", &bytes.to_string())?;
                // memsw (memory + swap) exists only where swap accounting is on.
                if self.memory.join("memory.memsw.limit_in_bytes").exists() {
                    self.write(
                        &self.memory,
                        "memory.memsw.limit_in_bytes",
                        &bytes.to_string(),
                    )?;
                }
                self.write(&self.memory, "memory.swappiness", "0")
            }
            Version::V2 => {
                self.write(&self.memory, "memory.max", &bytes.to_string())?;
                if self.memory.join("memory.swap.max").exists() {
                    self.write(&self.memory, "memory.swap.max", "0")?;
                }
                Ok(())
            }
        }
    }

    /// Its memory limit, in bytes (`None`: unlimited).
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// `program args…` started inside this group (see the module docs).
    pub fn command(&self, program: &Path) -> Command {
        let mut procs = vec![self.memory.join("cgroup.procs")];
        if self.cpu != self.memory {
            procs.push(self.cpu.join("cgroup.procs"));
        }
        let joins: Vec<String> = procs
            .iter()
            .map(|p| format!("echo $$ > '{}'", p.display()))
            .collect();
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("{} && exec \"$0\" \"$@\"", joins.join(" && ")))
            .arg(program);
        command
    }

    /// What is charged to the group now.
    ///
    /// # Errors
    /// If the group's files cannot be read.
    pub fn charged(&self) -> anyhow::Result<Charged> {
        let stat = self.read(&self.memory, "memory.stat")?;
        let usage = match self.version {
            Version::V1 => self.read_u64(&self.memory, "memory.usage_in_bytes")?,
            Version::V2 => self.read_u64(&self.memory, "memory.current")?,
        };
        let (anon, file) = parse_memory_stat(&stat, self.version == Version::V1)?;
        Ok(Charged { usage, anon, file })
    }

    /// The most that was ever charged to the group, in bytes.
    ///
    /// # Errors
    /// If the group's files cannot be read (v2 kernels before 5.19 have no `memory.peak`).
    pub fn peak(&self) -> anyhow::Result<u64> {
        match self.version {
            Version::V1 => self.read_u64(&self.memory, "memory.max_usage_in_bytes"),
            Version::V2 => self.read_u64(&self.memory, "memory.peak"),
        }
    }

    /// Processes the kernel's OOM killer killed inside the group.
    ///
    /// # Errors
    /// If the group's files cannot be read.
    pub fn oom_kills(&self) -> anyhow::Result<u64> {
        let file = match self.version {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        let text = self.read(&self.memory, file)?;
        field(&text, "oom_kill").with_context(|| format!("no oom_kill in {file}"))
    }

    /// CPU time the group's processes used so far, in nanoseconds.
    ///
    /// # Errors
    /// If the group's files cannot be read.
    pub fn cpu_ns(&self) -> anyhow::Result<u64> {
        match self.version {
            Version::V1 => self.read_u64(&self.cpu, "cpuacct.usage"),
            Version::V2 => {
                let text = self.read(&self.cpu, "cpu.stat")?;
                let micros = field(&text, "usage_usec").context("no usage_usec in cpu.stat")?;
                Ok(micros * 1000)
            }
        }
    }

    /// The processes in the group now.
    pub fn pids(&self) -> Vec<u32> {
        self.read(&self.memory, "cgroup.procs")
            .map(|text| text.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Kills what is left in the group and removes it (its directories).
    fn remove(&self) {
        for _ in 0..50 {
            let pids = self.pids();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .arg(pid.to_string())
                    .status();
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        for dir in [&self.memory, &self.cpu] {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The value of `name` in a `key value` text (`memory.stat`, `memory.oom_control`, …).
fn field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok()).flatten()
    })
}

/// Anonymous and file-backed bytes of a `memory.stat` text: v1's hierarchical `total_rss`
/// (+ `total_rss_huge`'s share is already in it) and `total_cache`, or v2's `anon` and `file`.
///
/// # Errors
/// If a field is missing.
fn parse_memory_stat(text: &str, v1: bool) -> anyhow::Result<(u64, u64)> {
    let (anon, file) = if v1 {
        ("total_rss", "total_cache")
    } else {
        ("anon", "file")
    };
    let get = |name: &str| field(text, name).with_context(|| format!("no {name} in memory.stat"));
    Ok((get(anon)?, get(file)?))
}

/// Fails unless this process may make cgroups with a memory limit (root, a writable cgroup
/// mount): the budget workload cannot run otherwise.
///
/// # Errors
/// Saying why.
pub fn check_available() -> anyhow::Result<()> {
    let probe = Cgroup::create("probe", Some(64 << 20)).context("making a probe cgroup")?;
    let limit = match probe.version {
        Version::V1 => probe.read_u64(&probe.memory, "memory.limit_in_bytes")?,
        Version::V2 => probe.read_u64(&probe.memory, "memory.max")?,
    };
    if limit != 64 << 20 {
        bail!("the probe cgroup's memory limit reads {limit}, not 64 MiB");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_stat_splits_anonymous_and_file_backed() {
        let v1 =
            "cache 100\nrss 20\nrss_huge 0\ntotal_cache 4096\ntotal_rss 8192\ntotal_rss_huge 0\n";
        assert_eq!(parse_memory_stat(v1, true).expect("v1"), (8192, 4096));
        let v2 = "anon 12288\nfile 8192\nkernel 100\n";
        assert_eq!(parse_memory_stat(v2, false).expect("v2"), (12288, 8192));
        assert!(parse_memory_stat("rss 1\n", true).is_err());
    }

    #[test]
    fn oom_kills_and_cpu_fields() {
        let oom = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(field(oom, "oom_kill"), Some(3));
        assert_eq!(field(oom, "oom"), None);
        let cpu = "usage_usec 1500\nuser_usec 1000\n";
        assert_eq!(field(cpu, "usage_usec"), Some(1500));
    }
}
