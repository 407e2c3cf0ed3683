//! HTTP/2 to the API server, as client-go does it: every module's requests and watches — of
//! every identity, since impersonation is a header — are streams on a few shared connections,
//! at most [`Http2Settings::max_streams_per_connection`] on each (kube-apiserver allows 100),
//! another connection opening when those are taken. Keep-alive pings find a dead connection
//! (client-go pings after 30 s without frames and gives up after 15 s).
//!
//! Auth and TLS stay kube's: the connector carries [`ConfigExt::rustls_client_config`] of the
//! host's kube `Config` (CA, client certificate, `tls-server-name`) and offers `h2` and
//! `http/1.1` by ALPN; [`Http2Pool::client`] puts kube's base-URI, retry, auth and
//! extra-header (impersonation) layers in front of the pool. An API server that does not
//! choose `h2`, a cluster reached through a proxy or over plain HTTP, and websocket upgrades
//! (kube-rs #1923) use kube's own HTTP/1.1 client, one connection per watch, as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::{Connection as _, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ConfigExt};
use tower::ServiceBuilder;
use tower::ServiceExt as _;
use tower::retry::RetryLayer;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How the shared HTTP/2 connections behave. The defaults are client-go's and
/// kube-apiserver's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http2Settings {
    /// Most concurrent streams (requests and watches) on one connection before another opens;
    /// fewer if the server's `SETTINGS_MAX_CONCURRENT_STREAMS` says so. Default 100, the
    /// limit of kube-apiserver. At least 1.
    pub max_streams_per_connection: usize,
    /// A ping is sent after this long without a frame from the server (default 30 s).
    pub keep_alive_interval: Duration,
    /// A connection whose ping goes unanswered this long is closed, failing its streams as a
    /// dropped HTTP/1.1 connection fails its watch (default 15 s).
    pub keep_alive_timeout: Duration,
    /// Bytes the server may send on one stream ahead of the host reading them (default
    /// 1 MiB). The connection's window is this times `max_streams_per_connection`, so a
    /// stream that is not read never holds up the others.
    pub stream_window_bytes: u32,
}

impl Default for Http2Settings {
    fn default() -> Self {
        Self {
            max_streams_per_connection: 100,
            keep_alive_interval: Duration::from_secs(30),
            keep_alive_timeout: Duration::from_secs(15),
            stream_window_bytes: 1 << 20,
        }
    }
}

/// The shared HTTP/2 connections to one API server. Cheap to clone; clones share the
/// connections. Also the innermost tower service of [`client`](Self::client)'s stack.
#[derive(Clone)]
pub struct Http2Pool {
    inner: Arc<Inner>,
}

struct Inner {
    connector: HttpsConnector<HttpConnector>,
    /// Scheme and authority of the cluster URL.
    endpoint: Uri,
    settings: Http2Settings,
    connect_timeout: Option<Duration>,
    state: Mutex<State>,
    /// Held while a connection opens, so a burst of new watches opens one, not one each.
    opening: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    protocol: Protocol,
    connections: Vec<Arc<Connection>>,
    /// When the last connection attempt failed, and why (cleared by a success).
    failed: Option<(std::time::Instant, String)>,
}

/// How long a failed connection attempt answers for the requests that waited on it.
const FAILURE_SHARED_FOR: Duration = Duration::from_secs(1);

/// What the API server chose by ALPN, once known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Protocol {
    #[default]
    Unknown,
    Http2,
    Http1,
}

struct Connection {
    sender: SendRequest<Body>,
    /// Streams open on it: reserved, waiting for a response head, or with a body not yet
    /// dropped.
    streams: AtomicUsize,
    /// Ours, or the server's advertised limit if lower; updated as the connection runs.
    max_streams: Arc<AtomicUsize>,
}

/// A reserved stream on a connection; returned when dropped (with the response body).
struct Slot {
    connection: Arc<Connection>,
    pool: Weak<Inner>,
}

/// How many connections the pool holds and how many streams are open on them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Http2Stats {
    /// Open HTTP/2 connections.
    pub connections: usize,
    /// Streams open on them (requests waiting for a response, and response bodies — watches
    /// — not yet dropped).
    pub streams: usize,
}

