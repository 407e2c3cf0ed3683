//! Memory of processes from `/proc`: proportional set size (PSS: each shared page counted
//! once across the processes sharing it, so the PSS of many processes adds up to what they
//! use together) and resident set size, in KiB.

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// The memory of a group of processes at one moment.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Sample {
    /// Sum of `Pss:` of `/proc/PID/smaps_rollup`, in KiB.
    pub pss_kib: u64,
    /// Sum of `Rss:` of `/proc/PID/smaps_rollup`, in KiB (shared pages counted per process).
    pub rss_kib: u64,
    /// Sum of `Pss_Anon:`, in KiB: the anonymous part of the PSS, which the kernel cannot
    /// drop without swap (the rest is file-backed: text, mapped compiled code, a module's
    /// copy-on-write memory image). 0 in reports written before it was measured.
    #[serde(default)]
    pub pss_anon_kib: u64,
}

/// The median of `samples`, field by field (0 for none).
pub fn median(samples: &[Sample]) -> Sample {
    let pss: Vec<f64> = samples.iter().map(|s| s.pss_kib as f64).collect();
    let rss: Vec<f64> = samples.iter().map(|s| s.rss_kib as f64).collect();
    let anon: Vec<f64> = samples.iter().map(|s| s.pss_anon_kib as f64).collect();
    Sample {
        pss_kib: crate::stats::median(&pss).unwrap_or_default() as u64,
        rss_kib: crate::stats::median(&rss).unwrap_or_default() as u64,
        pss_anon_kib: crate::stats::median(&anon).unwrap_or_default() as u64,
    }
}

/// Reads the `Pss:`, `Rss:` and `Pss_Anon:` lines (kB) of a `smaps_rollup` text.
///
/// # Errors
/// If a line is missing or not a number.
pub fn parse_smaps_rollup(text: &str) -> anyhow::Result<Sample> {
    let field = |name: &str| -> anyhow::Result<u64> {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .with_context(|| format!("no {name} line"))?;
        line.trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .with_context(|| format!("{name} {line:?} is not a number of kB"))
    };
    Ok(Sample {
        pss_kib: field("Pss:")?,
        rss_kib: field("Rss:")?,
        pss_anon_kib: field("Pss_Anon:")?,
    })
}

/// The memory of process `pid`.
///
/// # Errors
/// If the process is gone or `/proc/PID/smaps_rollup` cannot be read or parsed.
pub fn of_process(pid: u32) -> anyhow::Result<Sample> {
    let path = format!("/proc/{pid}/smaps_rollup");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    parse_smaps_rollup(&text).with_context(|| format!("parsing {path}"))
}

/// The summed memory of `pids`.
///
/// # Errors
/// If any of them cannot be read (a process that died makes the sample meaningless).
pub fn of_processes(pids: &[u32]) -> anyhow::Result<Sample> {
    let mut total = Sample::default();
    for &pid in pids {
        let one = of_process(pid)?;
        total.pss_kib += one.pss_kib;
        total.rss_kib += one.rss_kib;
        total.pss_anon_kib += one.pss_anon_kib;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_smaps_rollup() {
        let text = "55d0c0a00000-7ffd9c3f9000 ---p 00000000 00:00 0 [rollup]\n\
                    Rss:               10240 kB\nPss:                9000 kB\nPss_Anon: 100 kB\n";
        assert_eq!(
            parse_smaps_rollup(text).expect("parses"),
            Sample {
                pss_kib: 9000,
                rss_kib: 10240,
                pss_anon_kib: 100,
            }
        );
        assert!(parse_smaps_rollup("Rss: 1 kB\n").is_err());
    }

    #[test]
    fn reads_this_process() {
        let me = of_process(std::process::id()).expect("own smaps_rollup");
        assert!(me.pss_kib > 0 && me.rss_kib >= me.pss_kib);
        assert!(me.pss_anon_kib > 0 && me.pss_anon_kib <= me.pss_kib);
    }
}
