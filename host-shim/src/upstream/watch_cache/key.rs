//! What makes two watches (or a list and a watch) the same upstream watch, and where a watch
//! starts.

use kube_wasm_abi::WatchRequest;

use crate::upstream::identity::ServiceAccount;
use crate::upstream::request_info::RequestInfo;
use crate::upstream::request_uri::RequestUri;

/// The identity of one shared upstream LIST+WATCH: who asks (a ServiceAccount the host
/// impersonates sees only what RBAC lets it see, so identities never share), which
/// collection, with which selectors, as full objects or as `PartialObjectMetadata`.
///
/// Empty selectors are the same as none (the API server treats them so).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WatchKey {
    /// The ServiceAccount the module acts as; `None`: the host's own identity.
    pub identity: Option<ServiceAccount>,
    /// The collection path, e.g. `/api/v1/namespaces/ns/configmaps`.
    pub path: String,
    /// `labelSelector`, if any.
    pub label_selector: Option<String>,
    /// `fieldSelector`, if any.
    pub field_selector: Option<String>,
    /// Whether objects are `PartialObjectMetadata` (kube's `watch_metadata`/`list_metadata`).
    pub metadata_only: bool,
}

impl WatchKey {
    /// The key of `path` with these selectors (empty selectors become `None`).
    pub fn new(
        identity: Option<ServiceAccount>,
        path: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        metadata_only: bool,
    ) -> Self {
        let non_empty = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(str::to_owned);
        Self {
            identity,
            path: path.to_owned(),
            label_selector: non_empty(label_selector),
            field_selector: non_empty(field_selector),
            metadata_only,
        }
    }

    /// The key of a module's `watch` request of the collection at `path` (the path its
    /// permission check judged, not the request's own spelling).
    pub fn of_watch(identity: Option<ServiceAccount>, path: &str, request: &WatchRequest) -> Self {
        Self::new(
            identity,
            path,
            request.label_selector.as_deref(),
            request.field_selector.as_deref(),
            request.metadata_only,
        )
    }
}

impl std::fmt::Display for WatchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path)?;
        if let Some(labels) = &self.label_selector {
            write!(f, " labels={labels}")?;
        }
        if let Some(fields) = &self.field_selector {
            write!(f, " fields={fields}")?;
        }
        if self.metadata_only {
            f.write_str(" (metadata)")?;
        }
        if let Some(account) = &self.identity {
            write!(f, " as {account}")?;
        }
        Ok(())
    }
}

/// A list request a shared watch serves or learns from (see [`list_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedList {
    /// `resourceVersion=0`: kube-apiserver's cacher serves it from its watch cache, so it is
    /// served from the shared watch of the key.
    Cached(WatchKey),
    /// No `resourceVersion` (a consistent list, read from etcd): it goes upstream, and its
    /// answer, if complete, may start the shared watch of the key that follows it (the
    /// watcher's WATCH from that list's resourceVersion) without another LIST.
    Consistent(WatchKey),
}

/// Classifies a list request: a `GET` of a collection with `resourceVersion=0` (optionally
/// `resourceVersionMatch=NotOlderThan`) is [`SharedList::Cached`], one without
/// `resourceVersion` (or with it empty) and without `resourceVersionMatch` is
/// [`SharedList::Consistent`]; either may have `labelSelector`, `fieldSelector`, `limit`
/// (the cacher ignores it; a consistent list that is cut short has a `continue` token and
/// is not used) and `timeoutSeconds`, and no other parameter (no `continue`, no `watch`),
/// and an `Accept` of plain JSON or of `PartialObjectMetadataList`. `None` for anything
/// else.
///
/// `info` and `uri` are the request as its permission check read it (`Access::authorize`),
/// and `path` the path it is sent with, so the key's collection is the one the module was
/// allowed to list.
pub fn list_key(
    identity: Option<ServiceAccount>,
    method: &http::Method,
    info: &RequestInfo,
    uri: &RequestUri,
    path: &str,
    headers: &[(String, String)],
) -> Option<SharedList> {
    if method != http::Method::GET {
        return None;
    }
    let RequestInfo::Resource(info) = info else {
        return None;
    };
    if info.verb != "list" || !info.subresource.is_empty() {
        return None;
    }
    let (mut labels, mut fields, mut rv, mut not_older_than) = (None, None, None, false);
    for (name, value) in uri.query() {
        match name.as_str() {
            "labelSelector" => labels = Some(value.as_str()),
            "fieldSelector" => fields = Some(value.as_str()),
            "resourceVersion" => rv = Some(value.as_str()),
            "resourceVersionMatch" if value == "NotOlderThan" => not_older_than = true,
            "limit" | "timeoutSeconds" => {}
            _ => return None,
        }
    }
    let mut metadata_only = false;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("accept") {
            if value.contains("as=PartialObjectMetadataList") {
                metadata_only = true;
            } else if value.contains("as=") || !value.contains("json") {
                return None;
            }
        }
    }
    let key = WatchKey::new(identity, path, labels, fields, metadata_only);
    match (rv, not_older_than) {
        (Some("0"), _) => Some(SharedList::Cached(key)),
        (None | Some(""), false) => Some(SharedList::Consistent(key)),
        _ => None,
    }
}

