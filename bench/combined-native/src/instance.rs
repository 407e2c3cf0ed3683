//! One controller instance of the combined process, and what its rewritten `main` asks of it
//! in place of its process: a `Client` defaulting to its namespace, its environment variables
//! and its arguments. The instance is a tokio task-local of the task running its `main`.

use std::collections::BTreeMap;
use std::env::VarError;

use kube::Client;
use kube::client::Body;

/// A controller to run: its kind, the namespace its `Client` defaults to (as its kubeconfig's
/// context namespace does for a native process), and environment variables of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The kind: the name of its native binary, e.g. `configmap-mirror`.
    pub kind: String,
    /// Its default namespace.
    pub namespace: String,
    /// Variables it reads before the process's own (as if set in its process's environment).
    pub env: BTreeMap<String, String>,
}

impl Spec {
    /// Parses `KIND@NAMESPACE[,KEY=VALUE…]`, e.g.
    /// `ring-controller@ring-3,RING_SOURCE=ring-3,RING_TARGET=ring-4`.
    ///
    /// # Errors
    /// A message if the kind, the namespace or a variable's name is missing.
    pub fn parse(text: &str) -> Result<Spec, String> {
        let mut parts = text.split(',');
        let head = parts.next().unwrap_or_default();
        let Some((kind, namespace)) = head.split_once('@') else {
            return Err(format!("{text:?}: expected KIND@NAMESPACE[,KEY=VALUE…]"));
        };
        if kind.is_empty() || namespace.is_empty() {
            return Err(format!("{text:?}: empty kind or namespace"));
        }
        let mut env = BTreeMap::new();
        for pair in parts {
            match pair.split_once('=') {
                Some((key, value)) if !key.is_empty() => {
                    env.insert(key.to_owned(), value.to_owned());
                }
                _ => return Err(format!("{text:?}: {pair:?} is not KEY=VALUE")),
            }
        }
        Ok(Spec {
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            env,
        })
    }
}

/// A running instance: its spec and the process's one shared client.
struct Instance {
    spec: Spec,
    shared: Client,
}

tokio::task_local! {
    static INSTANCE: Instance;
}

/// Runs `main` as the instance `spec`: within it, [`client`], [`var`] and [`args`] answer
/// for `spec`, and every client shares `shared`'s connection pool.
pub async fn run_as<F: Future>(spec: Spec, shared: Client, main: F) -> F::Output {
    INSTANCE.scope(Instance { spec, shared }, main).await
}

/// What `Client::try_default()` became: a client defaulting to the instance's namespace whose
/// requests go through the process's shared client (one connection pool, one TLS
/// configuration, as a hand-combined process would share one `Client`). Outside an instance,
/// `Client::try_default()` itself.
///
/// # Errors
/// Outside an instance, those of `Client::try_default()`; within one, none.
pub async fn client() -> kube::Result<Client> {
    let sharing = INSTANCE.try_with(|i| (i.shared.clone(), i.spec.namespace.clone()));
    match sharing {
        Ok((shared, namespace)) => Ok(through(shared, namespace)),
        Err(_) => Client::try_default().await,
    }
}

/// A client defaulting to `namespace` that sends every request through `shared`. kube's
/// `Client::send` unwraps a `kube::Error` coming back from the service, so errors are those
/// of `shared` itself.
fn through(shared: Client, namespace: String) -> Client {
    let service = tower::service_fn(move |request: http::Request<Body>| {
        let shared = shared.clone();
        async move { shared.send(request).await }
    });
    Client::new(service, namespace)
}

/// What `std::env::var` became: the instance's own variable, else the process's.
///
/// # Errors
/// As `std::env::var`: not present, or not Unicode.
pub fn var(key: &str) -> Result<String, VarError> {
    let own = INSTANCE.try_with(|i| i.spec.env.get(key).cloned());
    match own {
        Ok(Some(value)) => Ok(value),
        _ => std::env::var(key),
    }
}

/// What `std::env::args()` became: the instance's program name (its kind) and no arguments,
/// as the benchmark starts each native controller.
pub fn args() -> std::vec::IntoIter<String> {
    let kind = INSTANCE
        .try_with(|i| i.spec.kind.clone())
        .unwrap_or_else(|_| "combined-native".to_owned());
    vec![kind].into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_kind_at_namespace_with_optional_variables() {
        let spec = Spec::parse("ring-controller@ring-3,RING_SOURCE=ring-3,RING_TARGET=a=b")
            .expect("parses");
        assert_eq!(spec.kind, "ring-controller");
        assert_eq!(spec.namespace, "ring-3");
        assert_eq!(spec.env["RING_SOURCE"], "ring-3");
        assert_eq!(spec.env["RING_TARGET"], "a=b");
        assert_eq!(Spec::parse("store-reader@ns").expect("parses").env.len(), 0);
        for bad in [
            "store-reader",
            "@ns",
            "store-reader@",
            "x@ns,=v",
            "x@ns,novalue",
        ] {
            assert!(Spec::parse(bad).is_err(), "{bad}");
        }
    }

    fn offline_client() -> Client {
        let service = tower::service_fn(|_: http::Request<Body>| async {
            Err::<http::Response<Body>, kube::Error>(kube::Error::LinesCodecMaxLineLengthExceeded)
        });
        Client::new(service, "shared")
    }

    #[tokio::test]
    async fn within_an_instance_its_namespace_variables_and_name_answer() {
        let spec = Spec::parse("ring-controller@ring-3,RING_TARGET=ring-4").expect("parses");
        let (namespace, target, path, args) = run_as(spec, offline_client(), async {
            let client = client().await.expect("a client");
            (
                client.default_namespace().to_owned(),
                var("RING_TARGET"),
                var("PATH"),
                args().collect::<Vec<_>>(),
            )
        })
        .await;
        assert_eq!(namespace, "ring-3");
        assert_eq!(target, Ok("ring-4".to_owned()));
        assert_eq!(path, std::env::var("PATH"));
        assert_eq!(args, ["ring-controller"]);
        assert_eq!(var("RING_TARGET"), std::env::var("RING_TARGET"));
    }

    #[tokio::test]
    async fn an_instance_client_sends_through_the_shared_client_and_keeps_its_errors() {
        let spec = Spec::parse("x@ns").expect("parses");
        let error = run_as(spec, offline_client(), async {
            let client = client().await.expect("a client");
            client
                .send(http::Request::new(Body::empty()))
                .await
                .expect_err("the shared client fails")
        })
        .await;
        assert!(
            matches!(error, kube::Error::LinesCodecMaxLineLengthExceeded),
            "{error:?}"
        );
    }
}
