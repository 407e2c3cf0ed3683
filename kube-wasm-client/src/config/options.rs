//! [`KubeConfigOptions`]: which kubeconfig context, cluster and user to load.

/// Options for [`Config::from_kubeconfig`](super::Config::from_kubeconfig), as kube's
/// `config::KubeConfigOptions`.
///
/// In a guest the host has already chosen the context (its own kubeconfig context or its
/// in-cluster identity); all fields must stay `None`, which is what `Default` gives.
#[derive(Default, Clone, Debug)]
pub struct KubeConfigOptions {
    /// The named context to load. Must be `None` in a guest.
    pub context: Option<String>,
    /// The cluster to load. Must be `None` in a guest.
    pub cluster: Option<String>,
    /// The user to load. Must be `None` in a guest.
    pub user: Option<String>,
}
