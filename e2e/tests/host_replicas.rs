//! Host replicas share a fleet of WasmControllers through membership Leases, against the real
//! apiserver. Thirty WasmControllers (configmap-mirror, each in a namespace of its own):
//! - three replicas run them where rendezvous hashing places them (about ten each), and every
//!   module mirrors;
//! - SIGKILL one: its modules run on the others within the Lease duration plus start time,
//!   and the ConfigMaps created during the failover are mirrored afterwards;
//! - a fourth replica takes the modules rendezvous hashing gives it (about a quarter), and
//!   nothing else moves;
//! - SIGTERM it: its modules go back, each starting no later than the stop timeout after it
//!   stopped there, and its Lease is gone;
//! - an apiserver restart shorter than the Lease duration moves no module;
//! - a replica cut off from the apiserver (its TCP connections through a proxy cut) stops its
//!   modules before its Lease can expire; the others take them over after it expired; once
//!   reconnected it gets its share back.
//!
//! Throughout, no two replicas' intervals of one module overlap (from the start and stop
//! lines each replica logs), and every write of a module reached the apiserver with the
//! User-Agent of a replica that was running that module at that moment (the audit log).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use host_shim::fleet::placement::rendezvous;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use kube_wasm_e2e::audit::audited_requests;
use kube_wasm_e2e::metrics::{free_local_addr, scrape, value};
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::replicas::{
    Interval, ReplicaLaunch, handoff, held_by, merged_intervals, now_us, overlaps, settled_on,
};
use kube_wasm_e2e::wasm_controllers as wc;
use kube_wasm_e2e::{
    Program, client, eventually, fresh_namespace, gone, restart_apiserver, scratch_dir,
    until_answered,
};

/// A TCP proxy in front of the apiserver whose connections can be cut (and new ones refused)
/// and restored: a network partition of one replica.
struct Partition {
    address: std::net::SocketAddr,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    connections: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Partition {
    /// Starts the proxy on a thread and runtime of its own, so that the test's blocking
    /// waits never stall the replica's traffic.
    fn to(upstream: std::net::SocketAddr) -> Self {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let partition = Self {
            address: listener.local_addr().expect("address"),
            open: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)),
            connections: std::sync::Arc::default(),
        };
        let (open, connections) = (partition.open.clone(), partition.connections.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        continue; // dropped: the connection is closed at once
                    }
                    let task = tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    connections
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(task.abort_handle());
                }
            });
        });
        partition
    }

    fn cut(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        for connection in self
            .connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            connection.abort();
        }
    }

    fn restore(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// A copy of the test kubeconfig whose server is this proxy.
    fn kubeconfig(&self, dir: &std::path::Path) -> PathBuf {
        let mut config = kube::config::Kubeconfig::read_from(kube_wasm_e2e::env_path("KUBECONFIG"))
            .expect("the test kubeconfig");
        for named in &mut config.clusters {
            if let Some(cluster) = named.cluster.as_mut() {
                cluster.server = Some(format!("https://{}", self.address));
            }
        }
        let path = dir.join("kubeconfig-partitioned");
        // JSON is YAML.
        std::fs::write(&path, serde_json::to_string(&config).expect("json")).expect("write");
        path
    }
}

/// The apiserver's address, from the test kubeconfig.
fn apiserver_address() -> std::net::SocketAddr {
    let config = kube::config::Kubeconfig::read_from(kube_wasm_e2e::env_path("KUBECONFIG"))
        .expect("the test kubeconfig");
    let server = config
        .clusters
        .iter()
        .find_map(|c| c.cluster.as_ref()?.server.clone())
        .expect("a server");
    let authority = server
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_owned();
    authority.parse().expect("an IP:port server")
}