impl std::fmt::Debug for Http2Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http2Pool")
            .field("endpoint", &self.inner.endpoint)
            .field("settings", &self.inner.settings)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Http2Pool {
    /// A pool for the API server of `config`, opening no connection yet; `None` when the
    /// cluster URL is not `https` or a proxy is configured (kube's HTTP/1.1 client then
    /// serves every request).
    ///
    /// # Errors
    /// Whatever kube's [`ConfigExt::rustls_client_config`] refuses (bad certificates or
    /// keys), or a `tls-server-name` that is not a valid server name.
    pub fn for_config(
        config: &kube::Config,
        settings: Http2Settings,
    ) -> Result<Option<Self>, kube::Error> {
        let url = &config.cluster_url;
        if url.scheme() != Some(&http::uri::Scheme::HTTPS) || config.proxy_url.is_some() {
            return Ok(None);
        }
        let Some(authority) = url.authority() else {
            return Ok(None);
        };
        let endpoint = Uri::builder()
            .scheme(http::uri::Scheme::HTTPS)
            .authority(authority.clone())
            .path_and_query("/")
            .build()
            .map_err(kube::Error::HttpError)?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_connect_timeout(config.connect_timeout);
        tcp.set_nodelay(true);
        let mut builder = HttpsConnectorBuilder::new()
            .with_tls_config(config.rustls_client_config()?)
            .https_only();
        if let Some(name) = &config.tls_server_name {
            let name = name.clone().try_into().map_err(|err| {
                kube::Error::RustlsTls(kube::client::RustlsTlsError::InvalidServerName(err))
            })?;
            builder = builder.with_server_name_resolver(FixedServerNameResolver::new(name));
        }
        let connector = builder.enable_http1().enable_http2().wrap_connector(tcp);
        Ok(Some(Self {
            inner: Arc::new(Inner {
                connector,
                endpoint,
                settings: Http2Settings {
                    max_streams_per_connection: settings.max_streams_per_connection.max(1),
                    ..settings
                },
                // The TLS handshake is bounded by the same timeout as kube's connector's.
                connect_timeout: config.connect_timeout,
                state: Mutex::default(),
                opening: tokio::sync::Mutex::new(()),
            }),
        }))
    }

    /// kube's client stack for `config` — base URI, kube's retry policy if
    /// `config.default_retry`, auth, extra headers (`Impersonate-*`) — over this pool's
    /// connections. `config` must name this pool's API server and TLS settings; only its
    /// identity may differ.
    ///
    /// # Errors
    /// Whatever kube's auth or extra-header layers refuse (unreadable token file, invalid
    /// header value, …).
    pub fn client(&self, config: &kube::Config) -> Result<kube::Client, kube::Error> {
        let service = ServiceBuilder::new()
            .layer(config.base_uri_layer())
            .option_layer(
                config
                    .default_retry
                    .then(|| RetryLayer::new(RetryPolicy::server_retry())),
            )
            .option_layer(config.auth_layer()?)
            .layer(config.extra_headers_layer()?)
            .service(self.clone());
        Ok(kube::Client::new(service, config.default_namespace.clone()))
    }

    /// Whether requests should go over HTTP/2: on first use, opens a connection to learn
    /// whether the server chooses `h2` by ALPN, and remembers its answer. `false` (for now)
    /// if that connection fails; the next call tries again.
    pub async fn usable(&self) -> bool {
        match self.inner.protocol() {
            Protocol::Http2 => return true,
            Protocol::Http1 => return false,
            Protocol::Unknown => {}
        }
        let _opening = self.inner.opening.lock().await;
        match self.inner.protocol() {
            Protocol::Http2 => return true,
            Protocol::Http1 => return false,
            Protocol::Unknown => {}
        }
        match self.open_unless_just_failed().await {
            Ok(Some(connection)) => {
                let mut state = self.inner.lock();
                state.connections.push(connection);
                state.protocol = Protocol::Http2;
                true
            }
            Ok(None) => {
                self.inner.lock().protocol = Protocol::Http1;
                tracing::info!(
                    endpoint = %self.inner.endpoint,
                    "the API server did not choose HTTP/2: requests and watches use HTTP/1.1, \
                     one connection each"
                );
                false
            }
            Err(err) => {
                tracing::debug!(endpoint = %self.inner.endpoint, "cannot reach the API server over HTTP/2 yet: {err}");
                false
            }
        }
    }

    /// Whether `other` is this pool (a clone of it), sharing its connections.
    pub fn is(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Open connections and streams, now.
    pub fn stats(&self) -> Http2Stats {
        let state = self.inner.lock();
        let live = state.connections.iter().filter(|c| !c.sender.is_closed());
        live.fold(Http2Stats::default(), |stats, connection| Http2Stats {
            connections: stats.connections + 1,
            streams: stats.streams + connection.streams.load(Ordering::Acquire),
        })
    }

    async fn send(self, mut request: Request<Body>) -> Result<Response<StreamBody>, BoxError> {
        // A connection that closed after it was picked hands the request back unsent.
        for _ in 0..3 {
            let (mut sender, slot) = self.stream().await?;
            match sender.try_send_request(request).await {
                Ok(response) => {
                    return Ok(response.map(|body| StreamBody { body, _slot: slot }));
                }
                Err(mut err) => match err.take_message() {
                    Some(unsent) => request = unsent,
                    None => return Err(err.into_error().into()),
                },
            }
        }
        Err("no HTTP/2 connection to the API server took the request".into())
    }

    /// A stream on a connection with room, opening a connection if none has any.
    async fn stream(&self) -> Result<(SendRequest<Body>, Slot), BoxError> {
        if let Some(found) = self.reserve() {
            return Ok(found);
        }
        let _opening = self.inner.opening.lock().await;
        if let Some(found) = self.reserve() {
            return Ok(found);
        }
        let connection = self
            .open_unless_just_failed()
            .await?
            .ok_or("the API server no longer chooses HTTP/2")?;
        let found = self
            .reserve_on(&connection)
            .ok_or("a new HTTP/2 connection has no room for a stream")?;
        self.inner.lock().connections.push(connection);
        Ok(found)
    }

    fn reserve(&self) -> Option<(SendRequest<Body>, Slot)> {
        let mut state = self.inner.lock();
        state.connections.retain(|c| !c.sender.is_closed());
        state
            .connections
            .iter()
            .find_map(|connection| self.reserve_on(connection))
    }

    fn reserve_on(&self, connection: &Arc<Connection>) -> Option<(SendRequest<Body>, Slot)> {
        let max = connection.max_streams.load(Ordering::Acquire);
        connection
            .streams
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        let slot = Slot {
            connection: connection.clone(),
            pool: Arc::downgrade(&self.inner),
        };
        Some((connection.sender.clone(), slot))
    }

    /// [`open`](Self::open), called holding the opening lock — unless the attempt before
    /// failed within [`FAILURE_SHARED_FOR`]: then its error, at once. During an outage the
    /// requests that queued for the lock fail together, as each would over its own HTTP/1.1
    /// connection, instead of one connect timeout after another.
    async fn open_unless_just_failed(&self) -> Result<Option<Arc<Connection>>, BoxError> {
        if let Some((at, why)) = &self.inner.lock().failed
            && at.elapsed() < FAILURE_SHARED_FOR
        {
            return Err(why.clone().into());
        }
        let opened = Box::pin(self.open()).await;
        self.inner.lock().failed = match &opened {
            Err(err) => Some((std::time::Instant::now(), err.to_string())),
            Ok(_) => None,
        };
        opened
    }

    /// Connects and handshakes; `None` if the server chose HTTP/1.1. Its future is large
    /// (TLS and HTTP/2 handshakes): callers box it, so the futures of requests and watches
    /// do not keep room for it.
    async fn open(&self) -> Result<Option<Arc<Connection>>, BoxError> {
        let connecting = self
            .inner
            .connector
            .clone()
            .oneshot(self.inner.endpoint.clone());
        let io = match self.inner.connect_timeout {
            Some(limit) => tokio::time::timeout(limit, connecting)
                .await
                .map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("connecting to the API server timed out after {limit:?}"),
                    )
                })??,
            None => connecting.await?,
        };
        if !io.connected().is_negotiated_h2() {
            return Ok(None);
        }
        let settings = self.inner.settings;
        let most = settings.max_streams_per_connection;
        let window = settings
            .stream_window_bytes
            .saturating_mul(u32::try_from(most).unwrap_or(u32::MAX));
        let (sender, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .keep_alive_interval(settings.keep_alive_interval)
            .keep_alive_timeout(settings.keep_alive_timeout)
            .keep_alive_while_idle(true)
            .initial_max_send_streams(most)
            .initial_stream_window_size(settings.stream_window_bytes)
            .initial_connection_window_size(window)
            .handshake(io)
            .await?;
        let max_streams = Arc::new(AtomicUsize::new(most));
        let advertised = max_streams.clone();
        let endpoint = self.inner.endpoint.clone();
        let mut connection = Box::pin(connection);
        tokio::spawn(async move {
            let ended = std::future::poll_fn(|cx| {
                let poll = connection.as_mut().poll(cx);
                advertised.store(
                    most.min(connection.current_max_send_streams()),
                    Ordering::Release,
                );
                poll
            })
            .await;
            match ended {
                Ok(()) => tracing::debug!(%endpoint, "HTTP/2 connection closed"),
                Err(err) => tracing::debug!(%endpoint, "HTTP/2 connection failed: {err}"),
            }
        });
        Ok(Some(Arc::new(Connection {
            sender,
            streams: AtomicUsize::new(0),
            max_streams,
        })))
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn protocol(&self) -> Protocol {
        self.lock().protocol
    }

    /// Closes every connection without streams but the first: one stays ready for the next
    /// request.
    fn close_idle(&self) {
        let mut state = self.lock();
        let mut kept_idle = false;
        state.connections.retain(|connection| {
            if connection.sender.is_closed() {
                return false;
            }
            if connection.streams.load(Ordering::Acquire) > 0 {
                return true;
            }
            !std::mem::replace(&mut kept_idle, true)
        });
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.connection.streams.fetch_sub(1, Ordering::AcqRel) == 1
            && let Some(pool) = self.pool.upgrade()
        {
            pool.close_idle();
        }
    }
}

