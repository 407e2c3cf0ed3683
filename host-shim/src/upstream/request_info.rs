//! What a request to the API server does, in authorization terms: the Kubernetes
//! `RequestInfo` (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`), computed the way
//! the apiserver computes it over the decoded URI ([`RequestUri`]), so the host's
//! [`permissions`](crate::upstream::permissions) judge a request exactly as RBAC would.
//!
//! - `/api/v1/...` is the core group (`""`), `/apis/<group>/<version>/...` a named group;
//!   every other path (`/api`, `/apis`, `/apis/<group>`, `/version`, `/healthz`, `/openapi/v2`,
//!   …) is a non-resource URL.
//! - `/…/watch/…` (the deprecated watch prefix) makes the verb `watch`, `/…/proxy/…` the verb
//!   `proxy` (which takes no subresource), whatever the method.
//! - `namespaces/<ns>/<resource>/…` sets the namespace; `namespaces/<ns>/status` and
//!   `namespaces/<ns>/finalize` are subresources of the namespace itself.
//! - The verb comes from the method: `POST` create, `GET`/`HEAD` get, `PUT` update, `PATCH`
//!   patch, `DELETE` delete; a `get` without a name is `list`, or `watch` when its `watch`
//!   parameter is true (see `watch_requested`); a `get` with a name stays `get` whatever its
//!   query; a `delete` without a name is `deletecollection`.
//! - A list or watch with `fieldSelector=metadata.name=<n>` carries the name `<n>`.

use crate::upstream::request_uri::{RequestUri, Unclassifiable};

/// A request on an API resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or
    /// the lowercase method for anything else (e.g. `options`).
    pub verb: String,
    /// The API group: `""` for the core group.
    pub api_group: String,
    /// The API version (`v1`, `v1beta1`, …).
    pub api_version: String,
    /// The resource (plural, lowercase: `secrets`, `deployments`).
    pub resource: String,
    /// The subresource (`status`, `log`, `scale`, …), `""` if none.
    pub subresource: String,
    /// The namespace, `""` for cluster-scoped requests and requests across all namespaces.
    pub namespace: String,
    /// The object's name, `""` for collection requests.
    pub name: String,
}