/// Where a watch starts, in the API server's terms (its `resourceVersion`,
/// `sendInitialEvents` and `resourceVersionMatch` parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// `""` or `"0"`: the current state as synthetic `ADDED` events, then changes. Both are
    /// served from the watch cache by kube-apiserver, and so here.
    Now,
    /// A resourceVersion: every change after it, or `410 Gone` if the cache no longer holds
    /// them all.
    After(u64),
    /// A streaming list (`sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan`,
    /// `allowWatchBookmarks=true`): the current objects, in a state not older than the
    /// [`Freshness`], as `ADDED` events, then a `BOOKMARK` annotated
    /// `k8s.io/initial-events-end: "true"` at that state's resourceVersion, then changes —
    /// never a `410`, as kube-apiserver's cacher serves it.
    Stream(Freshness),
}

/// How fresh the state a streaming list starts from must be (kube-apiserver's
/// `resourceVersionMatch=NotOlderThan` with the watch's `resourceVersion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// `"0"`: any state (kube-runtime's `watcher::Config::streaming_lists()` asks this).
    Any,
    /// A resourceVersion: a state at least that new.
    AtLeast(u64),
    /// `""`: a consistent state, including every write completed before the request
    /// (client-go's reflector asks this for its first streaming list).
    Consistent,
}

impl StartAt {
    /// Reads a `resourceVersion` parameter. `None` for one that is not a number: the API
    /// server answers those itself (a 400 or 410), so such a watch is not served from the cache.
    pub fn parse(resource_version: &str) -> Option<Self> {
        match resource_version {
            "" | "0" => Some(Self::Now),
            rv => rv.parse().ok().map(Self::After),
        }
    }

    /// Where a module's watch request starts. `None` for what the cache does not serve: a
    /// resourceVersion that is not a number, and `sendInitialEvents` without bookmarks (no
    /// kube client sends it; the API server then sends no end bookmark, so it goes upstream).
    pub fn of_watch(request: &WatchRequest) -> Option<Self> {
        if !request.send_initial_events {
            return Self::parse(&request.resource_version);
        }
        if !request.bookmarks {
            return None;
        }
        let freshness = match request.resource_version.as_str() {
            "" => Freshness::Consistent,
            "0" => Freshness::Any,
            rv => Freshness::AtLeast(rv.parse().ok()?),
        };
        Some(Self::Stream(freshness))
    }