const MODULES: usize = 30;
const STOP_TIMEOUT_S: u32 = 5;
/// The replicas' Lease duration (the default).
const LEASE: Duration = Duration::from_secs(10);
/// Debug builds on two busy cores: thirty modules start in well under this.
const PROMPTLY: Duration = Duration::from_secs(180);
/// The resource's name in every namespace.
const NAME: &str = "mirror";

struct Fleet {
    client: kube::Client,
    lease_namespace: String,
    namespaces: Vec<String>,
    cache: PathBuf,
    running: BTreeMap<String, Program>,
    /// Replicas that were stopped or killed, with when a killed one died.
    ended: Vec<(String, Program, Option<u128>)>,
}

impl Fleet {
    fn launch(&self) -> ReplicaLaunch {
        ReplicaLaunch::from_env(
            &self.lease_namespace,
            &self.namespaces,
            &self.cache,
            STOP_TIMEOUT_S,
        )
    }

    fn start(&mut self, replica: &str) {
        let program = self.launch().start(replica);
        self.running.insert(replica.to_owned(), program);
    }

    /// Starts `replica` serving its metrics at `metrics` (`host:port`).
    fn start_serving_metrics(&mut self, replica: &str, metrics: &str) {
        let mut command = self.launch().command(replica);
        command.args(["--metrics-addr", metrics]);
        self.running
            .insert(replica.to_owned(), Program::spawn(command, replica));
    }

    fn start_with(&mut self, replica: &str, kubeconfig: &std::path::Path) {
        let launch = ReplicaLaunch {
            kubeconfig: kubeconfig.to_owned(),
            ..self.launch()
        };
        self.running
            .insert(replica.to_owned(), launch.start(replica));
    }

    fn members(&self) -> BTreeSet<String> {
        self.running.keys().cloned().collect()
    }

    /// Where every module runs, once all run on current members and nothing moved for 3 s.
    async fn settled(&self) -> BTreeMap<String, String> {
        self.settled_on(self.members()).await
    }

