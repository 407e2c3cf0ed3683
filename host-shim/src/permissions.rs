//! Per-module permissions: an allowlist of verbs × resources, checked by the host before a
//! request leaves it (manifest field `permissions`).
//!
//! Rules match like RBAC `PolicyRule`s (`k8s.io/kubernetes/pkg/apis/rbac/v1/evaluation_helpers.go`):
//! a request is allowed if any rule has its verb, its API group and its resource:
//!
//! - `verbs`: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
//!   `deletecollection`, or `*` (any verb);
//! - `apiGroups`: `""` is the core group (the default when the field is left out), `*` any;
//! - `resources`: `secrets`, a subresource `pods/log`, `*` (any resource or subresource), or
//!   `*/scale` (that subresource of any resource). `pods` does not cover `pods/log`.
//!
//! A request on no API resource (discovery `/api`, `/apis`, `/apis/<group>`, `/version`,
//! `/openapi/…`, `/healthz`) is always allowed: clients need discovery, and it reveals no
//! object. A module without `permissions` may do anything its identity may.
//!
//! A denied request never reaches the API server: the guest receives the answer the API server
//! gives a forbidden request — `403` with a `Status` of reason `Forbidden` — so a kube client
//! in the guest returns `kube::Error::Api` with code 403.

use std::fmt;

use crate::request_info::{RequestInfo, ResourceRequest};

/// The verbs a rule may name (besides `*`).
pub const VERBS: [&str; 8] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// One allow rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Verbs it allows; `*` is any.
    pub verbs: Vec<String>,
    /// API groups it covers; `""` is the core group, `*` any.
    pub api_groups: Vec<String>,
    /// Resources it covers: `name`, `name/subresource`, `*`, `*/subresource`.
    pub resources: Vec<String>,
}

impl Rule {
    /// Whether this rule allows `request`.
    pub fn allows(&self, request: &ResourceRequest) -> bool {
        let any_or = |items: &[String], want: &str| items.iter().any(|i| i == "*" || i == want);
        any_or(&self.verbs, &request.verb)
            && any_or(&self.api_groups, &request.api_group)
            && self.resources.iter().any(|r| resource_matches(r, request))
    }
}

/// RBAC's `ResourceMatches`.
fn resource_matches(rule: &str, request: &ResourceRequest) -> bool {
    if rule == "*" || rule == request.resource_path() {
        return true;
    }
    !request.subresource.is_empty()
        && rule
            .strip_prefix("*/")
            .is_some_and(|sub| sub == request.subresource)
}

/// A module's allowlist: what it may do besides non-resource requests.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Permissions {
    /// The rules; a request is allowed if one of them allows it.
    pub rules: Vec<Rule>,
}

/// A request the permissions refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The module that made it.
    pub module: String,
    /// What it asked for.
    pub request: Box<ResourceRequest>,
}

impl Permissions {
    /// Checks a request of `module` with `method` to `path_and_query`.
    ///
    /// # Errors
    /// [`Denied`] if it is a resource request no rule allows.
    pub fn check(
        &self,
        module: &str,
        method: &http::Method,
        path_and_query: &str,
    ) -> Result<(), Denied> {
        match RequestInfo::of(method, path_and_query) {
            RequestInfo::NonResource(_) => Ok(()),
            RequestInfo::Resource(request) => {
                if self.rules.iter().any(|rule| rule.allows(&request)) {
                    Ok(())
                } else {
                    Err(Denied {
                        module: module.to_owned(),
                        request: Box::new(request),
                    })
                }
            }
        }
    }
}

impl fmt::Display for Denied {
    /// Worded like the apiserver's RBAC denial, naming the module:
    /// `module "m" may not list resource "secrets" in API group "" in the namespace "ns"
    /// (not in its host-shim permissions)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.request;
        write!(
            f,
            "module {:?} may not {} resource {:?} in API group {:?}",
            self.module,
            r.verb,
            r.resource_path(),
            r.api_group
        )?;
        if !r.namespace.is_empty() {
            write!(f, " in the namespace {:?}", r.namespace)?;
        }
        f.write_str(" (not in its host-shim permissions)")
    }
}

