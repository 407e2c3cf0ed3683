//! Drives guest futures on the fake host and answers their ops from a script.

use kube_wasm_abi::{Completion, ErrorCode, HttpRequest, OpError};
use kube_wasm_client::Client;
use kube_wasm_guest::fake::{FakeHost, Submitted};
use std::future::Future;

/// A fresh fake host and a client with default namespace `default`.
pub fn setup() -> (TestHost, Client) {
    (TestHost(FakeHost::install()), Client::for_host("default"))
}

/// The fake host of one test. When the test ends it drops the tasks still pending (e.g. an
/// endless watch) while the thread's locals are alive: left to thread exit, their ops would
/// be dropped during thread-local destruction, which the guest crate cannot handle yet.
pub struct TestHost(FakeHost);

impl std::ops::Deref for TestHost {
    type Target = FakeHost;

    fn deref(&self) -> &FakeHost {
        &self.0
    }
}

impl Drop for TestHost {
    fn drop(&mut self) {
        FakeHost::install();
    }
}

/// The completions the host sends for one op.
pub type Answer = Vec<(Completion, Vec<u8>)>;

/// A whole `response` with `status` and `body`.
pub fn response(status: u16, body: impl AsRef<[u8]>) -> Answer {
    vec![(
        Completion::Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
        },
        body.as_ref().to_vec(),
    )]
}

/// A `200` response whose body is `value` as JSON.
pub fn ok_json(value: serde_json::Value) -> Answer {
    response(200, value.to_string())
}

/// An `error` completion with `code`.
pub fn host_error(code: ErrorCode) -> Answer {
    vec![(
        Completion::Error(OpError::new(code, format!("{code} from the fake host"))),
        Vec::new(),
    )]
}

/// A Kubernetes `Status` body of a failure.
pub fn status_body(code: u16, reason: &str, message: &str) -> String {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    })
    .to_string()
}

/// An HTTP request as the guest submitted it.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The envelope header.
    pub request: HttpRequest,
    /// The raw body.
    pub body: Vec<u8>,
}

impl Sent {
    /// The value of header `name`, if the request set it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.request
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// Runs `future` as a guest task until it finishes, answering every HTTP op it submits,
/// in order, with `answer`. Returns its output and the requests it sent.
///
/// # Panics
/// If the task stalls without submitting anything, or submits something other than an
/// HTTP request.
pub fn run<T: 'static>(
    host: &FakeHost,
    future: impl Future<Output = T> + 'static,
    mut answer: impl FnMut(&Sent) -> Answer,
) -> (T, Vec<Sent>) {
    let mut task = host.spawn(future);
    let mut sent = Vec::new();
    for _ in 0..100 {
        host.run_until_stalled();
        if let Some(output) = task.output() {
            return (output, sent);
        }
        let submitted = host.take_submitted();
        assert!(
            !submitted.is_empty(),
            "the task stalled without submitting an op"
        );
        for op in submitted {
            let Submitted::Http { id, request, body } = op else {
                panic!("expected an HTTP request, got {op:?}");
            };
            let request = Sent { request, body };
            for (completion, body) in answer(&request) {
                host.complete(id, &completion, &body);
            }
            sent.push(request);
        }
    }
    panic!("the task did not finish after 100 rounds");
}

/// Runs `future`, answering its single HTTP request with `answer`; returns the output and
/// that request.
pub fn run_one<T: 'static>(
    host: &FakeHost,
    future: impl Future<Output = T> + 'static,
    answer: Answer,
) -> (T, Sent) {
    let (output, mut sent) = run(host, future, |_| answer.clone());
    assert_eq!(sent.len(), 1, "expected exactly one request: {sent:?}");
    (output, sent.remove(0))
}
