//! A request URI as kube-apiserver reads it, and the one form the host sends upstream.
//!
//! The API server routes and authorizes on Go's `URL.Path`, which is **percent-decoded**
//! (`%2F` is a slash there), split on `/` after trimming the slashes at both ends
//! (`requestinfo.go`'s `splitPath`); it reads the query with `url.ParseQuery` (`+` is a
//! space, keys are decoded too, a pair containing `;` or a bad escape is dropped). A check
//! on the raw, still-encoded URI therefore judges another request than the one served.
//!
//! [`RequestUri::parse`] reads a URI that way and refuses what could be read two ways:
//! a bad `%` escape, a path that does not decode to UTF-8 or decodes to a control character,
//! an empty (`//`) or dot (`.`, `..`) segment, a fragment, a query pair with `;`.
//! [`RequestUri::normalized`] is the URI the host then sends: the decoded segments
//! re-encoded (only what must be) and the query as it came, which the API server reads into
//! the very pairs the check read — for a URI as kube-core builds it, the same bytes.

use std::borrow::Cow;
use std::fmt;

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};

/// What a path segment keeps unencoded besides letters and digits: RFC 3986's `pchar`
/// (unreserved, sub-delims, `:`, `@`), so `system:controller:x` stays as kube-core writes it.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// A request URI the host cannot read with certainty the way the API server reads it.
/// Carries the reason, for the denial's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unclassifiable(pub String);

/// A request target (path and optional query, relative to the API server root) as the API
/// server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestUri {
    segments: Vec<String>,
    query: Vec<(String, String)>,
    raw_query: String,
}

impl RequestUri {
    /// Reads `uri` (`/path?query`) as kube-apiserver reads it.
    ///
    /// # Errors
    /// [`Unclassifiable`] for anything that is not certain: a URI not starting with `/`, a
    /// fragment, a bad `%` escape, a decoded path that is not UTF-8 or holds a control
    /// character, an empty or dot segment, a query pair containing `;`.
    pub fn parse(uri: &str) -> Result<Self, Unclassifiable> {
        if !uri.starts_with('/') {
            return Err(Unclassifiable(format!(
                "{uri:?} is not a path relative to the API server root"
            )));
        }
        if uri.contains('#') {
            return Err(Unclassifiable(format!("{uri:?} has a fragment")));
        }
        let (raw_path, raw_query) = uri.split_once('?').unwrap_or((uri, ""));
        let path = decode(raw_path, false)?;
        if path.chars().any(char::is_control) {
            return Err(Unclassifiable(format!(
                "path {raw_path:?} decodes to a control character"
            )));
        }
        let trimmed = path.trim_matches('/');
        let segments: Vec<String> = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').map(str::to_owned).collect()
        };
        if let Some(bad) = segments
            .iter()
            .find(|s| s.is_empty() || *s == "." || *s == "..")
        {
            return Err(Unclassifiable(format!(
                "path {path:?} has an {} segment",
                if bad.is_empty() { "empty" } else { "dot" }
            )));
        }
        let mut query = Vec::new();
        for pair in raw_query.split('&').filter(|p| !p.is_empty()) {
            if pair.contains(';') {
                return Err(Unclassifiable(format!("query pair {pair:?} contains `;`")));
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            query.push((decode(key, true)?, decode(value, true)?));
        }
        Ok(Self {
            segments,
            query,
            raw_query: raw_query.to_owned(),
        })
    }

    /// The decoded path segments (Go's `splitPath(URL.Path)`); empty for `/`.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// The decoded path, `/` + segments joined by `/` (for messages and non-resource rules).
    pub fn path(&self) -> String {
        format!("/{}", self.segments.join("/"))
    }

    /// The query's decoded `(key, value)` pairs, in order.
    pub fn query(&self) -> &[(String, String)] {
        &self.query
    }

    /// The first value of `key`, as Go's `URL.Query()[key][0]` (what the API server's
    /// parameter decoding reads).
    pub fn first(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The URI the host sends: the segments re-encoded, the query unchanged (every pair of it
    /// was read as the API server reads it). Reading it again gives the same `RequestUri`.
    pub fn normalized(&self) -> String {
        let mut out = String::with_capacity(64);
        if self.segments.is_empty() {
            out.push('/');
        }
        for segment in &self.segments {
            out.push('/');
            out.extend(utf8_percent_encode(segment, SEGMENT));
        }
        if !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        out
    }
}

impl fmt::Display for RequestUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.normalized())
    }
}

