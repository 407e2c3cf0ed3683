//! The API server, as the host reaches it: a `kube::Client` plus the request helpers that turn
//! ABI envelopes into `http::Request`s and kube errors into ABI [`OpError`]s.
//!
//! Nothing here handles credentials or TLS: every request goes through [`kube::Client::send`],
//! whose middleware adds the cluster URL, authentication and TLS exactly as for a native kube
//! controller — over the shared HTTP/2 connections of an [`Http2Pool`] when the API server
//! speaks HTTP/2, else over kube's own HTTP/1.1 client. `authorization` and `impersonate-*`
//! headers from the guest are dropped.

use std::error::Error as StdError;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{AUTHORIZATION, HeaderName, HeaderValue, PROXY_AUTHORIZATION, USER_AGENT};
use http::uri::PathAndQuery;
use http::{HeaderMap, Method};
use http_body_util::BodyExt;
use kube::client::Body;
use kube_core::params::WatchParams;
use kube_wasm_abi::{ErrorCode, HttpRequest, OpError, WatchRequest};

use crate::upstream::http2::Http2Pool;

/// The API server connection shared by every module: a kube client and what the guests are
/// told about it. Cheap to clone, and one pointer wide: every module, informer and op that
/// sends upstream holds one.
#[derive(Clone)]
pub struct Upstream(Arc<Clients>);

struct Clients {
    /// kube's own client, HTTP/1.1: websocket upgrades, and every request when HTTP/2 is off
    /// or the server does not choose it.
    client: kube::Client,
    /// The same identity's client over shared HTTP/2 connections, and their pool.
    http2: Option<(Http2Pool, kube::Client)>,
    cluster_url: String,
    default_namespace: String,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("cluster_url", &self.0.cluster_url)
            .field("default_namespace", &self.0.default_namespace)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    /// An upstream over an existing client. `cluster_url` is for information only (it is given
    /// to guests as `KUBE_WASM_CLUSTER_URL`); requests go wherever `client` sends them.
    pub fn new(client: kube::Client, cluster_url: impl Into<String>) -> Self {
        Self::with(client, None, cluster_url.into())
    }

    fn with(
        client: kube::Client,
        http2: Option<(Http2Pool, kube::Client)>,
        cluster_url: String,
    ) -> Self {
        let default_namespace = client.default_namespace().to_owned();
        Self(Arc::new(Clients {
            client,
            http2,
            cluster_url,
            default_namespace,
        }))
    }

    /// Builds kube's own client (auth, TLS, timeouts) from `config`, HTTP/1.1 only. Must run
    /// inside a tokio runtime.
    ///
    /// # Errors
    /// Whatever [`kube::Client::try_from`] refuses (bad TLS material, unsupported proxy, …).
    pub fn from_config(config: kube::Config) -> Result<Self, kube::Error> {
        Self::over(config, None)
    }

    /// Like [`from_config`](Self::from_config), sending requests and watches as streams of
    /// `pool`'s shared HTTP/2 connections (when the server chooses HTTP/2) with kube's layers
    /// for `config`'s identity; websocket upgrades stay on kube's HTTP/1.1 client. `pool` must
    /// be built from a `config` that differs at most in identity.
    ///
    /// # Errors
    /// As [`from_config`](Self::from_config), or whatever kube's auth and header layers refuse.
    pub fn over(config: kube::Config, pool: Option<&Http2Pool>) -> Result<Self, kube::Error> {
        let http2 = match pool {
            Some(pool) => Some((pool.clone(), pool.client(&config)?)),
            None => None,
        };
        let mut cluster_url = config.cluster_url.to_string();
        if config.cluster_url.path() == "/" && config.cluster_url.query().is_none() {
            // `http::Uri` shows `https://host:port` as `https://host:port/`; keep the
            // kubeconfig's spelling.
            cluster_url.truncate(cluster_url.trim_end_matches('/').len());
        }
        let client = kube::Client::try_from(config)?;
        Ok(Self::with(client, http2, cluster_url))
    }

    /// The shared HTTP/2 connections this upstream sends over, if any.
    pub fn http2_pool(&self) -> Option<&Http2Pool> {
        self.0.http2.as_ref().map(|(pool, _)| pool)
    }

    /// The API server URL, for information.
    pub fn cluster_url(&self) -> &str {
        &self.0.cluster_url
    }

    /// The default namespace of the kube config (context namespace, in-cluster namespace, or
    /// `default`).
    pub fn default_namespace(&self) -> &str {
        &self.0.default_namespace
    }

