//! The apiserver's audit log (`KUBE_WASM_AUDIT_LOG`: JSON lines, one event per stage of a
//! request), read three ways: whole ([`audited_requests`]), between two [`Mark`]s
//! ([`read_between`]), or incrementally ([`Tail`]). Events are grouped by request (their
//! `auditID`) with [`ByRequest`].
//!
//! A log that cannot be read is an error (or, in [`audited_requests`], a panic), never an
//! empty log: a request count of 0 must mean that no request was made.
//!
//! kube-apiserver rotates its audit log (at 100 MB by default): the file is renamed to
//! `<name>-<timestamp>.<ext>` beside it and a new one started. A [`Mark`] names the file by
//! its inode, so lines after a mark are found in the rotated file too.

use crate::env_path;
use anyhow::Context as _;
use serde_json::Value;
use std::collections::HashMap;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// A point in the audit log: the file (its inode) and its size in bytes then.
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

/// Bytes `from..to` of the file at `path` (`to` `None`: to its end).
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

/// The text appended to the audit log at `path` between `from` and `to`. Follows a rotation
/// between the marks: the lines from `from` to the end of the rotated file, then the new file
/// up to `to` (far less than the 100 MB between two rotations is written meanwhile). The last
/// line may be torn (written up to `to` only).
///
/// # Errors
/// If a file cannot be read or the rotated file is gone.
pub fn read_between(path: &Path, from: Mark, to: Mark) -> anyhow::Result<String> {
    if from.inode == to.inode {
        return read_range(path, from.len, Some(to.len));
    }
    let earlier = file_with_inode(path, from.inode)?;
    let mut text = read_range(&earlier, from.len, None)?;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&read_range(path, 0, Some(to.len))?);
    Ok(text)
}

/// Reads the audit log incrementally: each [`Tail::lines`] returns the whole lines appended
/// since the previous call (a torn last line waits for its end), across rotations.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    at: Mark,
    partial: String,
}

impl Tail {
    /// Starts at the current end of the log at `path`: earlier lines are not returned.
    ///
    /// # Errors
    /// If the file cannot be read.
    pub fn at_end(path: PathBuf) -> anyhow::Result<Tail> {
        let at = mark(&path)?;
        Ok(Tail {
            path,
            at,
            partial: String::new(),
        })
    }

    /// The whole lines appended since the last call, in order.
    ///
    /// # Errors
    /// If the log cannot be read (see [`read_between`]).
    pub fn lines(&mut self) -> anyhow::Result<Vec<String>> {
        let now = mark(&self.path)?;
        let text = read_between(&self.path, self.at, now)?;
        self.at = now;
        let text = std::mem::take(&mut self.partial) + &text;
        let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
        self.partial = lines.pop().unwrap_or_default();
        Ok(lines)
    }
}

impl Tail {
    /// The events (one JSON object per stage of a request) appended since the last call, in
    /// order.
    ///
    /// # Errors
    /// If the log cannot be read, or a whole line is not JSON.
    pub fn events(&mut self) -> anyhow::Result<Vec<Value>> {
        self.lines()?
            .iter()
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_str(line).context("an audit line that is not JSON"))
            .collect()
    }
}

/// Audit events grouped by request (`auditID`), requests in the order first logged.
#[derive(Debug, Clone, Default)]
pub struct ByRequest {
    order: Vec<String>,
    stages: HashMap<String, Vec<Value>>,
}

impl ByRequest {
    /// Adds one event (one stage of a request) to its request.
    pub fn push(&mut self, event: Value) {
        let id = event["auditID"].as_str().unwrap_or_default().to_string();
        let stages = self.stages.entry(id.clone()).or_default();
        if stages.is_empty() {
            self.order.push(id);
        }
        stages.push(event);
    }

    /// The number of requests.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether there is no request.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The number of events (all stages of all requests).
    pub fn events(&self) -> usize {
        self.stages.values().map(Vec::len).sum()
    }

    /// Each request's events (its stages, in log order; never empty), requests in order.
    pub fn requests(&self) -> impl Iterator<Item = &[Value]> {
        self.order
            .iter()
            .filter_map(|id| self.stages.get(id))
            .map(Vec::as_slice)
    }
}

/// One request of the apiserver's audit log.
#[derive(Debug, Clone)]
pub struct AuditedRequest {
    /// `auditID`.
    pub id: String,
    /// `verb`: get, list, watch, create, patch, …
    pub verb: String,
    /// `requestURI`: the path and query as the apiserver received them.
    pub uri: String,
    /// The stages logged for it: RequestReceived, ResponseStarted, ResponseComplete, Panic.
    pub stages: Vec<String>,
    /// `user.username`: who authenticated.
    pub user: String,
    /// `impersonatedUser.username`: who the request acted as, if impersonated (known from
    /// the ResponseStarted/ResponseComplete stages on).
    pub impersonated_user: Option<String>,
    /// `userAgent` (empty if the client sent none).
    pub user_agent: String,
    /// `requestReceivedTimestamp` (RFC 3339, microseconds).
    pub received: String,
}

impl AuditedRequest {
    /// The host replica that sent it: the name in the `(replica <name>)` its User-Agent ends
    /// with; `None` for a request of anything but a replica.
    pub fn replica(&self) -> Option<&str> {
        self.user_agent
            .split("(replica ")
            .nth(1)
            .and_then(|rest| rest.strip_suffix(')'))
    }

    /// When the API server received it, in microseconds since 1970; `None` if the log's
    /// timestamp does not parse.
    pub fn received_us(&self) -> Option<u128> {
        let at: k8s_openapi::jiff::Timestamp = self.received.parse().ok()?;
        u128::try_from(at.as_microsecond()).ok()
    }
}

/// The requests on `resource` in `namespace` that the audit log (`KUBE_WASM_AUDIT_LOG`)
/// records, in order.
///
/// # Panics
/// If the audit log cannot be read.
pub fn audited_requests(resource: &str, namespace: &str) -> Vec<AuditedRequest> {
    audited_requests_in(&env_path("KUBE_WASM_AUDIT_LOG"), resource, namespace)
}

/// The requests on `resource` in `namespace` that the audit log at `path` records, in order.
///
/// # Panics
/// If the audit log cannot be read.
pub fn audited_requests_in(path: &Path, resource: &str, namespace: &str) -> Vec<AuditedRequest> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the audit log {} cannot be read: {e}", path.display()));
    let mut grouped = ByRequest::default();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let obj = &event["objectRef"];
        if obj["resource"] == resource && obj["namespace"] == namespace {
            grouped.push(event);
        }
    }
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    grouped
        .requests()
        .map(|stages| AuditedRequest {
            id: text(&stages[0]["auditID"]),
            verb: text(&stages[0]["verb"]),
            uri: text(&stages[0]["requestURI"]),
            stages: stages.iter().map(|s| text(&s["stage"])).collect(),
            user: text(&stages[0]["user"]["username"]),
            // The apiserver records `impersonatedUser` once impersonation ran: not in the
            // RequestReceived stage, in the later ones.
            impersonated_user: stages
                .iter()
                .find_map(|s| s["impersonatedUser"]["username"].as_str())
                .map(str::to_string),
            user_agent: text(&stages[0]["userAgent"]),
            received: text(&stages[0]["requestReceivedTimestamp"]),
        })
        .collect()
}
