//! The CPU time processes used, from `/proc/<pid>/stat` (user + system, the process and its
//! threads).

use std::time::Duration;

use anyhow::Context as _;

/// Clock ticks per second of `/proc/<pid>/stat`'s times (Linux's `USER_HZ`, 100 on every
/// architecture it supports for user space).
const USER_HZ: u64 = 100;

/// The user + system time in `stat`, the text of a `/proc/<pid>/stat`.
///
/// # Errors
/// If the text is not a `stat` line.
pub fn parse_stat(stat: &str) -> anyhow::Result<Duration> {
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let (_, rest) = stat.rsplit_once(')').context("no command name in stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 (utime) and 15 (stime) are the 12th and 13th after the name.
    let ticks = |i: usize| -> anyhow::Result<u64> {
        fields
            .get(i)
            .context("a short stat line")?
            .parse::<u64>()
            .context("a stat time that is not a number")
    };
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_millis(total * 1000 / USER_HZ))
}

/// The CPU time `pids` used so far, together.
///
/// # Errors
/// If a process's `stat` cannot be read.
pub fn of_processes(pids: &[u32]) -> anyhow::Result<Duration> {
    pids.iter().try_fold(Duration::ZERO, |sum, pid| {
        let path = format!("/proc/{pid}/stat");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        Ok(sum + parse_stat(&text)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_and_system_ticks() {
        let stat = "4242 (host shim) S 1 4242 4242 0 -1 4194560 9046 0 0 0 150 37 0 0 20 0 7 0 \
                    123 161 2 18446744073709551615";
        assert_eq!(parse_stat(stat).expect("stat"), Duration::from_millis(1870));
        assert!(parse_stat("garbage").is_err());
        assert!(parse_stat("1 (x) S 1").is_err());
    }

    #[test]
    fn this_process_has_used_some() {
        let mine = of_processes(&[std::process::id()]).expect("own stat");
        assert!(of_processes(&[std::process::id(), std::process::id()]).expect("twice") >= mine);
    }
}
