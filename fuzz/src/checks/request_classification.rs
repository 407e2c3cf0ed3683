//! Request classification as the host judges every request: `RequestUri::parse` (the URI as
//! kube-apiserver reads it), `RequestInfo::of` (what kube-apiserver's `RequestInfoFactory`
//! makes of it) and `Permissions::check` (RBAC's rule matching), seeded from
//! `host-shim/tests/data/request_info.cases`.
//!
//! Input: a first line `METHOD URI`, then optional rule lines `verbs|apiGroups|resources`
//! (each comma-separated). Invariants, besides never panicking:
//! - the normal form (what the host sends) reads back to the same URI, and normalising is
//!   idempotent; a URI the `http` crate accepted has a normal form it accepts too;
//! - the normal form is classified exactly as the original;
//! - classification is sane: a known verb; the group, version, resource, subresource and
//!   namespace are path segments (no `/`); a name from `fieldSelector` is a valid path segment
//!   name (not `.` or `..`, no `/` or `%`), as the API server requires of it;
//! - permissions: no rules allow no resource request, `*` rules allow every one; a websocket
//!   check allowed is a plain check allowed; allowing stays allowing with more rules; only
//!   discovery is allowed on no resource; a denial's `Status` is JSON with code 403;
//! - `Access::authorize` agrees with the above and sends the normal form.

use host_shim::runtime::Access;
use host_shim::upstream::permissions::{Denied, Permissions, Rule};
use host_shim::upstream::request_info::RequestInfo;
use host_shim::upstream::request_uri::RequestUri;

/// The verbs `RequestInfo::of` may give a resource request.
const VERBS: [&str; 9] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "proxy",
];

/// Checks `data` as `METHOD URI` and rules.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let first = lines.next().unwrap_or_default();
    let Some((method, uri)) = first.split_once(' ') else {
        return;
    };
    let Ok(method) = http::Method::from_bytes(method.as_bytes()) else {
        return;
    };
    let rules = Permissions {
        rules: lines.filter_map(rule).collect(),
    };
    let classified = classify(&method, uri);
    authorize(&method, uri, &rules, classified.as_ref());
    if let Some(info) = classified {
        check_permissions(&info, &rules);
    }
}

/// A rule line `verbs|apiGroups|resources`.
fn rule(line: &str) -> Option<Rule> {
    let mut fields = line.split('|');
    let mut list =
        || -> Option<Vec<String>> { Some(fields.next()?.split(',').map(str::to_owned).collect()) };
    Some(Rule {
        verbs: list()?,
        api_groups: list()?,
        resources: list()?,
    })
}

/// Parses and classifies `uri`, checking the normal form; `None` if refused.
fn classify(method: &http::Method, uri: &str) -> Option<RequestInfo> {
    let parsed = RequestUri::parse(uri).ok()?;
    let normal = parsed.normalized();
    let reread = RequestUri::parse(&normal).expect("the normal form reads back");
    assert_eq!(
        reread, parsed,
        "{uri:?} normalised to {normal:?} reads differently"
    );
    assert_eq!(
        reread.normalized(),
        normal,
        "normalising {uri:?} is not idempotent"
    );
    if uri.parse::<http::uri::PathAndQuery>().is_ok() {
        assert!(
            normal.parse::<http::Uri>().is_ok(),
            "{uri:?} is a valid URI, its normal form {normal:?} is not"
        );
    }
    let info = RequestInfo::of(method, &parsed);
    assert_eq!(
        RequestInfo::of(method, &reread),
        info,
        "{uri:?} and its normal form {normal:?} are classified differently"
    );
    let info = info.ok()?;
    if let RequestInfo::Resource(r) = &info {
        assert!(VERBS.contains(&r.verb.as_str()), "verb {:?}", r.verb);
        assert!(!r.resource.is_empty() && !r.api_version.is_empty(), "{r:?}");
        for segment in [
            &r.api_group,
            &r.api_version,
            &r.resource,
            &r.subresource,
            &r.namespace,
        ] {
            assert!(!segment.contains('/'), "{r:?}");
        }
        let from_path = parsed.segments().contains(&r.name);
        if !r.name.is_empty() && !from_path {
            let valid = r.name != "." && r.name != ".." && !r.name.contains(['/', '%']);
            assert!(valid, "fieldSelector name {:?} is no path segment", r.name);
        }
    }
    Some(info)
}

/// Permission invariants for a classified request.
fn check_permissions(info: &RequestInfo, rules: &Permissions) {
    let none = Permissions::default();
    let all = Permissions {
        rules: vec![Rule {
            verbs: vec!["*".into()],
            api_groups: vec!["*".into()],
            resources: vec!["*".into()],
        }],
    };
    let mut more = rules.clone();
    more.rules.push(Rule {
        verbs: vec!["get".into()],
        api_groups: vec![String::new()],
        resources: vec!["configmaps".into()],
    });
    match info {
        RequestInfo::Resource(_) => {
            assert!(none.check("m", info).is_err(), "no rules allowed {info:?}");
            assert!(all.check_websocket("m", info).is_ok(), "* denied {info:?}");
        }
        RequestInfo::NonResource { .. } => {
            assert_eq!(none.check("m", info).is_ok(), all.check("m", info).is_ok());
            assert_eq!(
                none.check("m", info).is_ok(),
                rules.check("m", info).is_ok()
            );
        }
    }
    for permissions in [&none, &all, rules] {
        if permissions.check_websocket("m", info).is_ok() {
            assert!(permissions.check("m", info).is_ok());
        }
        match permissions.check("m", info) {
            Ok(()) => assert!(more.check("m", info).is_ok() || permissions != rules),
            Err(denied) => denial(&denied),
        }
    }
}

fn denial(denied: &Denied) {
    let _ = denied.to_string();
    let status: serde_json::Value =
        serde_json::from_slice(&denied.status_body()).expect("a denial's Status is JSON");
    assert_eq!(status["code"], 403);
}

/// `Access::authorize` on the request as `build_http_request` makes it. The `http` crate
/// reads the URI first (and drops a fragment, as every HTTP client does: it is never sent),
/// so the host judges what `http` read, and sends that.
fn authorize(method: &http::Method, uri: &str, rules: &Permissions, info: Option<&RequestInfo>) {
    if !uri.starts_with('/') {
        return;
    }
    let Ok(path) = uri.parse::<http::uri::PathAndQuery>() else {
        return;
    };
    let access = Access {
        module: "m".into(),
        permissions: Some(rules.clone()),
    };
    let mut request = http::Request::new(());
    *request.method_mut() = method.clone();
    *request.uri_mut() = http::Uri::from(path);
    let read = request.uri().to_string();
    let expected = if read == uri {
        info.cloned()
    } else {
        classify(method, &read)
    };
    match access.authorize(&mut request) {
        Ok(judged) => {
            assert_eq!(
                Some(judged.info),
                expected,
                "{uri:?} (read {read:?}) judged otherwise"
            );
            assert_eq!(request.uri().to_string(), judged.uri.normalized());
        }
        Err(denied) => {
            denial(&denied);
            if let Some(info) = expected {
                assert!(rules.check("m", &info).is_err(), "{uri:?} denied otherwise");
            }
        }
    }
}
