// kube: in-cluster config through the cluster DNS name, with the pod's token and certificates.
use kube::{Client, Config};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::incluster_dns()?;
    let _client = Client::try_from(config)?;
    Ok(())
}