    /// Sends one request through kube's client and waits for the response head.
    ///
    /// # Errors
    /// An [`OpError`] of code `connect`, `timeout`, `invalid_request` or `internal` (see
    /// [`request_error`]) if no response arrived.
    pub async fn send(
        &self,
        request: http::Request<Body>,
    ) -> Result<http::Response<Body>, OpError> {
        let client = match &self.0.http2 {
            Some((pool, client)) if pool.usable().await => client,
            _ => &self.0.client,
        };
        // Boxed: kube's send future is kilobytes, and every watch's task would otherwise
        // keep room for it for as long as the watch lasts, not just until the response head.
        Box::pin(client.send(request)).await.map_err(request_error)
    }

    /// Like [`send`](Self::send), giving up after `timeout` (if any) without a response head.
    ///
    /// # Errors
    /// As [`send`](Self::send); `timeout` if no response head came within `timeout`.
    pub async fn send_within(
        &self,
        request: http::Request<Body>,
        timeout: Option<std::time::Duration>,
    ) -> Result<http::Response<Body>, OpError> {
        let Some(timeout) = timeout else {
            return self.send(request).await;
        };
        tokio::time::timeout(timeout, self.send(request))
            .await
            .unwrap_or_else(|_| {
                Err(OpError::new(
                    ErrorCode::Timeout,
                    format!("no response from the API server within {timeout:?}"),
                ))
            })
    }

