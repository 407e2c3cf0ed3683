//! A client's base path: the part of its [`Config::cluster_url`](crate::Config::cluster_url)'s
//! path beyond the host's own cluster URL, which every request's path is appended to — as
//! kube 5.0's client appends each request to its cluster URL, keeping that URL's path.
//!
//! The host sends a request to its API server with its own cluster URL's path in front
//! (kube's client does that on the host), so the guest must leave that part out: the base
//! path is `cluster_url`'s path with the host's path (`KUBE_WASM_CLUSTER_URL`'s, when the
//! environment has it) removed from its front, without a trailing `/`. A cluster URL as the
//! host gave it has an empty base path; `{host URL}/api/v1/nodes/n1/proxy` has
//! `/api/v1/nodes/n1/proxy`, through which kubelet requests reach node `n1` by the API
//! server's node proxy, natively and in a guest alike.

use crate::config::ENV_CLUSTER_URL;
use std::fmt;
use std::sync::Arc;

/// A path prefix: empty, or starting with `/` and not ending with one.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct BasePath(Option<Arc<str>>);

impl BasePath {
    /// The base path of a client configured with `cluster_url`, against the host's cluster
    /// URL from the environment (none outside a host, e.g. under the fake host in tests: then
    /// the whole path counts).
    pub(crate) fn of(cluster_url: &http::Uri) -> Self {
        let host = std::env::var(ENV_CLUSTER_URL)
            .ok()
            .and_then(|url| url.parse::<http::Uri>().ok());
        Self::relative(
            cluster_url,
            host.as_ref().map(http::Uri::path).unwrap_or("/"),
        )
    }

    /// The base path of `cluster_url` beyond `host_path`: `cluster_url`'s path with
    /// `host_path` taken off its front when it starts with it (segment-wise), trailing `/`s
    /// trimmed.
    fn relative(cluster_url: &http::Uri, host_path: &str) -> Self {
        let host = host_path.trim_end_matches('/');
        let path = cluster_url.path().trim_end_matches('/');
        let beyond = match path.strip_prefix(host) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
            _ => path,
        };
        if beyond.is_empty() {
            Self(None)
        } else {
            Self(Some(Arc::from(beyond)))
        }
    }

    /// The path to send for a request whose path and query is `path_and_query` (kube-core's
    /// builders make them absolute: `/api/v1/…`; a relative one gets a `/`).
    pub(crate) fn join(&self, path_and_query: Option<&str>) -> String {
        let base = self.0.as_deref().unwrap_or("");
        match path_and_query {
            Some(pq) if pq.starts_with('/') => format!("{base}{pq}"),
            Some(pq) => format!("{base}/{pq}"),
            None if base.is_empty() => "/".to_string(),
            None => base.to_string(),
        }
    }
}

impl fmt::Debug for BasePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.as_deref().unwrap_or(""), f)
    }
}

#[cfg(test)]
mod tests {
    use super::BasePath;

    fn relative(url: &str, host_path: &str) -> BasePath {
        BasePath::relative(&url.parse().expect("a URI"), host_path)
    }

    #[test]
    fn the_host_url_itself_has_no_base_path() {
        for (url, host) in [
            ("https://10.0.0.1:6443", "/"),
            ("https://10.0.0.1:6443/", "/"),
            ("https://rancher/k8s/clusters/c-1", "/k8s/clusters/c-1"),
            ("https://rancher/k8s/clusters/c-1/", "/k8s/clusters/c-1"),
        ] {
            let base = relative(url, host);
            assert_eq!(base, BasePath::default(), "{url} against {host}");
            assert_eq!(
                base.join(Some("/api/v1/pods?limit=1")),
                "/api/v1/pods?limit=1"
            );
        }
    }

    #[test]
    fn a_path_beyond_the_hosts_is_prepended() {
        let base = relative("https://10.0.0.1:6443/api/v1/nodes/n1/proxy/", "/");
        assert_eq!(
            base.join(Some("/containerLogs/ns/p/c?follow=true")),
            "/api/v1/nodes/n1/proxy/containerLogs/ns/p/c?follow=true"
        );
        let base = relative(
            "https://rancher/k8s/clusters/c-1/api/v1/nodes/n1/proxy",
            "/k8s/clusters/c-1",
        );
        assert_eq!(
            base.join(Some("/exec/ns/p/c?command=ls")),
            "/api/v1/nodes/n1/proxy/exec/ns/p/c?command=ls"
        );
        assert_eq!(base.join(None), "/api/v1/nodes/n1/proxy");
    }

    #[test]
    fn a_path_not_under_the_hosts_counts_whole() {
        // `/k8s/clusters/c-10` does not start with the segment `c-1`.
        let base = relative("https://rancher/k8s/clusters/c-10", "/k8s/clusters/c-1");
        assert_eq!(base.join(Some("/api")), "/k8s/clusters/c-10/api");
        // Another server's address keeps no path: its requests go to the host's server.
        let base = relative("https://localhost:10250", "/");
        assert_eq!(base.join(Some("/exec/ns/p/c")), "/exec/ns/p/c");
        assert_eq!(base.join(Some("relative?x=1")), "/relative?x=1");
        assert_eq!(base.join(None), "/");
    }
}
