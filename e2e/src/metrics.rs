//! The host's metrics endpoint from a test: a free address to serve it on, and a scrape.

use std::io::{Read as _, Write as _};

/// A free loopback address (bound and released at once), for `--metrics-addr`.
pub fn free_local_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").to_string()
}

/// `GET /metrics` from the host's metrics endpoint at `addr`: the whole HTTP response (status
/// line, headers, Prometheus text). Panics unless the answer is `200`.
pub fn scrape(addr: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).expect("the metrics endpoint listens");
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .expect("request sent");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response read");
    assert!(response.starts_with("HTTP/1.0 200"), "{response}");
    response
}
