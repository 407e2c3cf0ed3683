//! Drives a runtime stream on the fake host, op by op, and builds the host's answers.

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime_wasm::watcher::{Error, Event};
use kube_wasm_abi::{Completion, ErrorCode, HttpRequest, OpError, OpId, WatchRequest};
use kube_wasm_client::{Api, Client, ResourceExt};
use kube_wasm_guest::fake::{FakeHost, Submitted, TestTask};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// Host timers at least this long are the watcher's idle limit (290 s + 5 s by default),
/// not backoffs.
const IDLE_TIMER_MILLIS: u64 = 290_000;

/// A test's fake host and the task consuming the stream under test. Dropping it installs a
/// fresh fake host, so pending ops are dropped while the thread's locals are alive.
pub struct Driver {
    pub host: FakeHost,
    log: Rc<RefCell<Vec<String>>>,
    queue: VecDeque<Submitted>,
    /// Idle-limit timers the watcher started, oldest first.
    pub idle_timers: Vec<OpId>,
    _task: TestTask<()>,
}

impl Drop for Driver {
    fn drop(&mut self) {
        FakeHost::install();
    }
}

/// A fresh fake host and a client for it (default namespace `default`).
pub fn setup() -> (FakeHost, Client) {
    (FakeHost::install(), Client::for_host("default"))
}

/// An `Api<ConfigMap>` in namespace `default`.
pub fn configmaps(client: Client) -> Api<ConfigMap> {
    Api::namespaced(client, "default")
}

impl Driver {
    /// Spawns a task that logs every item of `stream` with `describe`.
    pub fn start<S>(host: FakeHost, stream: S, describe: fn(&S::Item) -> String) -> Self
    where
        S: Stream + 'static,
    {
        let log = Rc::new(RefCell::new(Vec::new()));
        let seen = log.clone();
        let task = host.spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(item) = stream.next().await {
                seen.borrow_mut().push(describe(&item));
            }
            seen.borrow_mut().push("END".to_string());
        });
        let mut driver = Self {
            host,
            log,
            queue: VecDeque::new(),
            idle_timers: Vec::new(),
            _task: task,
        };
        driver.pump();
        driver
    }

    /// Runs the guest until stalled and queues what it submitted (idle timers aside).
    pub fn pump(&mut self) {
        self.host.run_until_stalled();
        for op in self.host.take_submitted() {
            match op {
                Submitted::Delay { id, millis } if millis >= IDLE_TIMER_MILLIS => {
                    self.idle_timers.push(id);
                }
                other => self.queue.push_back(other),
            }
        }
    }

    /// The next op the guest submitted (not an idle timer).
    pub fn next_op(&mut self) -> Submitted {
        self.pump();
        self.queue
            .pop_front()
            .unwrap_or_else(|| panic!("no op submitted; log: {:?}", self.log.borrow()))
    }

    /// Whether the guest has submitted nothing (but idle timers) that is unanswered.
    pub fn nothing_pending(&mut self) -> bool {
        self.pump();
        self.queue.is_empty()
    }

    /// The next op, which must be a LIST (`GET`); returns its id and URI.
    pub fn expect_list(&mut self) -> (OpId, String) {
        match self.next_op() {
            Submitted::Http { id, request, .. } if request.method == "GET" => (id, request.uri),
            other => panic!("expected a LIST, got {other:?}"),
        }
    }

    /// The next op, which must be an HTTP request with `method`; returns its id, envelope
    /// and body (as JSON, `Null` when empty).
    pub fn expect_http(&mut self, method: &str) -> (OpId, HttpRequest, Value) {
        match self.next_op() {
            Submitted::Http { id, request, body } if request.method == method => {
                let body = if body.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&body).expect("a JSON body")
                };
                (id, request, body)
            }
            other => panic!("expected a {method}, got {other:?}"),
        }
    }

    /// The next op, which must be a watch; returns its id and envelope.
    pub fn expect_watch(&mut self) -> (OpId, WatchRequest) {
        match self.next_op() {
            Submitted::Watch { id, request } => (id, request),
            other => panic!("expected a watch, got {other:?}"),
        }
    }

    /// The next op, which must be a (backoff) delay; returns its id and milliseconds.
    pub fn expect_delay(&mut self) -> (OpId, u64) {
        match self.next_op() {
            Submitted::Delay { id, millis } => (id, millis),
            other => panic!("expected a delay, got {other:?}"),
        }
    }

    /// Answers op `id` with a whole response.
    pub fn respond(&mut self, id: OpId, status: u16, body: &Value) {
        let completion = Completion::Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
        };
        self.host
            .complete(id, &completion, body.to_string().as_bytes());
        self.pump();
    }

    /// Establishes watch `id` (its `head`).
    pub fn establish(&mut self, id: OpId) {
        let head = Completion::Head {
            status: 200,
            headers: vec![],
        };
        self.host.complete(id, &head, b"");
        self.pump();
    }

    /// Delivers one watch event on `id`.
    pub fn event(&mut self, id: OpId, event: &Value) {
        self.host
            .complete(id, &Completion::WatchEvent {}, event.to_string().as_bytes());
        self.pump();
    }

    /// Ends watch `id` as the server does at its timeout.
    pub fn end(&mut self, id: OpId) {
        self.host.complete(id, &Completion::End {}, b"");
        self.pump();
    }

    /// Fails op `id` with the host error `code`.
    pub fn fail(&mut self, id: OpId, code: ErrorCode) {
        let error = Completion::Error(OpError::new(code, format!("{code} from the fake host")));
        self.host.complete(id, &error, b"");
        self.pump();
    }

    /// Fires timer `id`.
    pub fn elapse(&mut self, id: OpId) {
        self.host.complete(id, &Completion::Elapsed {}, b"");
        self.pump();
    }

    /// The items logged since the last call.
    pub fn take_log(&mut self) -> Vec<String> {
        self.pump();
        self.log.borrow_mut().drain(..).collect()
    }
}