impl ResourceRequest {
    /// `resource` or `resource/subresource`, as RBAC rules name it.
    pub fn resource_path(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// What a request is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestInfo {
    /// A request on an API resource.
    Resource(ResourceRequest),
    /// A request on no API resource: discovery (`/api`, `/apis`, `/apis/<group>`, …),
    /// `/version`, `/healthz`, `/openapi/…`, `/metrics`, or any other path.
    NonResource {
        /// The lowercase method (`get`, `head`, `post`, …), as RBAC's non-resource rules name it.
        verb: String,
        /// The decoded path, `/` + segments.
        path: String,
    },
}

/// Namespace subresources: `namespaces/<ns>/status` is the `status` subresource of the
/// namespace, not a resource called `status` inside it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Path segments that name the verb (`/api/v1/watch/…`, `/api/v1/proxy/…`); `proxy` takes
/// no subresource.
const SPECIAL_VERBS: [&str; 2] = ["watch", "proxy"];

impl RequestInfo {
    /// The `RequestInfo` of a request with `method` to `uri`, as `RequestInfoFactory`
    /// computes it.
    ///
    /// # Errors
    /// [`Unclassifiable`] where the API server would fail the request before authorizing it
    /// (a special verb without a resource) or where its verb is not certain: a method that is
    /// not `GET`, `HEAD`, `POST`, `PUT`, `PATCH` or `DELETE` (method names are case-sensitive;
    /// the API server gives others the verb `""` on resources), or a `watch` parameter that
    /// is not ASCII.
    pub fn of(method: &http::Method, uri: &RequestUri) -> Result<Self, Unclassifiable> {
        let method_verb = match *method {
            http::Method::POST => "create",
            http::Method::GET | http::Method::HEAD => "get",
            http::Method::PUT => "update",
            http::Method::PATCH => "patch",
            http::Method::DELETE => "delete",
            ref other => {
                return Err(Unclassifiable(format!(
                    "method {other:?} is none of GET, HEAD, POST, PUT, PATCH, DELETE"
                )));
            }
        };
        let mut parts: &[String] = uri.segments();
        // /api/<version>/<resource…> or /apis/<group>/<version>/<resource…>.
        let api_group = match parts.first().map(String::as_str) {
            Some("api") if parts.len() >= 3 => {
                parts = &parts[1..];
                ""
            }
            Some("apis") if parts.len() >= 4 => {
                parts = &parts[2..];
                uri.segments()[1].as_str()
            }
            _ => {
                return Ok(RequestInfo::NonResource {
                    verb: method.as_str().to_ascii_lowercase(),
                    path: uri.path(),
                });
            }
        };
        let api_version = parts[0].as_str();
        parts = &parts[1..];
        let mut verb = method_verb;
        if SPECIAL_VERBS.contains(&parts[0].as_str()) {
            if parts.len() < 2 {
                return Err(Unclassifiable(format!("{} names no resource", uri.path())));
            }
            verb = if parts[0] == "watch" {
                "watch"
            } else {
                "proxy"
            };
            parts = &parts[1..];
        }
        let mut namespace = "";
        if parts[0] == "namespaces" && parts.len() > 1 {
            namespace = &parts[1];
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2].as_str()) {
                parts = &parts[2..];
            }
        }
        let part = |i: usize| parts.get(i).map_or("", String::as_str);
        let resource = part(0);
        let mut name = part(1).to_owned();
        let subresource = if verb == "proxy" { "" } else { part(2) };
        if name.is_empty() && verb == "get" {
            verb = if watch_requested(uri)? {
                "watch"
            } else {
                "list"
            };
            if list_options_decode(uri)
                && let Some(selected) = uri.first("fieldSelector").and_then(exact_name)
            {
                name = selected;
            }
        }
        if name.is_empty() && verb == "delete" {
            verb = "deletecollection";
        }
        Ok(RequestInfo::Resource(ResourceRequest {
            verb: verb.to_owned(),
            api_group: api_group.to_owned(),
            api_version: api_version.to_owned(),
            resource: resource.to_owned(),
            subresource: subresource.to_owned(),
            namespace: namespace.to_owned(),
            name,
        }))
    }
}

/// Whether a list is a watch: the first `watch` value, read as the API server's parameter
/// codec reads a bool — false only for `0` and (case-insensitively) `false`; anything else,
/// the empty value of a bare `watch` included, is true.
fn watch_requested(uri: &RequestUri) -> Result<bool, Unclassifiable> {
    match uri.first("watch") {
        None => Ok(false),
        Some(value) if !value.is_ascii() => Err(Unclassifiable(format!(
            "watch parameter {value:?} is not ASCII"
        ))),
        Some(value) => Ok(!(value == "0" || value.eq_ignore_ascii_case("false"))),
    }
}

/// Whether the API server's parameter codec certainly decodes `uri`'s list options (the query
/// into `metav1.ListOptions`, then into the internal form): `limit` and `timeoutSeconds` Go
/// integers (`strconv.ParseInt`, first value), and a `labelSelector` that certainly parses.
/// When decoding fails, `RequestInfoFactory` drops the options but for `watch`, so a
/// `fieldSelector` names no object; the host keeps that name only when decoding certainly
/// succeeds, and otherwise judges the wider request. (An unparsable `fieldSelector` names no
/// object either way: [`exact_name`].)
fn list_options_decode(uri: &RequestUri) -> bool {
    let integer = |name: &str| uri.first(name).is_none_or(|v| v.parse::<i64>().is_ok());
    integer("limit")
        && integer("timeoutSeconds")
        && uri.first("labelSelector").is_none_or(label_selector_parses)
}

/// Whether `selector` certainly parses as a label selector (`labels.Parse`): empty, or terms
/// joined by `,`, each `key`, `!key` or `key` `=`/`==`/`!=` `value`, where keys are qualified
/// names and values label values as Kubernetes validates them. Other spellings Go also
/// accepts (set-based `in`/`notin`, `<`/`>`, spaces) count as not certain.
fn label_selector_parses(selector: &str) -> bool {
    selector.is_empty()
        || selector.split(',').all(|term| {
            if let Some(key) = term.strip_prefix('!') {
                return is_qualified_name(key);
            }
            match term.find(['!', '=']) {
                None => is_qualified_name(term),
                Some(at) => {
                    let key = &term[..at];
                    let rest = &term[at..];
                    let value = ["!=", "==", "="]
                        .into_iter()
                        .find_map(|operator| rest.strip_prefix(operator));
                    is_qualified_name(key) && value.is_some_and(is_label_value)
                }
            }
        })
}

