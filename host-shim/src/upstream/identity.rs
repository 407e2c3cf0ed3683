//! Module identities: a module with a `serviceAccount` acts as that ServiceAccount. The host
//! builds one kube `Client` per distinct account from its own `kube::Config` with
//! `auth_info.impersonate` set to `system:serviceaccount:<namespace>:<name>`, so kube's client
//! sends `Impersonate-User` on every request of those modules (the API server then adds the
//! account's groups `system:serviceaccounts` and `system:serviceaccounts:<namespace>`).
//! The host's own identity needs the RBAC verb `impersonate` on `serviceaccounts`.
//! Guests never see any credential, and their own `Impersonate-*` headers are dropped
//! (see [`crate::upstream::client::build_http_request`]).

use std::collections::HashMap;
use std::fmt;

use crate::upstream::client::Upstream;

/// A ServiceAccount a module acts as.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceAccount {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ServiceAccount {
    /// The user name the API server gives it: `system:serviceaccount:<namespace>:<name>`.
    pub fn user_name(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }
}

impl fmt::Display for ServiceAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The upstreams of the host: its own, and one impersonating each ServiceAccount in use.
#[derive(Debug, Clone)]
pub struct Identities {
    own: Upstream,
    accounts: HashMap<ServiceAccount, Upstream>,
}

impl Identities {
    /// Only the host's own identity.
    pub fn new(own: Upstream) -> Self {
        Self {
            own,
            accounts: HashMap::new(),
        }
    }

    /// Builds the host's client from `config` and one impersonating client per account in
    /// `accounts` (duplicates share one). Must run inside a tokio runtime.
    ///
    /// # Errors
    /// Whatever [`kube::Client::try_from`] refuses.
    pub fn from_config(
        config: kube::Config,
        accounts: impl IntoIterator<Item = ServiceAccount>,
    ) -> Result<Self, kube::Error> {
        let mut identities = Self::new(Upstream::from_config(config.clone())?);
        for account in accounts {
            if identities.accounts.contains_key(&account) {
                continue;
            }
            let mut config = config.clone();
            config.auth_info.impersonate = Some(account.user_name());
            config.auth_info.impersonate_groups = None;
            let upstream = Upstream::from_config(config)?;
            identities.accounts.insert(account, upstream);
        }
        Ok(identities)
    }

    /// Adds (or replaces) the upstream used for `account`.
    pub fn insert(&mut self, account: ServiceAccount, upstream: Upstream) {
        self.accounts.insert(account, upstream);
    }

    /// The host's own upstream.
    pub fn own(&self) -> &Upstream {
        &self.own
    }

    /// The upstream acting as `account` (`None`: the host's own), or `None` if no client was
    /// built for that account.
    pub fn upstream_for(&self, account: Option<&ServiceAccount>) -> Option<&Upstream> {
        match account {
            None => Some(&self.own),
            Some(account) => self.accounts.get(account),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_are_the_api_servers() {
        let sa = ServiceAccount {
            namespace: "team-a".into(),
            name: "mirror".into(),
        };
        assert_eq!(sa.user_name(), "system:serviceaccount:team-a:mirror");
        assert_eq!(sa.to_string(), "team-a/mirror");
    }

    #[tokio::test]
    async fn one_impersonating_client_per_account() {
        let config = kube::Config::new("https://127.0.0.1:6443".parse().expect("a url"));
        let a = ServiceAccount {
            namespace: "n".into(),
            name: "a".into(),
        };
        let b = ServiceAccount {
            namespace: "n".into(),
            name: "b".into(),
        };
        let ids =
            Identities::from_config(config, [a.clone(), b.clone(), a.clone()]).expect("clients");
        assert_eq!(ids.accounts.len(), 2);
        assert!(ids.upstream_for(Some(&a)).is_some());
        assert!(ids.upstream_for(None).is_some());
        let c = ServiceAccount {
            namespace: "n".into(),
            name: "c".into(),
        };
        assert!(ids.upstream_for(Some(&c)).is_none());
    }
}
