//! The requests one build sent, read from the apiserver's audit log (with the test kit's
//! [`Tail`]) and projected onto what two correct runs of the same steps share.
//!
//! Only requests on objects in the run's namespace count, and only those sent by the program:
//! the harness impersonates the user [`HARNESS_USER`], so its own requests carry
//! `impersonatedUser` and are left out.

use kube_wasm_e2e::audit::{ByRequest, Tail};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// The user the harness's own requests impersonate.
pub const HARNESS_USER: &str = "parity-harness";

/// Query parameters whose values say nothing stable: replaced by a placeholder.
const OPAQUE_PARAMS: &[&str] = &["continue"];

/// One request of the program: what is compared.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Request {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, …
    pub verb: String,
    /// `<resource>[.<group>][/<subresource>] [<name>]`.
    pub target: String,
    /// Query parameters, sorted, resourceVersions labelled (see [`AuditTail::label_versions`]).
    pub query: String,
    /// The patch body's shape for `patch` (`json-patch`, or the object's keys two levels deep),
    /// empty otherwise. The audit log does not record the Content-Type header.
    pub body: String,
    /// The response code; `watch` has none (its outcome travels in the stream).
    pub code: String,
}

impl Request {
    /// Reads cannot change anything; the harness compares them as a set.
    pub fn is_read(&self) -> bool {
        matches!(self.verb.as_str(), "get" | "list" | "watch")
    }
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb.to_uppercase(), self.target)?;
        if !self.query.is_empty() {
            write!(f, " ?{}", self.query)?;
        }
        if !self.body.is_empty() {
            write!(f, " body {}", self.body)?;
        }
        if !self.code.is_empty() {
            write!(f, " -> {}", self.code)?;
        }
        Ok(())
    }
}

/// Reads the audit log incrementally and keeps the requests of one namespace.
pub struct AuditTail {
    tail: Tail,
    namespace: String,
    requests: ByRequest,
    /// Known resourceVersions and what they are the version of.
    versions: HashMap<String, String>,
}

impl AuditTail {
    /// Starts at the current end of the log: earlier requests are not this run's.
    ///
    /// # Panics
    /// If the log cannot be read: an unread log would show no requests, not no difference.
    pub fn new(path: PathBuf, namespace: &str) -> AuditTail {
        let tail = Tail::at_end(path).unwrap_or_else(|e| panic!("the audit log: {e:#}"));
        AuditTail {
            tail,
            namespace: namespace.to_string(),
            requests: ByRequest::default(),
            versions: HashMap::new(),
        }
    }

    /// Reads what was appended since the last call; returns how many audit events of the
    /// program in this namespace were logged so far (all stages).
    ///
    /// # Panics
    /// If the log cannot be read (see [`AuditTail::new`]).
    pub fn poll(&mut self) -> usize {
        let lines = self
            .tail
            .lines()
            .unwrap_or_else(|e| panic!("the audit log: {e:#}"));
        let needle = format!("\"namespace\":\"{}\"", self.namespace);
        for line in lines.iter().filter(|l| l.contains(&needle)) {
            let Ok(event) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if event["objectRef"]["namespace"] == self.namespace.as_str()
                && event["impersonatedUser"].is_null()
            {
                self.requests.push(event);
            }
        }
        self.requests.events()
    }

    /// Remembers `version` as the resourceVersion of `what` (e.g. `ConfigMap/a`): a request
    /// from that version is then shown as `resourceVersion=<rv of ConfigMap/a>`, any other
    /// non-zero version as `resourceVersion=<rv>`.
    pub fn label_versions(&mut self, version: &str, what: &str) {
        self.versions
            .entry(version.to_string())
            .or_insert_with(|| what.to_string());
    }

