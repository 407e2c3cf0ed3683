//! `combined-native KIND@NAMESPACE[,KEY=VALUE…]…`: the benchmark's **combined native**
//! process. Every controller of the mixed fleet (`src/rewrite.rs` lists them) is compiled in,
//! unchanged but for its entry point; each argument runs one instance of one as a task of one
//! tokio runtime, defaulting to its namespace, all sharing one `Client`'s connection pool
//! (from `KUBECONFIG`, as `Client::try_default()` infers it). No isolation: this is what the
//! host's fleet is compared with when it gives up nothing.
//!
//! An instance whose `main` returns prints its error on stderr; the others go on. The process
//! ends on SIGTERM or SIGINT.

mod instance;
#[cfg(test)]
mod rewrite;

include!(concat!(env!("OUT_DIR"), "/controllers.rs"));

use anyhow::Context as _;
use instance::Spec;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let specs = std::env::args()
        .skip(1)
        .map(|arg| Spec::parse(&arg).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(
        !specs.is_empty(),
        "usage: combined-native KIND@NAMESPACE[,KEY=VALUE…]…"
    );
    let mut controllers = Vec::with_capacity(specs.len());
    for spec in specs {
        let main = main_of(&spec.kind)
            .with_context(|| format!("{}: not a controller this process has", spec.kind))?;
        controllers.push((spec, main));
    }
    let shared = kube::Client::try_default()
        .await
        .context("a client from the kubeconfig")?;
    let count = controllers.len();
    for (spec, main) in controllers {
        let name = format!("{}@{}", spec.kind, spec.namespace);
        let shared = shared.clone();
        tokio::spawn(async move {
            match instance::run_as(spec, shared, main).await {
                Ok(()) => eprintln!("combined-native: {name} returned"),
                Err(e) => eprintln!("combined-native: {name} failed: {e:#}"),
            }
        });
    }
    eprintln!("combined-native: {count} controllers started");
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    eprintln!("combined-native: stopping");
    Ok(())
}