/// The value of header `name` (case-insensitive) of `request`.
pub fn header<'a>(request: &'a HttpRequest, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A config map `name` at resourceVersion `rv`, as JSON.
pub fn cm(name: &str, rv: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default", "resourceVersion": rv}})
}

/// A LIST page of config maps.
pub fn page(items: &[Value], rv: &str, continue_token: Option<&str>) -> Value {
    let mut metadata = json!({"resourceVersion": rv});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": metadata, "items": items})
}

/// A watch event of `kind` for `object`.
pub fn watch_event(kind: &str, object: Value) -> Value {
    json!({"type": kind, "object": object})
}

/// A `BOOKMARK` at `rv`.
pub fn bookmark(rv: &str) -> Value {
    json!({"type": "BOOKMARK", "object": {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"resourceVersion": rv}}})
}

/// A `Status` of a failure.
pub fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("{reason} ({code})"), "reason": reason, "code": code})
}

/// An `ERROR` watch event carrying `status(code, reason)`.
pub fn error_event(code: u16, reason: &str) -> Value {
    watch_event("ERROR", status(code, reason))
}

/// One line per watcher item: the event's `Display`, or the error's variant and details.
pub fn describe(item: &Result<Event<ConfigMap>, Error>) -> String {
    match item {
        Ok(event) => event.to_string(),
        Err(err) => describe_error(err),
    }
}

/// An error as `Err Variant[ code]`.
pub fn describe_error(err: &Error) -> String {
    let client = |e: &kube_wasm_client::Error| match e {
        kube_wasm_client::Error::Api(s) => format!("Api {}", s.code),
        kube_wasm_client::Error::ReadEvents(_) => "ReadEvents".to_string(),
        other => format!("{other}"),
    };
    match err {
        Error::InitialListFailed(e) => format!("Err InitialListFailed {}", client(e)),
        Error::WatchStartFailed(e) => format!("Err WatchStartFailed {}", client(e)),
        Error::WatchError(s) => format!("Err WatchError {}", s.code),
        Error::WatchFailed(e) => format!("Err WatchFailed {}", client(e)),
        Error::NoResourceVersion => "Err NoResourceVersion".to_string(),
    }
}

/// One line per object item: `name@rv` or the error.
pub fn describe_object(item: &Result<ConfigMap, Error>) -> String {
    match item {
        Ok(obj) => format!(
            "{}@{}",
            obj.name_any(),
            obj.resource_version().unwrap_or_default()
        ),
        Err(err) => describe_error(err),
    }
}

/// Spawns a task on `host` (not run yet) that logs every item of `stream` with `describe`,
/// then `END`; returns the log. For streams that run beside a [`Driver`]'s.
pub fn spawn_logged<S>(
    host: &FakeHost,
    stream: S,
    describe: impl Fn(&S::Item) -> String + 'static,
) -> Rc<RefCell<Vec<String>>>
where
    S: Stream + 'static,
{
    let log = Rc::new(RefCell::new(Vec::new()));
    let seen = log.clone();
    // Detached: it runs until the stream ends or the fake host is replaced.
    let _task = host.spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            seen.borrow_mut().push(describe(&item));
        }
        seen.borrow_mut().push("END".to_string());
    });
    log
}

/// Takes the lines of `log`, sorted.
pub fn take_sorted(log: &Rc<RefCell<Vec<String>>>) -> Vec<String> {
    let mut lines: Vec<String> = log.borrow_mut().drain(..).collect();
    lines.sort();
    lines
}