/// A label key (`validation.IsQualifiedName`): an optional DNS-1123 subdomain prefix and `/`,
/// then a name of 1–63 characters, alphanumeric at both ends, `-`, `_`, `.` inside.
fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(is_dns_subdomain) && !name.is_empty() && is_label_value(name)
}

/// A label value (`validation.IsValidLabelValue`): empty, or at most 63 characters,
/// alphanumeric at both ends, `-`, `_`, `.` inside.
fn is_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    value.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes.first().is_none_or(u8::is_ascii_alphanumeric)
        && bytes.last().is_none_or(u8::is_ascii_alphanumeric)
}

/// A DNS-1123 subdomain: at most 253 characters, dot-separated labels of lowercase
/// alphanumerics and `-`, alphanumeric at both ends.
fn is_dns_subdomain(name: &str) -> bool {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    name.len() <= 253
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes.iter().all(|b| alnum(b) || *b == b'-')
                && bytes.first().is_some_and(alnum)
                && bytes.last().is_some_and(alnum)
        })
}

/// The object name a list or watch narrows itself to with `fieldSelector`, as the API server
/// finds it (`fields.ParseSelector(…).RequiresExactMatch("metadata.name")`): the terms (split
/// on `,`) sorted, the first `metadata.name=<name>` (or `==`) among them — field and value
/// exactly as written, spaces included — if every term parses and the name is a valid path
/// segment name (`path.IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`). A selector
/// with escapes is left alone (no name), which only widens what the request is judged on.
fn exact_name(selector: &str) -> Option<String> {
    if selector.contains('\\') {
        return None;
    }
    let mut terms: Vec<&str> = selector.split(',').filter(|t| !t.is_empty()).collect();
    terms.sort_unstable();
    let mut name = None;
    for term in terms {
        let (field, operator, value) = split_term(term)?;
        // Go's `UnescapeValue`: an unescaped `=` in a value makes the selector invalid.
        if value.contains('=') {
            return None;
        }
        if name.is_none() && operator != "!=" && field == "metadata.name" {
            name = Some(value);
        }
    }
    let name = name?;
    let valid = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '%']);
    valid.then(|| name.to_owned())
}

