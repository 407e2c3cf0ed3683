//! Log parity: the controller's log lines and its reconcile span read as kube-runtime 5.0's —
//! same target (`kube_runtime::controller`), span name and fields, and messages — so a ported
//! controller's logs match its native twin's, line for line, under the same subscriber.

use super::support::*;
use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime_wasm::WatchStreamExt;
use kube_runtime_wasm::controller::{Action, Controller};
use kube_runtime_wasm::reflector::{self, reflector};
use kube_runtime_wasm::watcher::Event;
use kube_wasm_client::ResourceExt;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Everything a `tracing_subscriber::fmt` subscriber wrote (no time, no colours), as kube
/// users set one up.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().expect("not poisoned").clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "1"},
    }))
    .expect("a ConfigMap")
}

async fn reconcile(obj: Arc<ConfigMap>, _: Arc<()>) -> Result<Action, std::io::Error> {
    tracing::info!(target: "app", "reconciling {}", obj.name_any());
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, _: &std::io::Error, _: Arc<()>) -> Action {
    Action::await_change()
}

#[test]
fn reconciles_run_in_kube_runtimes_span_and_shutdown_logs_kube_runtimes_lines() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let (host, _) = setup();
    let (tx, rx) = mpsc::unbounded();
    let (reader, writer) = reflector::store();
    for event in [
        Event::Init,
        Event::InitApply(config_map("a")),
        Event::InitDone,
    ] {
        tx.unbounded_send(Ok(event)).expect("open");
    }
    let controller = Controller::for_stream(reflector(writer, rx).applied_objects(), reader)
        .shutdown_on_signal();
    let mut task = host.spawn(
        controller
            .run(reconcile, error_policy, Arc::new(()))
            .for_each(|_| async {}),
    );
    host.run_until_stalled();
    let stop = host
        .take_submitted()
        .into_iter()
        .find_map(|op| match op {
            kube_wasm_guest::fake::Submitted::StopSignal { id } => Some(id),
            _ => None,
        })
        .expect("the controller listens for the stop signal");
    host.complete(stop, &kube_wasm_abi::Completion::Stop {}, b"");
    host.run_until_stalled();
    drop(tx);
    host.run_until_stalled();
    assert!(task.output().is_some(), "the controller shut down");

    assert_eq!(
        captured.lines(),
        [
            " INFO kube_runtime::controller: press ctrl+c to shut down gracefully",
            " INFO reconciling object{object.ref=ConfigMap.v1./a.default object.reason=object updated}: app: reconciling a",
            " INFO kube_runtime::controller: graceful shutdown requested, press ctrl+c again to force shutdown",
        ]
    );
}
