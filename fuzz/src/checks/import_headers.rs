//! Every import's frame argument as the host reads it: `http_request`, `watch`, `stream_open`
//! and `stream_send` headers decoded (`decode_frame`) and turned into what the host sends
//! (`build_http_request`, `build_watch_request`, `build_upgrade_request`, `to_message`), then
//! judged as `Access::authorize` judges every request before it leaves the host.
//!
//! Invariants, besides never panicking:
//! - no identity-bearing header of the guest survives (`authorization`, `impersonate-*`, …),
//!   nor, on an upgrade, a handshake header;
//! - what was judged is what is sent: after `authorize`, the request carries the judged URI's
//!   normal form, which reads back to the same URI and classification, and judging it again
//!   changes nothing;
//! - a watch is classified as a watch (or, naming an object, a `get`, or `proxy`);
//! - an allowed upgrade to `pods/exec`, `attach` or `portforward` is also allowed `create`;
//! - a `stream_send` message is the body as sent, and a close reason fits a close frame.

use host_shim::runtime::abi::{build_upgrade_request, to_message};
use host_shim::runtime::{Access, Judged};
use host_shim::upstream::client::{build_http_request, build_watch_request, is_host_only_header};
use host_shim::upstream::permissions::{Permissions, Rule};
use host_shim::upstream::request_info::RequestInfo;
use host_shim::upstream::request_uri::RequestUri;
use kube_wasm_abi::{HttpRequest, StreamOpen, StreamSend, WatchRequest, decode_frame};
use tokio_tungstenite::tungstenite::Message;

/// Headers the host sets itself on a websocket upgrade.
const HANDSHAKE_HEADERS: [&str; 6] = [
    "connection",
    "upgrade",
    "sec-websocket-version",
    "sec-websocket-key",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
];

/// Checks `data` as the argument of each import.
pub fn run(data: &[u8]) {
    if let Ok(frame) = decode_frame::<HttpRequest>(data) {
        http_request(&frame.header, frame.body);
    }
    if let Ok(frame) = decode_frame::<WatchRequest>(data) {
        watch(&frame.header);
    }
    if let Ok(frame) = decode_frame::<StreamOpen>(data) {
        stream_open(&frame.header);
    }
    if let Ok(frame) = decode_frame::<StreamSend>(data) {
        stream_send(frame.header, frame.body);
    }
}

/// The module's access: without permissions (only classification can refuse), and with a
/// few rules.
fn accesses() -> [Access; 2] {
    let rule = |verbs: &[&str], resources: &[&str]| Rule {
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        api_groups: vec![String::new()],
        resources: resources.iter().map(|r| (*r).to_owned()).collect(),
    };
    [
        Access {
            module: "fuzz".into(),
            permissions: None,
        },
        Access {
            module: "fuzz".into(),
            permissions: Some(Permissions {
                rules: vec![
                    rule(&["get", "list", "watch"], &["configmaps", "pods/exec"]),
                    rule(&["*"], &["secrets/status"]),
                ],
            }),
        },
    ]
}

fn http_request(header: &HttpRequest, body: &[u8]) {
    let Ok(request) = build_http_request(header, body.to_vec()) else {
        return;
    };
    assert_eq!(request.method().as_str(), header.method);
    for name in request.headers().keys() {
        assert!(!is_host_only_header(name), "{name} reached the request");
    }
    for access in accesses() {
        let (parts, _) = build_http_request(header, Vec::new())
            .expect("built once")
            .into_parts();
        judged(&access, &mut http::Request::from_parts(parts, ()), false);
    }
}

fn watch(header: &WatchRequest) {
    let Ok(request) = build_watch_request(header) else {
        return;
    };
    assert_eq!(request.uri().path(), header.path, "kube keeps the path");
    for access in accesses() {
        let (parts, _) = build_watch_request(header)
            .expect("built once")
            .into_parts();
        let mut request = http::Request::from_parts(parts, ());
        let Some(judged) = judged(&access, &mut request, false) else {
            continue;
        };
        if let RequestInfo::Resource(r) = &judged.info {
            let named_get = r.verb == "get" && !r.name.is_empty();
            assert!(
                r.verb == "watch" || r.verb == "proxy" || named_get,
                "a watch judged as {r:?}"
            );
        }
    }
}

fn stream_open(header: &StreamOpen) {
    let Ok(request) = build_upgrade_request(header) else {
        return;
    };
    for name in request.headers().keys() {
        assert!(!is_host_only_header(name), "{name} reached the upgrade");
        assert!(
            !HANDSHAKE_HEADERS.contains(&name.as_str()),
            "the guest's {name} reached the upgrade"
        );
    }
    for access in accesses() {
        let mut request = build_upgrade_request(header).expect("built once");
        let Some(judged) = judged(&access, &mut request, true) else {
            continue;
        };
        if let (Some(permissions), RequestInfo::Resource(r)) = (&access.permissions, &judged.info)
            && r.api_group.is_empty()
            && r.resource == "pods"
            && ["exec", "attach", "portforward"].contains(&r.subresource.as_str())
        {
            let create =
                RequestInfo::Resource(host_shim::upstream::request_info::ResourceRequest {
                    verb: "create".into(),
                    ..r.clone()
                });
            assert!(
                permissions.check("fuzz", &create).is_ok(),
                "an upgrade to {r:?} allowed without create"
            );
        }
    }
}

fn stream_send(header: StreamSend, body: &[u8]) {
    let close = matches!(header, StreamSend::Close { .. });
    match to_message(header, body) {
        Ok(Message::Binary(bytes)) => assert_eq!(&bytes[..], body),
        Ok(Message::Text(text)) => assert_eq!(text.as_bytes(), body),
        Ok(Message::Close(frame)) => {
            assert!(close);
            if let Some(frame) = frame {
                assert!(frame.reason.len() <= 123, "close reason over a close frame");
            }
        }
        Ok(other) => panic!("stream_send made {other:?}"),
        Err(_) => {}
    }
}

/// Judges `request` as the host does before sending it; checks that what was judged is what
/// is sent and that judging is idempotent. `None` if denied.
fn judged<B>(access: &Access, request: &mut http::Request<B>, websocket: bool) -> Option<Judged> {
    let authorize = |request: &mut http::Request<B>| {
        if websocket {
            access.authorize_websocket(request)
        } else {
            access.authorize(request)
        }
    };
    let judged = authorize(request).ok()?;
    let sent = request.uri().to_string();
    assert_eq!(sent, judged.uri.normalized(), "sent is not what was judged");
    let reread = RequestUri::parse(&sent).expect("the sent URI reads back");
    assert_eq!(reread, judged.uri, "{sent} reads back differently");
    assert_eq!(
        RequestInfo::of(request.method(), &reread).ok(),
        Some(judged.info.clone()),
        "{sent} is classified differently"
    );
    let again = authorize(request).expect("a judged request is allowed again");
    assert_eq!(again, judged);
    assert_eq!(
        request.uri().to_string(),
        sent,
        "judging twice changed the URI"
    );
    Some(judged)
}
