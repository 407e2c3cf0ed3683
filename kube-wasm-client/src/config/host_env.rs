//! The configuration the host hands to every module through WASI environment variables
//! (SPEC.md, "Environment").

use super::errors::{InClusterError, InferConfigError};
use std::env::VarError;

pub use kube_wasm_abi::env::{ENV_CLUSTER_URL, ENV_DEFAULT_NAMESPACE};

/// The namespace used when the host gives none (or an empty one), as kube does for a
/// kubeconfig context without a namespace.
pub(crate) const FALLBACK_NAMESPACE: &str = "default";

/// What the host's environment says, read through `lookup` (`std::env::var` in a guest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostEnv {
    /// The host's API server URL.
    pub cluster_url: http::Uri,
    /// The host's default namespace; [`FALLBACK_NAMESPACE`] when unset or empty.
    pub default_namespace: String,
}

impl HostEnv {
    /// Reads the process environment.
    pub(crate) fn from_process() -> Result<Self, InferConfigError> {
        Self::read(|name| std::env::var(name))
    }

    /// Reads the variables through `lookup`. The cluster URL is required (the host always
    /// sets it) and must parse; the namespace falls back to `default`.
    pub(crate) fn read(
        lookup: impl Fn(&str) -> Result<String, VarError>,
    ) -> Result<Self, InferConfigError> {
        let url = lookup(ENV_CLUSTER_URL).map_err(|e| {
            InferConfigError::new(ENV_CLUSTER_URL, InClusterError::ReadEnvironmentVariable(e))
        })?;
        let cluster_url = url.parse::<http::Uri>().map_err(|e| {
            InferConfigError::new(ENV_CLUSTER_URL, InClusterError::ParseClusterUrl(e))
        })?;
        let default_namespace = match lookup(ENV_DEFAULT_NAMESPACE) {
            Ok(ns) if !ns.is_empty() => ns,
            Ok(_) | Err(VarError::NotPresent) => FALLBACK_NAMESPACE.to_string(),
            Err(e) => {
                return Err(InferConfigError::new(
                    ENV_DEFAULT_NAMESPACE,
                    InClusterError::ReadEnvironmentVariable(e),
                ));
            }
        };
        Ok(Self {
            cluster_url,
            default_namespace,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<HostEnv, InferConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        HostEnv::read(|name| vars.get(name).cloned().ok_or(VarError::NotPresent))
    }

    #[test]
    fn reads_namespace_and_url() {
        let env = read(&[
            (ENV_CLUSTER_URL, "https://10.0.0.1:6443"),
            (ENV_DEFAULT_NAMESPACE, "team-a"),
        ])
        .expect("valid environment");
        assert_eq!(env.default_namespace, "team-a");
        assert_eq!(env.cluster_url, "https://10.0.0.1:6443/");
    }

    #[test]
    fn namespace_falls_back_to_default() {
        for vars in [
            &[(ENV_CLUSTER_URL, "https://k")][..],
            &[(ENV_CLUSTER_URL, "https://k"), (ENV_DEFAULT_NAMESPACE, "")][..],
        ] {
            assert_eq!(read(vars).expect("valid").default_namespace, "default");
        }
    }

    #[test]
    fn cluster_url_is_required_and_must_parse() {
        let missing = read(&[(ENV_DEFAULT_NAMESPACE, "a")]).expect_err("no url");
        assert_eq!(missing.variable(), ENV_CLUSTER_URL);
        assert!(matches!(
            std::error::Error::source(&missing).and_then(|s| s.downcast_ref::<InClusterError>()),
            Some(InClusterError::ReadEnvironmentVariable(
                VarError::NotPresent
            ))
        ));
        let bad = read(&[(ENV_CLUSTER_URL, "http://bad url")]).expect_err("bad url");
        assert!(bad.to_string().contains(ENV_CLUSTER_URL), "{bad}");
    }
}