    /// Where every module runs, once all run on `members` and nothing moved for 3 s.
    async fn settled_on(&self, members: BTreeSet<String>) -> BTreeMap<String, String> {
        settled_on(&self.client, &self.namespaces, NAME, &members, PROMPTLY)
            .await
            .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// Creates ConfigMap `name` in every namespace and returns how long after `since` each
    /// one's mirror Secret appeared.
    async fn mirror_everywhere(&self, name: &str, since: Instant) -> BTreeMap<String, Duration> {
        for ns in &self.namespaces {
            let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
            let (params, config_map) = (PostParams::default(), mirrored(name));
            until_answered(PROMPTLY, "create a ConfigMap", &[409], || {
                cms.create(&params, &config_map)
            })
            .await;
        }
        let mut mirrored_after = BTreeMap::new();
        let deadline = Instant::now() + PROMPTLY;
        while mirrored_after.len() < self.namespaces.len() {
            for ns in &self.namespaces {
                if mirrored_after.contains_key(ns) {
                    continue;
                }
                let secrets: Api<Secret> = Api::namespaced(self.client.clone(), ns);
                if secrets.get_opt(name).await.ok().flatten().is_some() {
                    mirrored_after.insert(ns.clone(), since.elapsed());
                }
            }
            assert!(
                Instant::now() < deadline,
                "ConfigMap {name} not mirrored within {PROMPTLY:?} in {:?}",
                self.namespaces
                    .iter()
                    .filter(|ns| !mirrored_after.contains_key(*ns))
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        mirrored_after
    }

    /// Every replica's intervals of every module; a killed replica's open ones end at its
    /// death, a running one's at `now`.
    fn intervals(&self, now: u128) -> BTreeMap<String, Vec<Interval>> {
        let logs = self
            .running
            .values()
            .map(|p| (p, None))
            .chain(self.ended.iter().map(|(_, p, killed)| (p, *killed)));
        merged_intervals(logs, now)
    }
}

/// Whether the WasmController in `ns` has an Event with `reason`.
async fn has_event(client: &kube::Client, ns: &str, reason: &str) -> bool {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    events.list(&Default::default()).await.is_ok_and(|list| {
        list.items.iter().any(|e| {
            e.involved_object.name.as_deref() == Some(NAME) && e.reason.as_deref() == Some(reason)
        })
    })
}

/// Where rendezvous hashing places each namespace's module among `members`: where the replicas
/// must run them once settled. (How evenly that spreads is the hashing's unit test, over a
/// thousand modules; thirty are too few to assert a share without a flaky test.)
fn hashed(namespaces: &[String], members: &[&str]) -> BTreeMap<String, String> {
    namespaces
        .iter()
        .map(|ns| {
            let owner = rendezvous::owner(members.iter().copied(), &format!("{ns}.{NAME}"))
                .expect("members");
            (ns.clone(), owner.to_owned())
        })
        .collect()
}

fn count_by_replica(placed: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for host in placed.values() {
        *counts.entry(host.clone()).or_default() += 1;
    }
    counts
}

#[tokio::test]
async fn replicas_share_the_fleet_fail_over_hand_over_and_never_run_a_module_twice() {
    let client = client().await;
    wc::install_crd();
    let pid = std::process::id();
    let dir = scratch_dir().join(format!("replicas-{pid}"));
    std::fs::create_dir_all(&dir).expect("dir");
    let lease_namespace = fresh_namespace(&client, "leases").await;
    let mut namespaces = Vec::new();
    for i in 0..MODULES {
        namespaces.push(fresh_namespace(&client, &format!("fleet{i}")).await);
    }
    let mut fleet = Fleet {
        client: client.clone(),
        lease_namespace: lease_namespace.clone(),
        namespaces,
        cache: dir.join("cache"),
        running: BTreeMap::new(),
        ended: Vec::new(),
    };

    // Three replicas, thirty modules.
    let metrics = free_local_addr().expect("a free port").to_string();
    fleet.start_serving_metrics("host-a", &metrics);
    fleet.running["host-a"]
        .stderr
        .wait_for("running the WasmControllers", PROMPTLY)
        .expect("host-a runs");
    fleet.start("host-b");
    fleet.start("host-c");
    for ns in &fleet.namespaces {
        wc::api(&client, ns)
            .create(
                &PostParams::default(),
                &wc::local_resource(NAME, "configmap-mirror.wasm"),
            )
            .await
            .expect("created");
    }
    let three = fleet.settled().await;
    eprintln!("three replicas: {:?}", count_by_replica(&three));
    assert_eq!(
        three,
        hashed(&fleet.namespaces, &["host-a", "host-b", "host-c"]),
        "each module runs where rendezvous hashing places it"
    );
    fleet.mirror_everywhere("before", Instant::now()).await;

    // SIGKILL one: its modules run elsewhere; what changed meanwhile is mirrored.
    let victims = held_by(&three, "host-c");
    let mut killed = fleet.running.remove("host-c").expect("host-c");
    let killed_at = Instant::now();
    killed.kill(Duration::from_secs(10)).expect("killed");
    fleet.ended.push(("host-c".into(), killed, Some(now_us())));
    let latency = fleet.mirror_everywhere("during-failover", killed_at).await;
    let mut failover: Vec<Duration> = victims.iter().map(|ns| latency[ns]).collect();
    failover.sort();
    let worst = failover.last().copied().unwrap_or_default();
    eprintln!(
        "failover (SIGKILL → the next change mirrored elsewhere) of {} modules: median {:?}, \
         max {worst:?} (Lease {LEASE:?}; goal ≤ 15 s)",
        failover.len(),
        failover
            .get(failover.len() / 2)
            .copied()
            .unwrap_or_default()
    );
    assert!(
        worst < LEASE + Duration::from_secs(30),
        "the failover took {worst:?}"
    );
    let two = fleet.settled().await;
    for (ns, host) in &three {
        if !victims.contains(ns) {
            assert_eq!(&two[ns], host, "a module of a surviving replica moved");
        }
    }
    // host-a's metrics: what it owns, what it took over, its Lease renewals.
    let on_a =
        |placed: &BTreeMap<String, String>| placed.values().filter(|h| *h == "host-a").count();
    let taken_by_a = victims.iter().filter(|ns| two[*ns] == "host-a").count();
    let text = scrape(&metrics);
    let sample = |series: &str| value(&text, series).unwrap_or_else(|| panic!("{series}: {text}"));
    assert_eq!(sample("kube_wasm_replica_modules_owned"), on_a(&two) as f64);
    assert!(sample("kube_wasm_replica_failovers_total") >= taken_by_a as f64);
    assert!(sample("kube_wasm_replica_lease_renew_duration_seconds_count") > 0.0);
    assert_eq!(sample("kube_wasm_replica_lease_losses_total"), 0.0);
    let victim = victims.iter().next().expect("host-c ran modules");
    assert!(
        has_event(&client, victim, "TakenOver").await,
        "{victim}: a TakenOver Event"
    );

    // Back to three, then a fourth: it takes about a quarter, nothing else moves. host-e
    // reaches the apiserver through a proxy, to be cut off later.
    let partition = Partition::to(apiserver_address());
    fleet.start_with("host-e", &partition.kubeconfig(&dir));
    let three_again = fleet.settled().await;
    fleet.start("host-d");
    let four = fleet.settled().await;
    let moved: Vec<(&String, &String)> = three_again
        .iter()
        .filter(|(ns, host)| four[*ns] != **host)
        .collect();
    eprintln!(
        "scale-up 3 → 4: {} of {MODULES} modules moved: {:?}",
        moved.len(),
        count_by_replica(&four)
    );
    assert!(
        moved.iter().all(|(ns, _)| four[*ns] == "host-d"),
        "modules moved only to the new replica"
    );
    assert_eq!(
        four,
        hashed(&fleet.namespaces, &["host-a", "host-b", "host-d", "host-e"]),
        "each module runs where rendezvous hashing places it among four"
    );
    if let Some((moved_ns, _)) = moved.first() {
        assert!(
            has_event(&client, moved_ns, "Released").await,
            "{moved_ns}: a Released Event"
        );
    }

    // SIGTERM the fourth: handoff, no gap beyond the stop timeout.
    let handed = held_by(&four, "host-d");
    let mut leaving = fleet.running.remove("host-d").expect("host-d");
    leaving
        .terminate(Duration::from_secs(u64::from(STOP_TIMEOUT_S) + 30))
        .expect("host-d stops");
    fleet.ended.push(("host-d".into(), leaving, None));
    let back = fleet.settled().await;
    let all = fleet.intervals(now_us());
    let mut gaps = Vec::new();
    for ns in &handed {
        let (stopped, next) = handoff(&all[&format!("{ns}.{NAME}")], "host-d", &back[ns])
            .expect("host-d ran and stopped it, and the next replica started it after");
        gaps.push(Duration::from_micros(
            u64::try_from(next - stopped).unwrap_or(u64::MAX),
        ));
    }
    gaps.sort();
    let widest = gaps.last().copied().unwrap_or_default();
    eprintln!(
        "handoff of {} modules: gap from the stop on host-d to the start elsewhere: max {widest:?}",
        gaps.len()
    );
    assert!(
        widest <= Duration::from_secs(u64::from(STOP_TIMEOUT_S)),
        "a handoff gap of {widest:?}"
    );
    let leases: Api<Lease> = Api::namespaced(client.clone(), &lease_namespace);
    assert!(
        leases
            .get_opt("kube-wasm-host.host-d")
            .await
            .expect("read")
            .is_none(),
        "host-d deleted its Lease"
    );
    fleet
        .mirror_everywhere("after-handoff", Instant::now())
        .await;

    // An apiserver restart shorter than the Lease duration moves nothing.
    let restarted_at = Instant::now();
    restart_apiserver().expect("apiserver restarted");
    eprintln!("the apiserver was away {:?}", restarted_at.elapsed());
    tokio::time::sleep(LEASE + Duration::from_secs(2)).await;
    let after_restart = fleet.settled().await;
    assert_eq!(after_restart, back, "the apiserver restart moved modules");
    fleet
        .mirror_everywhere("after-restart", Instant::now())
        .await;

    // Partition host-e: it stops its modules before its Lease can expire, the others take
    // them over once it has; reconnected, it gets its share back.
    let isolated = back.values().filter(|host| *host == "host-e").count();
    let cut_at = now_us();
    partition.cut();
    fleet.running["host-e"]
        .stderr
        .wait_for(
            "could not renew its Lease in time",
            LEASE + Duration::from_secs(10),
        )
        .expect("host-e fenced itself");
    let others: BTreeSet<String> = ["host-a", "host-b"].map(String::from).into();
    let during = fleet.settled_on(others).await;
    fleet
        .mirror_everywhere("during-partition", Instant::now())
        .await;
    let fenced = fleet.intervals(now_us());
    let last_stop = fenced
        .values()
        .flatten()
        .filter(|r| r.replica == "host-e")
        .filter_map(|r| r.stop_us)
        .max()
        .unwrap_or_default();
    eprintln!(
        "partition: host-e stopped its {isolated} modules {:?} after the cut (renew deadline 8 s)",
        Duration::from_micros(u64::try_from(last_stop.saturating_sub(cut_at)).unwrap_or(0))
    );
    assert!(
        last_stop < cut_at + 10_000_000,
        "host-e stopped its modules before its Lease could expire"
    );
    assert_eq!(count_by_replica(&during).get("host-e"), None);
    partition.restore();
    let healed = fleet.settled().await;
    assert_eq!(healed, back, "host-e got its share back");

    // Never twice: intervals, and the writes in the audit log.
    let now = now_us();
    let all = fleet.intervals(now);
    let found = overlaps(&all, now);
    assert!(
        found.is_empty(),
        "a module ran on two replicas at once: {found:#?}"
    );
    let slack_us = 1_000_000;
    let mut writes = 0;
    for ns in &fleet.namespaces {
        let runs = &all[&format!("{ns}.{NAME}")];
        for request in audited_requests("secrets", ns) {
            if !["create", "update", "patch", "delete"].contains(&request.verb.as_str()) {
                continue;
            }
            if request.user_agent.contains("kube-wasm-e2e") || request.user.is_empty() {
                continue;
            }
            writes += 1;
            let replica = request
                .replica()
                .unwrap_or_else(|| panic!("a write without a replica's User-Agent: {request:?}"));
            let at = request.received_us().expect("a received timestamp");
            if at > now {
                continue; // after the intervals were read
            }
            assert!(
                runs.iter().any(|r| r.replica == replica
                    && r.start_us <= at
                    && at <= r.stop_us.unwrap_or(now) + slack_us),
                "{ns}: a write by {replica} at {at} outside its runs {runs:?}"
            );
        }
    }
    eprintln!("{writes} module writes, each by the replica running the module then");
    assert!(writes >= MODULES * 5, "the modules wrote: {writes}");

    // Clean up: deleted resources are stopped by their holders, who remove the finalizers.
    for ns in &fleet.namespaces {
        let _ = wc::api(&client, ns)
            .delete(NAME, &DeleteParams::default())
            .await;
    }
    for ns in &fleet.namespaces {
        let api = wc::api(&client, ns);
        eventually(PROMPTLY, "the resource to go", || gone(&api, NAME)).await;
    }
    for (_, mut program) in std::mem::take(&mut fleet.running) {
        let _ = program.terminate(Duration::from_secs(30));
    }
}
