//! Upstream requests from the apiserver's audit log (`KUBE_WASM_AUDIT_LOG`, JSON lines): the
//! requests of one launch are the lines appended between two [`Mark`]s, less the driver's
//! own (recognised by its `User-Agent`, [`DRIVER_USER_AGENT`]).

use std::collections::{BTreeMap, HashSet};
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

/// The `User-Agent` of the driver's own requests, left out of the counts.
pub const DRIVER_USER_AGENT: &str = "kube-wasm-bench-driver";

/// A point in the audit log: the file (its inode) and its size in bytes then.
///
/// kube-apiserver rotates its audit log (at 100 MB by default): the file is renamed to
/// `<name>-<timestamp>.<ext>` beside it and a new one started, so a launch's lines may begin
/// in a rotated file; the inode finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    inode: u64,
    len: u64,
}

/// Where the audit log at `path` ends now.
///
/// # Errors
/// If the file cannot be read.
pub fn mark(path: &Path) -> anyhow::Result<Mark> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Mark {
        inode: meta.ino(),
        len: meta.len(),
    })
}

/// The file in `path`'s folder whose inode is `inode` (the log itself or a rotated one).
fn file_with_inode(path: &Path, inode: u64) -> anyhow::Result<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry?;
        if entry.metadata().is_ok_and(|m| m.ino() == inode) {
            return Ok(entry.path());
        }
    }
    anyhow::bail!(
        "the audit log {} was rotated and its earlier file is gone",
        path.display()
    )
}

fn read_range(path: &Path, from: u64, to: Option<u64>) -> anyhow::Result<String> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    match to {
        Some(to) => file.take(to.saturating_sub(from)).read_to_end(&mut bytes),
        None => file.read_to_end(&mut bytes),
    }
    .with_context(|| format!("reading {}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The requests the controllers made: counted once per audit ID, by verb.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Requests {
    /// Requests per verb (`get`, `list`, `watch`, `patch`, `create`, …).
    pub by_verb: BTreeMap<String, u64>,
    /// All requests.
    pub total: u64,
}

impl Requests {
    /// The count of one verb.
    pub fn verb(&self, verb: &str) -> u64 {
        self.by_verb.get(verb).copied().unwrap_or(0)
    }
}

/// Counts the requests in the audit log at `path` between `from` and `to`, leaving out the
/// driver's and the control plane's. Follows a rotation between the marks: the lines from
/// `from` to the end of the rotated file, then the new file up to `to` (one launch writes
/// far less than the 100 MB between two rotations).
///
/// # Errors
/// If a file cannot be read or the rotated file is gone.
pub fn requests_between(path: &Path, from: Mark, to: Mark) -> anyhow::Result<Requests> {
    if from.inode == to.inode {
        return Ok(count(&read_range(path, from.len, Some(to.len))?));
    }
    let earlier = file_with_inode(path, from.inode)?;
    let mut text = read_range(&earlier, from.len, None)?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&read_range(path, 0, Some(to.len))?);
    Ok(count(&text))
}

/// Counts the requests in audit log `text` (whole lines; a torn last line is skipped).
pub fn count(text: &str) -> Requests {
    let mut seen = HashSet::new();
    let mut requests = Requests::default();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if event["userAgent"].as_str() == Some(DRIVER_USER_AGENT) {
            continue;
        }
        let user = event["user"]["username"].as_str().unwrap_or_default();
        if user.starts_with("system:") && !user.starts_with("system:serviceaccount:") {
            continue;
        }
        let Some(id) = event["auditID"].as_str() else {
            continue;
        };
        if !seen.insert(id.to_owned()) {
            continue;
        }
        let verb = event["verb"].as_str().unwrap_or("unknown").to_owned();
        *requests.by_verb.entry(verb).or_default() += 1;
        requests.total += 1;
    }
    requests
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_request_once_without_the_driver() {
        let text = [
            r#"{"auditID":"a","stage":"RequestReceived","verb":"watch","userAgent":""}"#,
            r#"{"auditID":"a","stage":"ResponseComplete","verb":"watch"}"#,
            r#"{"auditID":"b","stage":"RequestReceived","verb":"list"}"#,
            r#"{"auditID":"c","stage":"RequestReceived","verb":"patch","userAgent":"kube-wasm-bench-driver"}"#,
            r#"{"auditID":"d","stage":"RequestReceived","verb":"patch","user":{"username":"admin"}}"#,
            r#"{"auditID":"f","stage":"RequestReceived","verb":"get","user":{"username":"system:apiserver"}}"#,
            r#"{"auditID":"e","stage":"Requ"#,
        ]
        .join("\n");
        let requests = count(&text);
        assert_eq!(requests.total, 3);
        assert_eq!(
            (
                requests.verb("watch"),
                requests.verb("list"),
                requests.verb("patch")
            ),
            (1, 1, 1)
        );
    }

    #[test]
    fn follows_a_rotation_between_marks() {
        let dir =
            std::env::temp_dir().join(format!("kube-wasm-bench-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let log = dir.join("audit.log");
        let line = |id: &str| format!("{{\"auditID\":\"{id}\",\"verb\":\"get\"}}\n");
        std::fs::write(&log, line("before")).expect("write");
        let from = mark(&log).expect("mark");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line("a").as_bytes()))
            .expect("append");
        std::fs::rename(&log, dir.join("audit-2026-01-01T00-00-00.000.log")).expect("rotate");
        std::fs::write(&log, line("b") + &line("c")).expect("write");
        let to = mark(&log).expect("mark");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line("after").as_bytes()))
            .expect("append");
        let requests = requests_between(&log, from, to).expect("counted");
        assert_eq!(requests.total, 3, "a, b and c: {requests:?}");
        let same = requests_between(&log, to, mark(&log).expect("mark")).expect("counted");
        assert_eq!(same.total, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
