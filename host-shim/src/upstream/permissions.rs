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
//! A request is judged on its [`RequestInfo`], computed from the decoded URI exactly as the
//! API server computes it; a request the host cannot classify with certainty is denied
//! (whatever the rules, and for a module without rules too). Of the requests on no API
//! resource only discovery is allowed, to `GET` or `HEAD`: `/api`, `/api/<version>`, `/apis`,
//! `/apis/<group>`, `/apis/<group>/<version>`, `/version`, `/openapi` and below it,
//! `/healthz`, `/livez`, `/readyz` — what the API server's `system:discovery` and
//! `system:public-info-viewer` roles allow everyone. Clients need discovery, and it reveals
//! no object. A websocket upgrade to `pods/exec`, `pods/attach` or `pods/portforward` needs
//! `create` on it besides `get`, as kube-apiserver asks since KEP-4006. A module without
//! `permissions` may do anything else its identity may.
//!
//! A denied request never reaches the API server: the guest receives the answer the API server
//! gives a forbidden request — `403` with a `Status` of reason `Forbidden` — so a kube client
//! in the guest returns `kube::Error::Api` with code 403.

use std::fmt;

use crate::upstream::request_info::{RequestInfo, ResourceRequest};
use crate::upstream::request_uri::Unclassifiable;

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

/// A module's allowlist: what it may do besides discovery.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Permissions {
    /// The rules; a request is allowed if one of them allows it.
    pub rules: Vec<Rule>,
}

/// A request the host refuses to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The module that made it.
    pub module: String,
    /// Why.
    pub refusal: Refusal,
}

/// Why a request is denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A resource request no rule allows.
    NotPermitted(Box<ResourceRequest>),
    /// A request on no API resource that is not discovery.
    NotDiscovery {
        /// The lowercase method.
        verb: String,
        /// The decoded path.
        path: String,
    },
    /// A request the host cannot classify as the API server would.
    Unclassifiable {
        /// The method as the guest sent it.
        method: String,
        /// The URI as the guest sent it.
        uri: String,
        /// What is uncertain about it.
        reason: Unclassifiable,
    },
}

/// The subresources a websocket upgrade reaches with `GET`, for which kube-apiserver also
/// asks `create` (KEP-4006).
const WEBSOCKET_CREATE_SUBRESOURCES: [&str; 3] = ["exec", "attach", "portforward"];

impl Permissions {
    /// Checks a request of `module` classified as `info`.
    ///
    /// # Errors
    /// [`Denied`] if it is a resource request no rule allows, or a request on no resource
    /// that is not discovery.
    pub fn check(&self, module: &str, info: &RequestInfo) -> Result<(), Denied> {
        let refusal = match info {
            RequestInfo::NonResource { verb, path } if is_discovery(verb, path) => return Ok(()),
            RequestInfo::NonResource { verb, path } => Refusal::NotDiscovery {
                verb: verb.clone(),
                path: path.clone(),
            },
            RequestInfo::Resource(request) if self.allows(request) => return Ok(()),
            RequestInfo::Resource(request) => Refusal::NotPermitted(Box::new(request.clone())),
        };
        Err(Denied {
            module: module.to_owned(),
            refusal,
        })
    }

    /// Checks a websocket upgrade of `module` classified as `info`: as [`check`](Self::check),
    /// and an upgrade to `pods/exec`, `pods/attach` or `pods/portforward` also needs `create`
    /// on that subresource.
    ///
    /// # Errors
    /// [`Denied`] naming the first verb no rule allows.
    pub fn check_websocket(&self, module: &str, info: &RequestInfo) -> Result<(), Denied> {
        self.check(module, info)?;
        if let RequestInfo::Resource(request) = info
            && request.api_group.is_empty()
            && request.resource == "pods"
            && WEBSOCKET_CREATE_SUBRESOURCES.contains(&request.subresource.as_str())
        {
            let create = RequestInfo::Resource(ResourceRequest {
                verb: "create".into(),
                ..request.clone()
            });
            self.check(module, &create)?;
        }
        Ok(())
    }

    fn allows(&self, request: &ResourceRequest) -> bool {
        self.rules.iter().any(|rule| rule.allows(request))
    }
}

/// Whether a request on no API resource is discovery, which every module may read.
fn is_discovery(verb: &str, path: &str) -> bool {
    let read = verb == "get" || verb == "head";
    let first = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    read && (matches!(first, "api" | "apis" | "openapi")
        || matches!(path, "/version" | "/healthz" | "/livez" | "/readyz"))
}

