// kube: impersonation overrides from KUBE_RS_DEBUG_IMPERSONATE_* applied to the credentials.
use kube::Config;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut config = Config::infer().await?;
    config.apply_debug_overrides();
    Ok(())
}
