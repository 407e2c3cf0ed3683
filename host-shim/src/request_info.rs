//! What a request to the API server does, in authorization terms: the Kubernetes
//! `RequestInfo` (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`), computed the way
//! the apiserver computes it, so the host's [`permissions`](crate::permissions) judge a
//! request exactly as RBAC would.
//!
//! - `/api/v1/...` is the core group (`""`), `/apis/<group>/<version>/...` a named group;
//!   every other path (`/api`, `/apis`, `/apis/<group>`, `/version`, `/healthz`, `/openapi/v2`,
//!   …) is a non-resource URL.
//! - `/…/watch/…` (the deprecated watch prefix) makes the verb `watch`.
//! - `namespaces/<ns>/<resource>/…` sets the namespace; `namespaces/<ns>/status` and
//!   `namespaces/<ns>/finalize` are subresources of the namespace itself.
//! - The verb comes from the method: `POST` create, `GET`/`HEAD` get, `PUT` update, `PATCH`
//!   patch, `DELETE` delete; a `get` without a name is `list`, a `list` (or `get`) with
//!   `watch=true` is `watch`, a `delete` without a name is `deletecollection`.

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
    /// Anything else: discovery (`/api`, `/apis`, `/apis/<group>`, …), `/version`,
    /// `/healthz`, `/openapi/…`. Carries the path.
    NonResource(String),
}

/// Namespace subresources: `namespaces/<ns>/status` is the `status` subresource of the
/// namespace, not a resource called `status` inside it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl RequestInfo {
    /// The `RequestInfo` of a request with `method` to `path_and_query` (a path relative to
    /// the API server root, with an optional query).
    pub fn of(method: &http::Method, path_and_query: &str) -> Self {
        let (path, query) = match path_and_query.split_once('?') {
            Some((path, query)) => (path, query),
            None => (path_and_query, ""),
        };
        let non_resource = || RequestInfo::NonResource(path.to_owned());
        let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return non_resource();
        }
        // /api/<version>/... or /apis/<group>/<version>/...; at least one part after that.
        let (api_group, api_version) = match parts.first().copied() {
            Some("api") if parts.len() >= 3 => {
                let version = parts[1];
                parts.drain(..2);
                (String::new(), version)
            }
            Some("apis") if parts.len() >= 4 => {
                let (group, version) = (parts[1], parts[2]);
                parts.drain(..3);
                (group.to_owned(), version)
            }
            _ => return non_resource(),
        };
        let mut verb = match *method {
            http::Method::POST => "create".to_owned(),
            http::Method::GET | http::Method::HEAD => "get".to_owned(),
            http::Method::PUT => "update".to_owned(),
            http::Method::PATCH => "patch".to_owned(),
            http::Method::DELETE => "delete".to_owned(),
            ref other => other.as_str().to_ascii_lowercase(),
        };
        if parts.first() == Some(&"watch") {
            verb = "watch".to_owned();
            parts.remove(0);
        }
        let mut namespace = String::new();
        if parts.first() == Some(&"namespaces")
            && let Some(ns) = parts.get(1)
        {
            namespace = (*ns).to_owned();
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
                parts.drain(..2);
            }
        }
        let resource = parts.first().copied().unwrap_or_default().to_owned();
        let name = parts.get(1).copied().unwrap_or_default().to_owned();
        let subresource = parts.get(2).copied().unwrap_or_default().to_owned();
        if resource.is_empty() {
            return non_resource();
        }
        if (verb == "get" || verb == "list") && watch_requested(query) {
            verb = "watch".to_owned();
        } else if verb == "get" && name.is_empty() {
            verb = "list".to_owned();
        } else if verb == "delete" && name.is_empty() {
            verb = "deletecollection".to_owned();
        }
        RequestInfo::Resource(ResourceRequest {
            verb,
            api_group,
            api_version: api_version.to_owned(),
            resource,
            subresource,
            namespace,
            name,
        })
    }
}

