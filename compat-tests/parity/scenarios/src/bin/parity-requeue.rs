//! Requeue timing: every `Widget` is reconciled three times — the first reconcile asks for a
//! requeue after one second, the second fails once and the error policy requeues it after one
//! second, the third stops. Each reconcile reports whether the delay since the previous one
//! was at least the requested second (and under five); nothing is written.

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use parity_scenarios::observe;
use parity_scenarios::types::Widget;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

const DELAY: Duration = Duration::from_secs(1);

/// Per widget: how many reconciles so far and when the last one ran.
type Seen = Mutex<HashMap<String, (u32, Instant)>>;

#[derive(Debug, thiserror::Error)]
#[error("the second reconcile fails on purpose")]
struct Planned;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = Client::try_default().await?;
    let widgets = Api::<Widget>::default_namespaced(client);
    Controller::new(widgets, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(Seen::default()))
        .for_each(|_| async {})
        .await;
    Ok(())
}

async fn reconcile(widget: Arc<Widget>, seen: Arc<Seen>) -> Result<Action, Planned> {
    let name = widget.name_any();
    let now = Instant::now();
    let (count, last) = {
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        let entry = seen.entry(name.clone()).or_insert((0, now));
        let previous = *entry;
        *entry = (previous.0 + 1, now);
        previous
    };
    let stream = format!("reconcile/{name}");
    if count >= 3 {
        return Ok(Action::await_change());
    }
    let waited = now.duration_since(last);
    let timing = if count == 0 {
        "first".to_string()
    } else if waited >= DELAY && waited < 5 * DELAY {
        "after the requested delay".to_string()
    } else {
        format!("after {waited:?}, not the requested {DELAY:?}")
    };
    observe(&stream, format!("reconcile #{} {timing}", count + 1));
    match count {
        0 => Ok(Action::requeue(DELAY)),
        1 => Err(Planned),
        _ => Ok(Action::await_change()),
    }
}

fn error_policy(widget: Arc<Widget>, error: &Planned, _: Arc<Seen>) -> Action {
    observe(
        &format!("reconcile/{}", widget.name_any()),
        format!("error policy: {error}"),
    );
    Action::requeue(DELAY)
}