    /// Opens a websocket through kube's [`kube::Client::connect`], which adds the upgrade
    /// headers and the channel subprotocols (v5, v4) and authenticates.
    ///
    /// # Errors
    /// The [`kube::Error`] of the upgrade: `Api` for a refused upgrade (403, 404, …), else a
    /// connection or handshake failure.
    pub async fn connect(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<kube::client::Connection, kube::Error> {
        self.0.client.connect(request).await
    }
}

/// Whether a guest may not set header `name`: every header that carries or asserts an
/// identity — `authorization`, `proxy-authorization`, `impersonate-*`, and the front proxy's
/// `x-remote-*` (user, group, extra) — since the host authenticates and chooses the identity,
/// the guest never does; and `user-agent`, which names the host replica that sent the request
/// (kube's client sets none of its own).
pub fn is_host_only_header(name: &HeaderName) -> bool {
    let name = name.as_str();
    name == AUTHORIZATION.as_str()
        || name == PROXY_AUTHORIZATION.as_str()
        || name == USER_AGENT.as_str()
        || name.starts_with("impersonate-")
        || name.starts_with("x-remote-")
}

/// Turns an `http_request` envelope and its body into a request relative to the API server
/// root. Drops every [host-only header](is_host_only_header): a guest cannot choose its
/// credentials or identity. The URI is as the guest wrote it; the permission check
/// (`Access::authorize`) normalises it.
///
/// # Errors
/// `invalid_request` for a bad method, a URI that is not a path (with optional query)
/// starting with `/`, or a bad header name or value.
pub fn build_http_request(
    req: &HttpRequest,
    body: Vec<u8>,
) -> Result<http::Request<Body>, OpError> {
    let method = Method::from_bytes(req.method.as_bytes())
        .map_err(|e| invalid(format!("bad method {:?}: {e}", req.method)))?;
    let path = relative_path(&req.uri)?;
    let mut headers = HeaderMap::new();
    for (name, value) in &req.headers {
        let name = HeaderName::from_str(name)
            .map_err(|e| invalid(format!("bad header name {name:?}: {e}")))?;
        if is_host_only_header(&name) {
            continue;
        }
        let value = HeaderValue::from_str(value)
            .map_err(|e| invalid(format!("bad value for header {name}: {e}")))?;
        headers.append(name, value);
    }
    let mut request = http::Request::new(Body::from(body));
    *request.method_mut() = method;
    *request.uri_mut() = http::Uri::from(path);
    *request.headers_mut() = headers;
    Ok(request)
}

/// Turns a `watch` envelope into the very request `kube_core::Request::watch` (or
/// `watch_metadata`) builds for the same parameters.
///
/// # Errors
/// `invalid_request` if `path` is not a path starting with `/` (a query is not allowed), or if
/// kube refuses the parameters (e.g. `send_initial_events` without `bookmarks`).
pub fn build_watch_request(req: &WatchRequest) -> Result<http::Request<Body>, OpError> {
    if !req.path.starts_with('/') || req.path.contains(['?', '#']) {
        return Err(invalid(format!(
            "watch path {:?} must be a collection path starting with `/`, without a query",
            req.path
        )));
    }
    let params = WatchParams {
        label_selector: req.label_selector.clone(),
        field_selector: req.field_selector.clone(),
        timeout: req.timeout_seconds,
        bookmarks: req.bookmarks,
        send_initial_events: req.send_initial_events,
    };
    let builder = kube_core::Request::new(req.path.clone());
    let request = if req.metadata_only {
        builder.watch_metadata(&params, &req.resource_version)
    } else {
        builder.watch(&params, &req.resource_version)
    }
    .map_err(|e| invalid(e.to_string()))?;
    // The URL kube built must still be a plain relative path.
    relative_path(&request.uri().to_string())?;
    Ok(request.map(Body::from))
}

fn relative_path(uri: &str) -> Result<PathAndQuery, OpError> {
    if !uri.starts_with('/') {
        return Err(invalid(format!(
            "uri {uri:?} must be a path relative to the API server root, starting with `/`"
        )));
    }
    PathAndQuery::from_str(uri).map_err(|e| invalid(format!("bad uri {uri:?}: {e}")))
}

fn invalid(message: String) -> OpError {
    OpError::new(ErrorCode::InvalidRequest, message)
}

/// Response headers as the ABI carries them: `(name, value)` pairs in order. A value that is
/// not UTF-8 is passed on lossily.
pub fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// Classifies a kube error that happened before a response arrived.
///
/// - an `http::Error` building the request → `invalid_request`;
/// - an authentication failure (token file, exec plugin, …) → `internal`;
/// - anything that timed out (kube's connect/read timeouts) → `timeout`;
/// - anything else (refused, DNS, TLS, hyper/service errors) → `connect`.
pub fn request_error(err: kube::Error) -> OpError {
    let message = error_chain(&err);
    let code = match &err {
        kube::Error::HttpError(_) | kube::Error::BuildRequest(_) => ErrorCode::InvalidRequest,
        kube::Error::Auth(_) => ErrorCode::Internal,
        _ if is_timeout(&err) => ErrorCode::Timeout,
        _ => ErrorCode::Connect,
    };
    OpError::new(code, message)
}

/// Classifies an error reading a response body that had started: always `stream`.
pub fn body_error(err: kube::Error) -> OpError {
    OpError::new(ErrorCode::Stream, error_chain(&err))
}

/// The error and its sources, joined with `: `.
pub fn error_chain(err: &(dyn StdError + 'static)) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

fn is_timeout(err: &(dyn StdError + 'static)) -> bool {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return true;
        }
        let text = e.to_string().to_ascii_lowercase();
        if text.contains("timed out") || text.contains("deadline has elapsed") {
            return true;
        }
        current = e.source();
    }
    false
}

/// Why a whole body could not be collected.
#[derive(Debug)]
pub enum CollectError {
    /// The body exceeded the limit (in bytes).
    TooLarge(usize),
    /// The caller had no room for the next chunk (see [`collect_body_within`]).
    NoRoom,
    /// Reading the body failed.
    Read(kube::Error),
}

impl From<CollectError> for OpError {
    fn from(err: CollectError) -> Self {
        match err {
            CollectError::TooLarge(limit) => OpError::new(
                ErrorCode::TooLarge,
                format!("response body exceeds the host's limit of {limit} bytes"),
            ),
            CollectError::NoRoom => OpError::new(
                ErrorCode::Internal,
                "no room for the response body in the host",
            ),
            CollectError::Read(e) => body_error(e),
        }
    }
}

/// Collects a whole response body of at most `limit` bytes.
///
/// # Errors
/// [`CollectError::TooLarge`] past `limit`, [`CollectError::Read`] if the stream breaks.
pub async fn collect_body(body: Body, limit: usize) -> Result<Bytes, CollectError> {
    collect_body_within(body, limit, |_| true).await
}

/// [`collect_body`], asking `room(n)` before keeping each chunk of `n` bytes (to take them
/// from a budget); the body is dropped as soon as it says no.
///
/// # Errors
/// As [`collect_body`]; [`CollectError::NoRoom`] when `room` said no.
pub async fn collect_body_within(
    mut body: Body,
    limit: usize,
    mut room: impl FnMut(usize) -> bool,
) -> Result<Bytes, CollectError> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(CollectError::Read)?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(CollectError::TooLarge(limit));
            }
            if !room(data.len()) {
                return Err(CollectError::NoRoom);
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_wasm_abi::ResponseMode;

    fn http(method: &str, uri: &str, headers: &[(&str, &str)]) -> HttpRequest {
        HttpRequest {
            method: method.into(),
            uri: uri.into(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).into(), (*v).into()))
                .collect(),
            response: ResponseMode::Whole,
        }
    }

    #[test]
    fn http_request_keeps_method_path_headers_and_drops_authorization() {
        let req = http(
            "PATCH",
            "/api/v1/namespaces/default/configmaps/a?fieldManager=m",
            &[
                ("Content-Type", "application/merge-patch+json"),
                ("Authorization", "Bearer stolen"),
                ("authorization", "Basic x"),
                ("Impersonate-User", "system:admin"),
                ("impersonate-group", "system:masters"),
                ("Proxy-Authorization", "Basic x"),
                ("X-Remote-User", "system:admin"),
                ("x-remote-group", "system:masters"),
                ("X-Remote-Extra-Scopes", "all"),
                ("User-Agent", "kube-wasm-host/0.1.0 (replica another)"),
            ],
        );
        let built = build_http_request(&req, b"{}".to_vec()).expect("valid");
        assert_eq!(built.method(), Method::PATCH);
        assert_eq!(
            built.uri(),
            "/api/v1/namespaces/default/configmaps/a?fieldManager=m"
        );
        assert_eq!(
            built.headers()["content-type"],
            "application/merge-patch+json"
        );
        assert!(built.headers().get(AUTHORIZATION).is_none());
        assert_eq!(built.headers().len(), 1, "{:?}", built.headers());
    }

    #[test]
    fn bad_requests_are_invalid_request_errors() {
        for req in [
            http("GE T", "/api", &[]),
            http("GET", "api/v1", &[]),
            http("GET", "https://evil.example/api", &[]),
            http("GET", "/api v1", &[]),
            http("GET", "/api", &[("bad header", "x")]),
            http("GET", "/api", &[("x-ok", "line\nbreak")]),
        ] {
            let err = build_http_request(&req, vec![]).expect_err(&format!("{req:?} is invalid"));
            assert_eq!(err.code, ErrorCode::InvalidRequest, "{req:?}");
        }
    }

    fn watch(path: &str) -> WatchRequest {
        WatchRequest {
            path: path.into(),
            label_selector: Some("app=x".into()),
            field_selector: None,
            timeout_seconds: None,
            bookmarks: true,
            send_initial_events: false,
            resource_version: "12345".into(),
            metadata_only: false,
        }
    }

    #[test]
    fn watch_request_is_what_kube_sends() {
        let req = watch("/api/v1/namespaces/default/configmaps");
        let built = build_watch_request(&req).expect("valid");
        let params = WatchParams::default().labels("app=x");
        let native = kube_core::Request::new("/api/v1/namespaces/default/configmaps")
            .watch(&params, "12345")
            .expect("kube builds it");
        assert_eq!(built.uri(), native.uri());
        assert_eq!(built.method(), native.method());
        assert!(built.uri().to_string().contains("timeoutSeconds=290"));

        let meta = build_watch_request(&WatchRequest {
            metadata_only: true,
            ..req
        })
        .expect("valid");
        let native = kube_core::Request::new("/api/v1/namespaces/default/configmaps")
            .watch_metadata(&params, "12345")
            .expect("kube builds it");
        assert_eq!(meta.uri(), native.uri());
        assert_eq!(meta.headers(), native.headers());
    }

    #[test]
    fn bad_watches_are_invalid_request_errors() {
        for req in [
            watch("api/v1/pods"),
            watch("/api/v1/pods?watch=1"),
            WatchRequest {
                send_initial_events: true,
                bookmarks: false,
                ..watch("/api/v1/pods")
            },
        ] {
            let err = build_watch_request(&req).expect_err("invalid");
            assert_eq!(err.code, ErrorCode::InvalidRequest, "{req:?}");
        }
    }

    #[test]
    fn errors_are_classified() {
        let timed_out = kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "connect timed out",
        )));
        assert_eq!(request_error(timed_out).code, ErrorCode::Timeout);
        let refused = kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        )));
        let err = request_error(refused);
        assert_eq!(err.code, ErrorCode::Connect);
        assert!(err.message.contains("refused"), "{}", err.message);
        let broken = kube::Error::Service("reset".into());
        assert_eq!(body_error(broken).code, ErrorCode::Stream);
    }
}