/// Percent-decodes `raw` strictly (every `%` followed by two hex digits), `+` as a space in
/// a query (`form`), into UTF-8.
fn decode(raw: &str, form: bool) -> Result<String, Unclassifiable> {
    let bytes = raw.as_bytes();
    for (i, _) in raw.match_indices('%') {
        let escape = bytes.get(i + 1..i + 3);
        if !escape.is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) {
            return Err(Unclassifiable(format!("{raw:?} has a bad `%` escape")));
        }
    }
    let spaced: Cow<'_, str> = if form && raw.contains('+') {
        Cow::Owned(raw.replace('+', " "))
    } else {
        Cow::Borrowed(raw)
    };
    percent_decode_str(&spaced)
        .decode_utf8()
        .map(Cow::into_owned)
        .map_err(|_| Unclassifiable(format!("{raw:?} does not decode to UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(uri: &str) -> Vec<String> {
        RequestUri::parse(uri).expect(uri).segments().to_vec()
    }

    #[test]
    fn paths_are_decoded_before_they_are_split() {
        assert_eq!(
            segments("/api%2Fv1%2Fnamespaces%2Fa%2Fsecrets"),
            ["api", "v1", "namespaces", "a", "secrets"]
        );
        assert_eq!(segments("/api/v1/%73ecrets"), ["api", "v1", "secrets"]);
        assert_eq!(segments("//api/v1/pods//"), ["api", "v1", "pods"]);
        assert_eq!(segments("/"), Vec::<String>::new());
        assert_eq!(segments("/api/v1/pods/a+b"), ["api", "v1", "pods", "a+b"]);
    }

    #[test]
    fn uncertain_uris_are_refused() {
        for uri in [
            "api/v1/pods",
            "https://evil.example/api/v1/pods",
            "/api/v1//pods",
            "/api/v1/namespaces/a/configmaps/../../secrets",
            "/api/v1/namespaces/a/./secrets",
            "/api/v1/namespaces/a/%2E%2E/secrets",
            "/api/v1/pods%2F%2Fx",
            "/api/v1/pods/%zz",
            "/api/v1/pods/%2",
            "/api/v1/pods/%ff",
            "/api/v1/pods/%00",
            "/api/v1/pods#x",
            "/api/v1/pods?watch=1;x=2",
            "/api/v1/pods?%zzatch=1",
        ] {
            assert!(RequestUri::parse(uri).is_err(), "{uri}");
        }
    }

    #[test]
    fn queries_read_as_go_reads_them() {
        let uri = RequestUri::parse("/api/v1/pods?%77atch&watch=false&labelSelector=a+in+(b)")
            .expect("valid");
        assert_eq!(uri.first("watch"), Some(""));
        assert_eq!(uri.first("labelSelector"), Some("a in (b)"));
        assert_eq!(uri.first("limit"), None);
    }

    #[test]
    fn the_normalized_form_is_what_kube_core_builds_and_reads_back_the_same() {
        for uri in [
            "/api/v1/namespaces/default/configmaps/a?fieldManager=m",
            "/api/v1/namespaces/ns/configmaps?&watch=true&timeoutSeconds=290&labelSelector=app%3Dx&allowWatchBookmarks=true",
            "/api/v1/pods?%77atch&x=a+b",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:x",
            "/api",
            "/",
        ] {
            assert_eq!(RequestUri::parse(uri).expect(uri).normalized(), uri);
        }
        for uri in [
            "/api%2Fv1%2Fsecrets?%77atch=1",
            "/api/v1/pods/na%20me?x=a+b",
            "/api/v1/pods/%3F",
        ] {
            let once = RequestUri::parse(uri).expect(uri);
            let again = RequestUri::parse(&once.normalized()).expect("normalized");
            assert_eq!(once, again, "{uri} -> {}", once.normalized());
        }
        assert_eq!(
            RequestUri::parse("/api%2Fv1%2Fsecrets?%77atch=1")
                .expect("valid")
                .normalized(),
            "/api/v1/secrets?%77atch=1"
        );
    }
}