    /// The number of requests seen so far.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether no request was seen yet.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// The watches from index `from` on that are still open: the apiserver has not logged
    /// their end (stage `ResponseComplete` or `Panic`). A watch refused or ended at once (e.g.
    /// 410 Gone for a version from before an apiserver restart) is among them only until its
    /// end is logged, moments later. (Stage `ResponseStarted` is no sign of an established
    /// watch: kube-apiserver 1.20 logs it only when the watch ends.)
    pub fn open_watches(&self, from: usize) -> Vec<Request> {
        self.requests
            .requests()
            .skip(from)
            .filter(|stages| {
                let stage = |name: &str| stages.iter().any(|s| s["stage"] == name);
                stages[0]["verb"] == "watch" && !stage("ResponseComplete") && !stage("Panic")
            })
            .map(|stages| self.project(stages))
            .collect()
    }

    /// The projected requests from index `from` on, in the order the apiserver received them.
    pub fn requests(&self, from: usize) -> Vec<Request> {
        self.requests
            .requests()
            .skip(from)
            .map(|stages| self.project(stages))
            .collect()
    }

    fn project(&self, stages: &[Value]) -> Request {
        let first = &stages[0];
        let verb = first["verb"].as_str().unwrap_or_default().to_string();
        let object = &first["objectRef"];
        let mut target = object["resource"].as_str().unwrap_or_default().to_string();
        if let Some(group) = object["apiGroup"].as_str().filter(|g| !g.is_empty()) {
            target = format!("{target}.{group}");
        }
        if let Some(sub) = object["subresource"].as_str() {
            target = format!("{target}/{sub}");
        }
        if let Some(name) = object["name"].as_str() {
            target = format!("{target} {}", stable_name(name));
        }
        let uri = first["requestURI"].as_str().unwrap_or_default();
        let query = uri.split_once('?').map(|(_, q)| q).unwrap_or_default();
        let mut params: BTreeMap<String, String> = BTreeMap::new();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            let value = if OPAQUE_PARAMS.contains(&key.as_ref()) {
                "<token>".to_string()
            } else if key == "resourceVersion" && value != "0" && !value.is_empty() {
                match self.versions.get(value.as_ref()) {
                    Some(what) => format!("<rv of {what}>"),
                    None => "<rv>".to_string(),
                }
            } else {
                value.into_owned()
            };
            params.insert(key.into_owned(), value);
        }
        let query = params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&");
        let body = stages
            .iter()
            .find_map(|s| s.get("requestObject"))
            .filter(|_| verb == "patch")
            .map(shape)
            .unwrap_or_default();
        let code = match verb.as_str() {
            "watch" => String::new(),
            _ => stages
                .iter()
                .find_map(|s| s["responseStatus"]["code"].as_u64())
                .map_or("?".to_string(), |c| c.to_string()),
        };
        Request {
            verb,
            target,
            query,
            body,
            code,
        }
    }
}

/// `name` without a generated suffix: an event recorder names events
/// `<object>.<hex nanoseconds>`, shown as `<object>.<generated>`.
fn stable_name(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((base, suffix))
            if suffix.len() >= 12 && suffix.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            format!("{base}.<generated>")
        }
        _ => name.to_string(),
    }
}

/// A patch body's shape: `json-patch[<op> <path>, …]`, or an object's keys two levels deep
/// (`{metadata{finalizers},status}`); values are left out, they may hold uids and names of
/// the namespace.
pub fn shape(body: &Value) -> String {
    match body {
        Value::Array(ops) => {
            let ops: Vec<String> = ops
                .iter()
                .map(|op| {
                    format!(
                        "{} {}",
                        op["op"].as_str().unwrap_or("?"),
                        op["path"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            format!("json-patch[{}]", ops.join(", "))
        }
        Value::Object(map) => {
            let keys: Vec<String> = map
                .iter()
                .map(|(k, v)| match v {
                    Value::Object(inner) => {
                        let mut inner: Vec<&str> = inner.keys().map(String::as_str).collect();
                        inner.sort_unstable();
                        format!("{k}{{{}}}", inner.join(","))
                    }
                    _ => k.clone(),
                })
                .collect();
            let mut keys = keys;
            keys.sort();
            format!("{{{}}}", keys.join(","))
        }
        _ => "?".to_string(),
    }
}
