//! Module identities: a module with a `serviceAccount` acts as that ServiceAccount. The host
//! builds one kube `Client` per distinct account from its own `kube::Config` with
//! `auth_info.impersonate` set to `system:serviceaccount:<namespace>:<name>`, so kube's client
//! sends `Impersonate-User` on every request of those modules (the API server then adds the
//! account's groups `system:serviceaccounts` and `system:serviceaccounts:<namespace>`).
//! The host's own identity needs the RBAC verb `impersonate` on `serviceaccounts`.
//! Guests never see any credential, and their own `Impersonate-*` headers are dropped
//! (see [`crate::upstream::client::build_http_request`]). Impersonation being a header, every
//! identity sends over the same shared HTTP/2 connections, as client-go's impersonating clients
//! share a transport.

use std::collections::HashMap;
use std::fmt;

use crate::upstream::client::Upstream;
use crate::upstream::http2::{Http2Pool, Http2Settings};

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
/// Clones share the accounts' clients.
#[derive(Debug, Clone)]
pub struct Identities {
    own: Upstream,
    /// The host's kube `Config`, from which a client for an account not built at start is
    /// made when a module first needs it (the operator's WasmControllers).
    base: Option<kube::Config>,
    /// The HTTP/2 connections every identity shares, if any.
    http2: Option<Http2Pool>,
    accounts: std::sync::Arc<std::sync::Mutex<HashMap<ServiceAccount, Upstream>>>,
}

impl Identities {
    /// Only the host's own identity.
    pub fn new(own: Upstream) -> Self {
        Self {
            own,
            base: None,
            http2: None,
            accounts: Default::default(),
        }
    }

    /// Builds the host's client from `config` and one impersonating client per account in
    /// `accounts` (duplicates share one); clients for other accounts are built from `config`
    /// when first asked for. With `http2`, all of them send over one [`Http2Pool`] (see
    /// [`Upstream::over`]); without, each over kube's HTTP/1.1 client. Must run inside a tokio
    /// runtime.
    ///
    /// # Errors
    /// Whatever [`kube::Client::try_from`] or [`Http2Pool::for_config`] refuse.
    pub fn from_config(
        config: kube::Config,
        accounts: impl IntoIterator<Item = ServiceAccount>,
        http2: Option<Http2Settings>,
    ) -> Result<Self, kube::Error> {
        let pool = match http2 {
            Some(settings) => Http2Pool::for_config(&config, settings)?,
            None => None,
        };
        let identities = Self {
            base: Some(config.clone()),
            http2: pool.clone(),
            ..Self::new(Upstream::over(config, pool.as_ref())?)
        };
        for account in accounts {
            identities.build(&account)?;
        }
        Ok(identities)
    }

    fn build(&self, account: &ServiceAccount) -> Result<Option<Upstream>, kube::Error> {
        if let Some(known) = self.lock().get(account) {
            return Ok(Some(known.clone()));
        }
        let Some(base) = &self.base else {
            return Ok(None);
        };
        let mut config = base.clone();
        config.auth_info.impersonate = Some(account.user_name());
        config.auth_info.impersonate_groups = None;
        let upstream = Upstream::over(config, self.http2.as_ref())?;
        self.lock().insert(account.clone(), upstream.clone());
        Ok(Some(upstream))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ServiceAccount, Upstream>> {
        self.accounts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds (or replaces) the upstream used for `account`.
    pub fn insert(&mut self, account: ServiceAccount, upstream: Upstream) {
        self.lock().insert(account, upstream);
    }

    /// The HTTP/2 connections every identity shares, if any.
    pub fn http2_pool(&self) -> Option<&Http2Pool> {
        self.http2.as_ref()
    }

    /// The host's own upstream.
    pub fn own(&self) -> &Upstream {
        &self.own
    }

    /// The upstream acting as `account` (`None`: the host's own), built on first use from
    /// the host's `Config` if the host has one; `None` if there is no client for that account
    /// and none can be built.
    pub fn upstream_for(&self, account: Option<&ServiceAccount>) -> Option<Upstream> {
        match account {
            None => Some(self.own.clone()),
            Some(account) => self.build(account).unwrap_or_else(|err| {
                tracing::error!("cannot build a client acting as {account}: {err}");
                None
            }),
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
        let ids = Identities::from_config(
            config,
            [a.clone(), b.clone(), a.clone()],
            Some(Http2Settings::default()),
        )
        .expect("clients");
        assert_eq!(ids.lock().len(), 2);
        let shared = ids.http2_pool().expect("an https cluster gets a pool");
        for upstream in [
            ids.own(),
            &ids.upstream_for(Some(&b)).expect("b's upstream"),
        ] {
            let pool = upstream
                .http2_pool()
                .expect("every identity sends over HTTP/2");
            assert!(
                pool.is(shared),
                "impersonated identities share the connections"
            );
        }
        assert!(ids.upstream_for(Some(&a)).is_some());
        assert!(ids.upstream_for(None).is_some());
        let c = ServiceAccount {
            namespace: "n".into(),
            name: "c".into(),
        };
        assert!(
            ids.upstream_for(Some(&c)).is_some(),
            "a client for another account is built on first use"
        );
        assert_eq!(ids.lock().len(), 3);
        let fixed = Identities::new(ids.own().clone());
        assert!(
            fixed.upstream_for(Some(&c)).is_none(),
            "without a Config, no client can be built"
        );
    }
}
