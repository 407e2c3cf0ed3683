//! Registry credentials from Kubernetes pull secrets (`kubernetes.io/dockerconfigjson`, the
//! `.dockerconfigjson` key), as the kubelet reads `imagePullSecrets`: the first secret with an
//! entry for the image's registry wins. Read by the host, never given to a guest.

use std::collections::BTreeMap;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

/// The secret type of a dockerconfigjson pull secret.
pub const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";

/// The data key of a dockerconfigjson pull secret.
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";

/// One registry's entry of a docker config: `auth` (base64 `user:password`) or `username`
/// and `password`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
struct Entry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

#[derive(Debug, Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

/// A pull secret's content that is not a docker config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a dockerconfigjson: {0}")]
pub struct BadPullSecret(pub String);

/// The credentials for `registry` (`host[:port]`) in the docker config `json` (the decoded
/// value of a secret's `.dockerconfigjson`): `Some` if it has an entry for that registry,
/// keyed as `host[:port]`, `https://host[:port]` or `http://host[:port]` with any path.
///
/// # Errors
/// [`BadPullSecret`] if `json` is not a docker config, or the registry's entry has neither
/// a decodable `auth` nor `username` and `password`.
pub fn credentials_for(json: &[u8], registry: &str) -> Result<Option<RegistryAuth>, BadPullSecret> {
    let config: DockerConfig =
        serde_json::from_slice(json).map_err(|e| BadPullSecret(e.to_string()))?;
    let Some(entry) = config
        .auths
        .iter()
        .find(|(key, _)| registry_of(key) == registry)
        .map(|(_, entry)| entry)
    else {
        return Ok(None);
    };
    if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
        return Ok(Some(RegistryAuth::Basic(user.clone(), password.clone())));
    }
    let auth = entry
        .auth
        .as_deref()
        .ok_or_else(|| BadPullSecret(format!("the entry for {registry} has no credentials")))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .map_err(|e| BadPullSecret(format!("the auth of {registry} is not base64: {e}")))?;
    let text = String::from_utf8(decoded)
        .map_err(|_| BadPullSecret(format!("the auth of {registry} is not UTF-8")))?;
    let (user, password) = text
        .split_once(':')
        .ok_or_else(|| BadPullSecret(format!("the auth of {registry} is not `user:password`")))?;
    Ok(Some(RegistryAuth::Basic(
        user.to_owned(),
        password.to_owned(),
    )))
}

/// The `host[:port]` of a docker config key (`https://host:port/v1/` → `host:port`).
fn registry_of(key: &str) -> &str {
    let rest = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    rest.split('/').next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(auth: Option<RegistryAuth>) -> Option<(String, String)> {
        match auth {
            Some(RegistryAuth::Basic(u, p)) => Some((u, p)),
            _ => None,
        }
    }

    #[test]
    fn entries_are_found_by_registry_in_any_spelling() {
        let json = br#"{"auths": {
            "https://registry.example:5000/v1/": {"auth": "YWxpY2U6czNjcmV0"},
            "other.example": {"username": "bob", "password": "pw"}
        }}"#;
        assert_eq!(
            basic(credentials_for(json, "registry.example:5000").expect("valid")),
            Some(("alice".into(), "s3cret".into()))
        );
        assert_eq!(
            basic(credentials_for(json, "other.example").expect("valid")),
            Some(("bob".into(), "pw".into()))
        );
        assert!(
            credentials_for(json, "registry.example")
                .expect("valid")
                .is_none()
        );
    }

    #[test]
    fn broken_secrets_are_errors() {
        assert!(credentials_for(b"not json", "r").is_err());
        let no_colon = br#"{"auths": {"r": {"auth": "YWxpY2U="}}}"#;
        assert!(credentials_for(no_colon, "r").is_err());
        let not_base64 = br#"{"auths": {"r": {"auth": "%%%"}}}"#;
        assert!(credentials_for(not_base64, "r").is_err());
        let empty = br#"{"auths": {"r": {}}}"#;
        assert!(credentials_for(empty, "r").is_err());
    }
}