impl tower::Service<Request<Body>> for Http2Pool {
    type Response = Response<StreamBody>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        Box::pin(self.clone().send(request))
    }
}

/// A response body that holds its stream's place on the connection until dropped.
pub struct StreamBody {
    body: Incoming,
    _slot: Slot,
}

impl http_body::Body for StreamBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str) -> kube::Config {
        kube::Config::new(url.parse().expect("a url"))
    }

    #[test]
    fn plain_http_and_proxied_clusters_keep_http1() {
        let settings = Http2Settings::default();
        let plain = Http2Pool::for_config(&config("http://127.0.0.1:8001"), settings);
        assert!(plain.expect("no error").is_none());
        let mut proxied = config("https://10.0.0.1:6443");
        proxied.proxy_url = Some("http://proxy:3128".parse().expect("a url"));
        let proxied = Http2Pool::for_config(&proxied, settings);
        assert!(proxied.expect("no error").is_none());
    }

    #[tokio::test]
    async fn a_new_pool_holds_no_connection_and_at_least_one_stream_each() {
        let settings = Http2Settings {
            max_streams_per_connection: 0,
            ..Http2Settings::default()
        };
        let pool = Http2Pool::for_config(&config("https://127.0.0.1:6443"), settings)
            .expect("no error")
            .expect("https gets a pool");
        assert_eq!(pool.stats(), Http2Stats::default());
        assert_eq!(pool.inner.settings.max_streams_per_connection, 1);
    }

    #[tokio::test]
    async fn requests_waiting_on_a_failed_connection_share_its_failure() {
        // A server that accepts TCP connections and never answers the TLS handshake.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                held.push(socket);
            }
        });
        let mut silent = config(&format!("https://127.0.0.1:{port}"));
        silent.connect_timeout = Some(Duration::from_millis(200));
        let pool = Http2Pool::for_config(&silent, Http2Settings::default())
            .expect("no error")
            .expect("a pool");
        let waiting = futures::future::join_all((0..4).map(|_| pool.usable())).await;
        assert_eq!(waiting, [false; 4]);
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "one timed-out attempt answered the four"
        );
        tokio::time::sleep(FAILURE_SHARED_FOR).await;
        assert!(!pool.usable().await);
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "later, another attempt");
    }

    #[tokio::test]
    async fn an_unreachable_server_leaves_the_protocol_unknown() {
        // Port 1 on loopback refuses connections.
        let pool = Http2Pool::for_config(&config("https://127.0.0.1:1"), Http2Settings::default())
            .expect("no error")
            .expect("a pool");
        assert!(!pool.usable().await);
        assert_eq!(pool.inner.protocol(), Protocol::Unknown);
        assert_eq!(pool.stats().connections, 0);
    }
}