    /// The resourceVersion a new shared watch's first LIST should be at exactly, so that
    /// this start is served without a `410`: only a resume from a resourceVersion needs one.
    pub fn list_hint(self) -> Option<u64> {
        match self {
            Self::After(rv) => Some(rv),
            Self::Now | Self::Stream(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_selectors_are_none() {
        let a = WatchKey::new(None, "/api/v1/pods", Some(""), None, false);
        let b = WatchKey::new(None, "/api/v1/pods", None, Some(""), false);
        assert_eq!(a, b);
        assert_ne!(
            a,
            WatchKey::new(None, "/api/v1/pods", Some("a=b"), None, false)
        );
        assert_ne!(a, WatchKey::new(None, "/api/v1/pods", None, None, true));
        let account = ServiceAccount {
            namespace: "n".into(),
            name: "s".into(),
        };
        assert_ne!(
            a,
            WatchKey::new(Some(account), "/api/v1/pods", None, None, false)
        );
    }

    fn list_as(method: http::Method, uri: &str, accept: Option<&str>) -> Option<SharedList> {
        let headers: Vec<(String, String)> = accept
            .map(|a| vec![("Accept".to_owned(), a.to_owned())])
            .unwrap_or_default();
        let parsed = RequestUri::parse(uri).expect("a certain URI");
        let info = RequestInfo::of(&method, &parsed).expect("classified");
        let sent = parsed.normalized();
        let path = sent.split_once('?').map_or(sent.as_str(), |(path, _)| path);
        list_key(None, &method, &info, &parsed, path, &headers)
    }

    fn list(uri: &str, accept: Option<&str>) -> Option<WatchKey> {
        match list_as(http::Method::GET, uri, accept) {
            Some(SharedList::Cached(key)) => Some(key),
            _ => None,
        }
    }

    fn consistent(uri: &str, accept: Option<&str>) -> Option<WatchKey> {
        match list_as(http::Method::GET, uri, accept) {
            Some(SharedList::Consistent(key)) => Some(key),
            _ => None,
        }
    }

    #[test]
    fn consistent_lists_may_seed_a_shared_watch() {
        let key = consistent(
            "/api/v1/namespaces/n/configmaps?labelSelector=app%3Dx&limit=500",
            None,
        )
        .expect("a consistent list");
        assert_eq!(
            key,
            WatchKey::new(
                None,
                "/api/v1/namespaces/n/configmaps",
                Some("app=x"),
                None,
                false
            )
        );
        assert!(consistent("/api/v1/namespaces/n/configmaps?resourceVersion=", None).is_some());
        let meta = consistent(
            "/apis/apps/v1/deployments",
            Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        )
        .expect("a consistent metadata list");
        assert!(meta.metadata_only);
        for uri in [
            "/api/v1/namespaces/n/configmaps?limit=500&continue=abc",
            "/api/v1/namespaces/n/configmaps?resourceVersion=12",
            "/api/v1/namespaces/n/configmaps?resourceVersion=12&resourceVersionMatch=Exact",
            "/api/v1/namespaces/n/configmaps?resourceVersionMatch=NotOlderThan",
            "/api/v1/namespaces/n/configmaps?watch=true",
            "/api/v1/namespaces/n/configmaps/a",
        ] {
            assert_eq!(consistent(uri, None), None, "{uri}");
        }
        assert_eq!(
            consistent(
                "/api/v1/namespaces/n/configmaps",
                Some("application/json;as=Table;v=v1;g=meta.k8s.io")
            ),
            None
        );
    }

    #[test]
    fn lists_the_cacher_serves() {
        let key = list(
            "/api%2Fv1/namespaces/n/configmaps?&labelSelector=app%3Dx&resourceVersion=0&limit=500",
            None,
        )
        .expect("served from the cache");
        assert_eq!(
            key,
            WatchKey::new(
                None,
                "/api/v1/namespaces/n/configmaps",
                Some("app=x"),
                None,
                false
            )
        );
        let meta = list(
            "/apis/apps/v1/deployments?resourceVersion=0&resourceVersionMatch=NotOlderThan",
            Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        )
        .expect("served from the cache");
        assert!(meta.metadata_only);
        for (uri, accept) in [
            ("/api/v1/namespaces/n/configmaps", None),
            ("/api/v1/namespaces/n/configmaps?resourceVersion=", None),
            ("/api/v1/namespaces/n/configmaps?resourceVersion=12", None),
            (
                "/api/v1/namespaces/n/configmaps?resourceVersion=0&continue=abc",
                None,
            ),
            (
                "/api/v1/namespaces/n/configmaps?resourceVersion=0&resourceVersionMatch=Exact",
                None,
            ),
            (
                "/api/v1/namespaces/n/configmaps?resourceVersion=0&watch=true",
                None,
            ),
            (
                "/api/v1/namespaces/n/configmaps?resourceVersion=0&pretty=true",
                None,
            ),
            ("/api/v1/namespaces/n/configmaps/a?resourceVersion=0", None),
            ("/api/v1/namespaces/n/pods/p/log?resourceVersion=0", None),
            ("/api?resourceVersion=0", None),
            (
                "/api/v1/namespaces/n/configmaps?resourceVersion=0",
                Some("application/json;as=Table;v=v1;g=meta.k8s.io"),
            ),
            (
                "/api/v1/namespaces/n/configmaps?resourceVersion=0",
                Some("application/yaml"),
            ),
        ] {
            assert_eq!(list(uri, accept), None, "{uri} {accept:?}");
        }
        assert_eq!(
            list_as(
                http::Method::DELETE,
                "/api/v1/namespaces/n/configmaps?resourceVersion=0",
                None
            ),
            None
        );
    }

    #[test]
    fn start_points() {
        assert_eq!(StartAt::parse(""), Some(StartAt::Now));
        assert_eq!(StartAt::parse("0"), Some(StartAt::Now));
        assert_eq!(StartAt::parse("123"), Some(StartAt::After(123)));
        assert_eq!(StartAt::parse("abc"), None);
        assert_eq!(StartAt::parse("-1"), None);
    }

    fn watch(rv: &str, send_initial_events: bool, bookmarks: bool) -> WatchRequest {
        WatchRequest {
            path: "/api/v1/configmaps".into(),
            label_selector: None,
            field_selector: None,
            timeout_seconds: None,
            bookmarks,
            send_initial_events,
            resource_version: rv.into(),
            metadata_only: false,
        }
    }

    #[test]
    fn streaming_lists_start_from_a_state_not_older_than_their_resource_version() {
        let stream = |rv| StartAt::of_watch(&watch(rv, true, true));
        assert_eq!(stream("0"), Some(StartAt::Stream(Freshness::Any)));
        assert_eq!(stream(""), Some(StartAt::Stream(Freshness::Consistent)));
        assert_eq!(stream("42"), Some(StartAt::Stream(Freshness::AtLeast(42))));
        assert_eq!(stream("x"), None);
        assert_eq!(
            StartAt::of_watch(&watch("0", true, false)),
            None,
            "no end bookmark without bookmarks: upstream"
        );
        assert_eq!(
            StartAt::of_watch(&watch("7", false, true)),
            Some(StartAt::After(7))
        );
        assert_eq!(
            StartAt::of_watch(&watch("", false, false)),
            Some(StartAt::Now)
        );
        assert_eq!(StartAt::After(7).list_hint(), Some(7));
        assert_eq!(StartAt::Stream(Freshness::AtLeast(7)).list_hint(), None);
    }
}