/// Whether the query has `watch` set to a true value, as Go's `strconv.ParseBool` reads it
/// (`1`, `t`, `T`, `TRUE`, `true`, `True`).
fn watch_requested(query: &str) -> bool {
    query.split('&').any(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        key == "watch" && matches!(value, "1" | "t" | "T" | "TRUE" | "true" | "True")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn resource(method: Method, uri: &str) -> ResourceRequest {
        match RequestInfo::of(&method, uri) {
            RequestInfo::Resource(r) => r,
            other => panic!("{method} {uri}: expected a resource request, got {other:?}"),
        }
    }

    #[test]
    fn verbs_follow_the_method_the_name_and_the_watch_parameter() {
        let ns = "/api/v1/namespaces/team-a/secrets";
        for (method, uri, verb) in [
            (Method::GET, format!("{ns}/s1"), "get"),
            (Method::HEAD, format!("{ns}/s1"), "get"),
            (Method::GET, ns.to_owned(), "list"),
            (Method::GET, format!("{ns}?labelSelector=a%3Db"), "list"),
            (
                Method::GET,
                format!("{ns}?watch=true&resourceVersion=1"),
                "watch",
            ),
            (Method::GET, format!("{ns}?watch=1"), "watch"),
            (Method::GET, format!("{ns}?watch=false"), "list"),
            (Method::GET, format!("{ns}/s1?watch=true"), "watch"),
            (
                Method::GET,
                "/api/v1/watch/namespaces/team-a/secrets".into(),
                "watch",
            ),
            (Method::POST, ns.to_owned(), "create"),
            (Method::PUT, format!("{ns}/s1"), "update"),
            (Method::PATCH, format!("{ns}/s1?fieldManager=m"), "patch"),
            (Method::DELETE, format!("{ns}/s1"), "delete"),
            (Method::DELETE, ns.to_owned(), "deletecollection"),
            (Method::OPTIONS, ns.to_owned(), "options"),
        ] {
            let info = resource(method.clone(), &uri);
            assert_eq!(info.verb, verb, "{method} {uri}");
            assert_eq!(
                (info.resource.as_str(), info.namespace.as_str()),
                ("secrets", "team-a"),
                "{method} {uri}"
            );
        }
    }

    #[test]
    fn groups_namespaces_names_and_subresources() {
        let d = resource(
            Method::PUT,
            "/apis/apps/v1/namespaces/ns/deployments/web/scale",
        );
        assert_eq!(
            (
                d.api_group.as_str(),
                d.api_version.as_str(),
                d.resource.as_str(),
                d.name.as_str(),
                d.subresource.as_str()
            ),
            ("apps", "v1", "deployments", "web", "scale")
        );
        assert_eq!(d.resource_path(), "deployments/scale");

        let log = resource(Method::GET, "/api/v1/namespaces/ns/pods/p/log?follow=true");
        assert_eq!(
            (log.verb.as_str(), log.resource_path().as_str()),
            ("get", "pods/log")
        );

        let all = resource(Method::GET, "/api/v1/pods");
        assert_eq!((all.verb.as_str(), all.namespace.as_str()), ("list", ""));

        let node = resource(Method::GET, "/api/v1/nodes/n1");
        assert_eq!(
            (node.resource.as_str(), node.name.as_str()),
            ("nodes", "n1")
        );

        // A namespace is a resource too; `status` and `finalize` are its subresources.
        let ns = resource(Method::GET, "/api/v1/namespaces/team-a");
        assert_eq!(
            (
                ns.resource.as_str(),
                ns.name.as_str(),
                ns.namespace.as_str()
            ),
            ("namespaces", "team-a", "team-a")
        );
        let status = resource(Method::PUT, "/api/v1/namespaces/team-a/status");
        assert_eq!(status.resource_path(), "namespaces/status");
        let list = resource(Method::GET, "/api/v1/namespaces");
        assert_eq!(
            (list.verb.as_str(), list.resource.as_str()),
            ("list", "namespaces")
        );

        let crd = resource(
            Method::GET,
            "/apis/example.com/v1/namespaces/ns/widgets?watch=true",
        );
        assert_eq!(
            (crd.verb.as_str(), crd.api_group.as_str()),
            ("watch", "example.com")
        );
    }

    #[test]
    fn discovery_and_other_paths_are_non_resource_urls() {
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/version",
            "/healthz",
            "/openapi/v2",
            "/",
            "/api//v1/pods",
        ] {
            assert_eq!(
                RequestInfo::of(&Method::GET, path),
                RequestInfo::NonResource(path.to_owned()),
                "{path}"
            );
        }
    }
}
