//! Where the host's kube `Config` comes from. Only kube's own loaders are used: credentials,
//! certificates and exec plugins are kube's business, never the host's.

use std::path::PathBuf;

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// How to find the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterSource {
    /// A kubeconfig file to read instead of kube's inference.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use instead of the current one.
    pub context: Option<String>,
}

impl ClusterSource {
    /// Loads the kube `Config`:
    /// - `--kubeconfig PATH` (with an optional `--context`): that file, through
    ///   [`Kubeconfig::read_from`] and [`kube::Config::from_custom_kubeconfig`];
    /// - only `--context`: the default kubeconfig (`KUBECONFIG`, `~/.kube/config`) with that
    ///   context;
    /// - neither: [`kube::Config::infer`] (kubeconfig, then in-cluster).
    ///
    /// # Errors
    /// When kube cannot load the configuration; the message names the source.
    pub async fn load(&self) -> anyhow::Result<kube::Config> {
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..KubeConfigOptions::default()
        };
        match (&self.kubeconfig, &self.context) {
            (Some(path), _) => {
                let kubeconfig = Kubeconfig::read_from(path)
                    .with_context(|| format!("reading kubeconfig {}", path.display()))?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .with_context(|| format!("loading kubeconfig {}", path.display()))
            }
            (None, Some(context)) => {
                kube::Config::from_kubeconfig(&options)
                    .await
                    .with_context(|| {
                        format!("loading context {context:?} from the default kubeconfig")
                    })
            }
            (None, None) => kube::Config::infer().await.context(
                "inferring the kube configuration (KUBECONFIG, ~/.kube/config, in-cluster)",
            ),
        }
    }
}
