//! The metrics endpoint: a small HTTP/1 server (hyper) answering `GET /metrics` with the
//! host's [`Metrics`](crate::metrics::Metrics) in the Prometheus text format, and 404 for
//! any other path. Started with `--metrics-addr` or the manifest's `metricsAddr`.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::runtime::host::Host;

/// The content type of the exposition (OpenMetrics text, which Prometheus scrapes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Binds `addr`.
///
/// # Errors
/// If the address cannot be bound (in use, not local, no permission).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves `host`'s metrics on `listener` until the task is dropped. A connection that fails
/// is logged and dropped; the server goes on.
pub async fn serve(listener: TcpListener, host: Host) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                tracing::warn!("metrics endpoint: accept failed: {err}");
                continue;
            }
        };
        let host = host.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let host = host.clone();
                async move { Ok::<_, Infallible>(respond(&host, request.uri().path())) }
            });
            if let Err(err) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!("metrics endpoint: connection from {peer}: {err}");
            }
        });
    }
}

fn respond(host: &Host, path: &str) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::new(Full::new(Bytes::new()));
    if path != "/metrics" {
        *response.status_mut() = http::StatusCode::NOT_FOUND;
        return response;
    }
    host.refresh_cache_metrics();
    *response.body_mut() = Full::new(Bytes::from(host.metrics().encode()));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(CONTENT_TYPE),
    );
    response
}