impl Denied {
    /// The `Status` the API server answers a forbidden request with (code 403, reason
    /// `Forbidden`, details naming the object and resource), as JSON.
    pub fn status_body(&self) -> Vec<u8> {
        let r = &self.request;
        let mut details = serde_json::json!({"kind": r.resource});
        if !r.name.is_empty() {
            details["name"] = r.name.clone().into();
        }
        if !r.api_group.is_empty() {
            details["group"] = r.api_group.clone().into();
        }
        let status = serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": "Forbidden",
            "details": details,
            "code": 403,
        });
        status.to_string().into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Rule {
        let own = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        Rule {
            verbs: own(verbs),
            api_groups: own(groups),
            resources: own(resources),
        }
    }

    fn allowed(p: &Permissions, method: Method, uri: &str) -> bool {
        p.check("m", &method, uri).is_ok()
    }

    #[test]
    fn rules_match_verb_group_and_resource() {
        let p = Permissions {
            rules: vec![
                rule(&["get", "list", "watch"], &[""], &["configmaps"]),
                rule(&["patch"], &["apps"], &["deployments", "deployments/scale"]),
                rule(&["get"], &[""], &["pods/log"]),
            ],
        };
        let cms = "/api/v1/namespaces/a/configmaps";
        assert!(allowed(&p, Method::GET, cms));
        assert!(allowed(&p, Method::GET, &format!("{cms}/x")));
        assert!(allowed(&p, Method::GET, &format!("{cms}?watch=true")));
        assert!(!allowed(&p, Method::POST, cms), "create is not listed");
        assert!(!allowed(&p, Method::DELETE, cms), "deletecollection");
        assert!(!allowed(&p, Method::GET, "/api/v1/namespaces/a/secrets"));
        assert!(!allowed(
            &p,
            Method::GET,
            "/api/v1/namespaces/a/secrets?watch=1"
        ));
        let deploy = "/apis/apps/v1/namespaces/a/deployments/web";
        assert!(allowed(&p, Method::PATCH, deploy));
        assert!(allowed(&p, Method::PATCH, &format!("{deploy}/scale")));
        assert!(!allowed(&p, Method::PATCH, &format!("{deploy}/status")));
        assert!(
            !allowed(
                &p,
                Method::PATCH,
                "/apis/extensions/v1beta1/namespaces/a/deployments/web"
            ),
            "another group"
        );
        assert!(allowed(&p, Method::GET, "/api/v1/namespaces/a/pods/p/log"));
        assert!(
            !allowed(&p, Method::GET, "/api/v1/namespaces/a/pods/p"),
            "pods/log does not cover pods"
        );
    }

    #[test]
    fn wildcards() {
        let p = Permissions {
            rules: vec![
                rule(&["*"], &[""], &["configmaps"]),
                rule(&["get"], &["*"], &["*/status"]),
                rule(&["list"], &["batch"], &["*"]),
            ],
        };
        assert!(allowed(
            &p,
            Method::DELETE,
            "/api/v1/namespaces/a/configmaps"
        ));
        assert!(allowed(
            &p,
            Method::GET,
            "/apis/apps/v1/namespaces/a/deployments/d/status"
        ));
        assert!(!allowed(
            &p,
            Method::GET,
            "/apis/apps/v1/namespaces/a/deployments/d"
        ));
        assert!(allowed(&p, Method::GET, "/apis/batch/v1/namespaces/a/jobs"));
        assert!(!allowed(
            &p,
            Method::GET,
            "/apis/batch/v1/namespaces/a/jobs/j"
        ));
    }

    #[test]
    fn non_resource_requests_are_always_allowed() {
        let none = Permissions::default();
        for path in ["/api", "/apis", "/apis/apps/v1", "/version", "/openapi/v2"] {
            assert!(allowed(&none, Method::GET, path), "{path}");
        }
        assert!(!allowed(&none, Method::GET, "/api/v1/namespaces"));
    }

    #[test]
    fn a_denial_is_a_forbidden_status_naming_module_verb_and_resource() {
        let denied = Permissions::default()
            .check("mirror", &Method::GET, "/api/v1/namespaces/a/secrets")
            .expect_err("denied");
        let message = denied.to_string();
        assert_eq!(
            message,
            "module \"mirror\" may not list resource \"secrets\" in API group \"\" in the \
             namespace \"a\" (not in its host-shim permissions)"
        );
        let status: k8s_openapi::apimachinery::pkg::apis::meta::v1::Status =
            serde_json::from_slice(&denied.status_body()).expect("a Status");
        assert_eq!(status.code, Some(403));
        assert_eq!(status.reason.as_deref(), Some("Forbidden"));
        assert_eq!(status.message.as_deref(), Some(message.as_str()));
        let details = status.details.expect("details");
        assert_eq!(details.kind.as_deref(), Some("secrets"));
    }
}
