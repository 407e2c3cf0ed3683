//! A replica's membership Lease against a fake API server that keeps Leases the way
//! kube-apiserver does (resourceVersion preconditions on replace and delete): acquired, renewed,
//! fresh only until the renew deadline when the API server is unreachable, fresh again when it
//! answers, lost at once when another incarnation holds it, and deleted on finish.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Reply, Seen, fake_client};
use host_shim::fleet::placement::PlacementConfig;
use host_shim::fleet::placement::lease::OwnLease;
use host_shim::metrics::Metrics;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::{Value, json};

/// Leases by name, each with its resourceVersion; `down` answers every request with a 503.
#[derive(Clone, Default)]
struct FakeLeases {
    leases: Arc<Mutex<HashMap<String, Value>>>,
    version: Arc<Mutex<u64>>,
    down: Arc<AtomicBool>,
}

fn status(code: u16, reason: &str) -> Reply {
    let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
        "reason": reason, "code": code, "message": reason});
    Reply::new(code, vec![Ok(body.to_string().into_bytes())])
}

impl FakeLeases {
    fn answer(&self, seen: &Seen) -> Reply {
        if self.down.load(Ordering::SeqCst) {
            return status(503, "ServiceUnavailable");
        }
        let path = seen.uri.path();
        let Some(rest) = path.strip_prefix("/apis/coordination.k8s.io/v1/namespaces/ns/leases")
        else {
            return status(404, "NotFound");
        };
        let name = rest.trim_start_matches('/').to_owned();
        let mut leases = self.leases.lock().expect("leases");
        let current_version = |lease: &Value| lease["metadata"]["resourceVersion"].clone();
        match seen.method.as_str() {
            "GET" => match leases.get(&name) {
                Some(lease) => Reply::ok(lease.to_string().as_bytes()),
                None => status(404, "NotFound"),
            },
            "POST" => {
                let mut lease: Value = serde_json::from_slice(&seen.body).expect("json");
                let name = lease["metadata"]["name"].as_str().expect("name").to_owned();
                if leases.contains_key(&name) {
                    return status(409, "AlreadyExists");
                }
                lease["metadata"]["resourceVersion"] = self.next().into();
                leases.insert(name, lease.clone());
                Reply::new(201, vec![Ok(lease.to_string().into_bytes())])
            }
            "PUT" => {
                let mut lease: Value = serde_json::from_slice(&seen.body).expect("json");
                match leases.get(&name) {
                    Some(stored) if current_version(stored) == current_version(&lease) => {
                        lease["metadata"]["resourceVersion"] = self.next().into();
                        leases.insert(name, lease.clone());
                        Reply::ok(lease.to_string().as_bytes())
                    }
                    Some(_) => status(409, "Conflict"),
                    None => status(404, "NotFound"),
                }
            }
            "DELETE" => {
                let params: Value = serde_json::from_slice(&seen.body).unwrap_or_default();
                let wanted = &params["preconditions"]["resourceVersion"];
                match leases.get(&name) {
                    Some(stored) if wanted.is_null() || current_version(stored) == *wanted => {
                        let gone = leases.remove(&name).unwrap_or_default();
                        Reply::ok(gone.to_string().as_bytes())
                    }
                    Some(_) => status(409, "Conflict"),
                    None => status(404, "NotFound"),
                }
            }
            _ => status(405, "MethodNotAllowed"),
        }
    }

    fn next(&self) -> String {
        let mut version = self.version.lock().expect("version");
        *version += 1;
        version.to_string()
    }

    fn get(&self, name: &str) -> Option<Value> {
        self.leases.lock().expect("leases").get(name).cloned()
    }
}

fn config() -> PlacementConfig {
    PlacementConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1200),
        renew_period: Duration::from_millis(200),
        ..PlacementConfig::new("host-a".into(), Some("ns".into()))
    }
}

async fn until(what: &str, check: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_lease_is_held_fresh_until_the_deadline_lost_to_another_holder_and_deleted() {
    let fake = FakeLeases::default();
    let answering = fake.clone();
    let (client, _) = fake_client(move |seen| answering.answer(seen));
    let lease = OwnLease::new(
        Api::<Lease>::namespaced(client, "ns"),
        Arc::new(config()),
        Metrics::new().replica().clone(),
    );
    let task = tokio::spawn(lease.clone().run());

    until("acquired", || lease.is_fresh()).await;
    let held = fake.get("kube-wasm-host.host-a").expect("created");
    assert!(
        held["spec"]["holderIdentity"]
            .as_str()
            .is_some_and(|h| h.starts_with("host-a_")),
        "{held}"
    );
    assert_eq!(held["spec"]["leaseDurationSeconds"], 2);
    assert_eq!(
        held["metadata"]["labels"]["kube-wasm.dev/host-replica"],
        "true"
    );
    let first_renew = held["spec"]["renewTime"].clone();
    until("renewed", || {
        fake.get("kube-wasm-host.host-a")
            .is_some_and(|l| l["spec"]["renewTime"] != first_renew)
    })
    .await;

    // Unreachable: fresh until the renew deadline after the last renew sent, not after.
    fake.down.store(true, Ordering::SeqCst);
    let down_at = tokio::time::Instant::now();
    until("stale after the deadline", || !lease.is_fresh()).await;
    let stale_after = down_at.elapsed();
    assert!(
        stale_after <= Duration::from_millis(1200) + Duration::from_millis(300),
        "fresh for {stale_after:?} after the last renew"
    );
    assert!(
        stale_after >= Duration::from_millis(1200) - Duration::from_millis(300),
        "it gave up {stale_after:?} after, before its renew deadline"
    );
    fake.down.store(false, Ordering::SeqCst);
    until("fresh again", || lease.is_fresh()).await;

    // Another incarnation writes the Lease: the next renew conflicts, and the Lease is lost
    // at once rather than at the deadline.
    {
        let mut leases = fake.leases.lock().expect("leases");
        let stolen = leases.get_mut("kube-wasm-host.host-a").expect("held");
        stolen["spec"]["holderIdentity"] = "host-a_other".into();
        stolen["metadata"]["resourceVersion"] = "999".into();
    }
    let stolen_at = tokio::time::Instant::now();
    until("lost", || lease.freshness().borrow().is_none()).await;
    assert!(stolen_at.elapsed() < Duration::from_millis(1000));
    assert_eq!(
        fake.get("kube-wasm-host.host-a").expect("still there")["spec"]["holderIdentity"],
        "host-a_other",
        "a current Lease of another incarnation is not taken"
    );

    // Once the other incarnation stops renewing for the lease duration, it is taken over.
    until("taken over after expiry", || lease.is_fresh()).await;
    let taken = fake.get("kube-wasm-host.host-a").expect("held");
    assert_ne!(taken["spec"]["holderIdentity"], "host-a_other");
    assert_eq!(taken["spec"]["leaseTransitions"], 1);

    lease.finish();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("ends after finish")
        .expect("no panic");
    assert!(fake.get("kube-wasm-host.host-a").is_none(), "deleted");
    assert!(!lease.is_fresh());
}
