//! The host's metrics endpoint: a free address to serve it on, and a scrape.

use anyhow::Context as _;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// A free loopback address (bound and released at once), for `--metrics-addr` or the
/// manifest's `metricsAddr`.
///
/// # Errors
/// If no loopback port can be bound.
pub fn free_local_addr() -> std::io::Result<SocketAddr> {
    TcpListener::bind("127.0.0.1:0")?.local_addr()
}

/// `GET /metrics` from the host's metrics endpoint at `addr`: the Prometheus text exposition
/// (the response body). Connecting may take 2 s, reading 5 s.
///
/// # Errors
/// If the endpoint does not answer in time, or answers other than `200`.
pub fn fetch(addr: SocketAddr) -> anyhow::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .with_context(|| format!("connecting to the host's metrics at {addr}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .context("reading the host's metrics")?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("the metrics response has no head")?;
    let status = head.lines().next().unwrap_or_default();
    anyhow::ensure!(
        status.split(' ').nth(1) == Some("200"),
        "the metrics endpoint answered {status:?}"
    );
    Ok(body.to_owned())
}

/// [`fetch`] from a test: the metrics at `addr` (`host:port`).
///
/// # Panics
/// If `addr` is not an address or the scrape fails.
pub fn scrape(addr: &str) -> String {
    let addr: SocketAddr = addr
        .parse()
        .unwrap_or_else(|e| panic!("{addr:?} is not an address: {e}"));
    fetch(addr).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The value of the sample `series` (a metric name with its labels as exposed, e.g.
/// `kube_wasm_replica_modules_owned`) in the exposition `text`, if it is there.
pub fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}