impl Denied {
    /// The denial of a request the host cannot classify.
    pub fn unclassifiable(module: &str, method: &str, uri: &str, reason: Unclassifiable) -> Self {
        Self {
            module: module.to_owned(),
            refusal: Refusal::Unclassifiable {
                method: method.to_owned(),
                uri: uri.to_owned(),
                reason,
            },
        }
    }
}

impl fmt::Display for Denied {
    /// Worded like the apiserver's RBAC denial, naming the module:
    /// `module "m" may not list resource "secrets" in API group "" in the namespace "ns"
    /// (not in its host-shim permissions)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = match &self.refusal {
            Refusal::NotPermitted(r) => r,
            Refusal::NotDiscovery { verb, path } => {
                return write!(
                    f,
                    "module {:?} may not {verb} path {path:?} (only discovery is allowed on no \
                     API resource)",
                    self.module
                );
            }
            Refusal::Unclassifiable {
                method,
                uri,
                reason,
            } => {
                return write!(
                    f,
                    "module {:?} may not {method} {uri:?}: the host cannot classify it as the \
                     API server would ({reason})",
                    self.module
                );
            }
        };
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
        let mut details = serde_json::json!({});
        if let Refusal::NotPermitted(r) = &self.refusal {
            details["kind"] = r.resource.clone().into();
            if !r.name.is_empty() {
                details["name"] = r.name.clone().into();
            }
            if !r.api_group.is_empty() {
                details["group"] = r.api_group.clone().into();
            }
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

    fn info(method: Method, uri: &str) -> RequestInfo {
        let uri = crate::upstream::request_uri::RequestUri::parse(uri).expect("a certain URI");
        RequestInfo::of(&method, &uri).expect("classified")
    }

    fn allowed(p: &Permissions, method: Method, uri: &str) -> bool {
        p.check("m", &info(method, uri)).is_ok()
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
    fn only_discovery_is_allowed_on_no_resource() {
        let none = Permissions::default();
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/version",
            "/openapi/v2",
            "/openapi/v3/apis/apps/v1",
            "/healthz",
            "/livez",
            "/readyz",
            "/api%2Fv1",
        ] {
            assert!(allowed(&none, Method::GET, path), "{path}");
            assert!(allowed(&none, Method::HEAD, path), "HEAD {path}");
            assert!(!allowed(&none, Method::POST, path), "POST {path}");
        }
        for path in [
            "/",
            "/metrics",
            "/logs/x",
            "/healthz/etcd",
            "/version/x",
            "/debug/pprof",
        ] {
            assert!(!allowed(&none, Method::GET, path), "{path}");
        }
        assert!(!allowed(&none, Method::GET, "/api/v1/namespaces"));
        assert!(
            !allowed(&none, Method::GET, "/api%2Fv1%2Fnamespaces%2Fa%2Fsecrets"),
            "an encoded path is judged decoded, as the API server routes it"
        );
    }

    #[test]
    fn a_websocket_to_exec_attach_or_portforward_also_needs_create() {
        let get_only = Permissions {
            rules: vec![rule(&["get"], &[""], &["pods/exec", "pods/log"])],
        };
        let both = Permissions {
            rules: vec![rule(
                &["get", "create"],
                &[""],
                &["pods/exec", "pods/portforward"],
            )],
        };
        let exec = info(Method::GET, "/api/v1/namespaces/a/pods/p/exec?command=ls");
        let forward = info(
            Method::GET,
            "/api/v1/namespaces/a/pods/p/portforward?ports=80",
        );
        let log = info(Method::GET, "/api/v1/namespaces/a/pods/p/log");
        assert!(get_only.check("m", &exec).is_ok(), "a plain get");
        let denied = get_only
            .check_websocket("m", &exec)
            .expect_err("needs create");
        assert!(denied.to_string().contains("may not create"), "{denied}");
        assert!(both.check_websocket("m", &exec).is_ok());
        assert!(both.check_websocket("m", &forward).is_ok());
        assert!(
            get_only.check_websocket("m", &log).is_ok(),
            "log needs no create"
        );
    }

    #[test]
    fn a_denial_is_a_forbidden_status_naming_module_verb_and_resource() {
        let denied = Permissions::default()
            .check("mirror", &info(Method::GET, "/api/v1/namespaces/a/secrets"))
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