/// Splits a selector term as Go's `fields` `splitTerm` does: at the first operator from the
/// left, `!=` tried before `==` before `=` at each position. `None` for a term without one.
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        ["!=", "==", "="]
            .into_iter()
            .find(|operator| rest.starts_with(operator))
            .map(|operator| (&term[..i], operator, &rest[operator.len()..]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API server's classification of each case (`tests/data/request_info.cases`, also
    /// checked against a real kube-apiserver by the end-to-end test `request_classification`).
    const CASES: &str = include_str!("../../tests/data/request_info.cases");

    /// A classification in the cases' notation.
    fn notation(method: &str, uri: &str) -> String {
        let dash = |s: &str| {
            if s.is_empty() {
                "-".to_owned()
            } else {
                s.to_owned()
            }
        };
        let Ok(method) = http::Method::from_bytes(method.as_bytes()) else {
            return "refused".into();
        };
        match RequestUri::parse(uri).and_then(|uri| RequestInfo::of(&method, &uri)) {
            Err(_) => "refused".into(),
            Ok(RequestInfo::NonResource { verb, path }) => format!("nonresource {verb} {path}"),
            Ok(RequestInfo::Resource(r)) => format!(
                "resource {} {} {} {} {} {} {}",
                r.verb,
                dash(&r.api_group),
                dash(&r.api_version),
                dash(&r.resource),
                dash(&r.subresource),
                dash(&r.namespace),
                dash(&r.name)
            ),
        }
    }

    #[test]
    fn every_case_is_classified_as_the_api_server_classifies_it() {
        let mut checked = 0;
        let mut wrong = Vec::new();
        for line in CASES.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (request, expected) = line.split_once(" => ").expect("METHOD URI => EXPECTED");
            let (method, uri) = request.split_once(' ').expect("METHOD URI");
            let got = notation(method, &uri.replace("NS", "team-a"));
            if got != expected.replace("NS", "team-a") {
                wrong.push(format!(
                    "{request}\n  expected {expected}\n  got      {got}"
                ));
            }
            checked += 1;
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert!(checked >= 100, "only {checked} cases");
    }

    #[test]
    fn what_is_judged_is_what_is_sent() {
        for line in CASES
            .lines()
            .filter(|l| l.contains(" => ") && !l.starts_with('#'))
        {
            let (request, _) = line.split_once(" => ").expect("=>");
            let (method, uri) = request.split_once(' ').expect("METHOD URI");
            let Ok(method) = http::Method::from_bytes(method.as_bytes()) else {
                continue;
            };
            let Ok(parsed) = RequestUri::parse(uri) else {
                continue;
            };
            let sent = RequestUri::parse(&parsed.normalized()).expect("normalized reads back");
            assert_eq!(
                RequestInfo::of(&method, &parsed),
                RequestInfo::of(&method, &sent),
                "{request} sent as {}",
                parsed.normalized()
            );
        }
    }

    #[test]
    fn a_field_selector_names_an_object_as_the_api_server_parses_it() {
        let name = |selector: &str| exact_name(selector);
        assert_eq!(name("metadata.name=a"), Some("a".into()));
        assert_eq!(name("metadata.name==a"), Some("a".into()));
        assert_eq!(name("type=x,metadata.name=a"), Some("a".into()));
        // The terms are sorted; the first name wins.
        assert_eq!(name("metadata.name=b,metadata.name=a"), Some("a".into()));
        // Fields and values as written: no space is trimmed.
        assert_eq!(name(" metadata.name=a"), None);
        assert_eq!(name("metadata.name= a"), Some(" a".into()));
        // Found by fuzzing: trimmed, this value was the name "..".
        assert_eq!(name("metadata.name= .."), Some(" ..".into()));
        assert_eq!(name("metadata.name=.."), None);
        assert_eq!(name("metadata.name=a/b"), None);
        assert_eq!(name("metadata.name=a%2F"), None);
        assert_eq!(name("metadata.name="), None);
        // An invalid selector names nothing: a term without operator, an unescaped `=`.
        assert_eq!(name("x,metadata.name=a"), None);
        assert_eq!(name("metadata.name=a=b"), None);
        assert_eq!(name("metadata.name!=a"), None);
        assert_eq!(name("metadata.name=a!=b"), None);
        assert_eq!(name(r"metadata.name=a\,b"), None);
    }

    #[test]
    fn label_selectors_that_certainly_parse() {
        for certain in [
            "",
            "app",
            "!app",
            "app=web",
            "app==web",
            "app!=web",
            "app=",
            "app=web,tier!=db,!canary",
            "example.com/app=web",
            "a-b_c.d=x.y-z_0",
        ] {
            assert!(label_selector_parses(certain), "{certain:?}");
        }
        for uncertain in [
            "!!",
            "app=web,",
            ",app",
            "app = web",
            "app in (web)",
            "app=web=x",
            "app=-web",
            "app=a/b",
            "-app=web",
            "Example.com/app=web",
            "example..com/app=web",
            "/app",
            "app/",
            "a=b!c",
        ] {
            assert!(!label_selector_parses(uncertain), "{uncertain:?}");
        }
        assert!(is_label_value(&"a".repeat(63)));
        assert!(!is_label_value(&"a".repeat(64)));
    }

    #[test]
    fn resource_path_names_the_subresource() {
        let uri =
            RequestUri::parse("/apis/apps/v1/namespaces/ns/deployments/web/scale").expect("valid");
        let RequestInfo::Resource(r) =
            RequestInfo::of(&http::Method::PUT, &uri).expect("classified")
        else {
            panic!("a resource request");
        };
        assert_eq!(r.resource_path(), "deployments/scale");
    }
}
