//! Quotas against the real apiserver: hostile modules flood each per-module quota (hour-long
//! timers, watches of ever new selectors, requests, 16 MiB bodies, log lines) and get error
//! values — 429s and `quota` errors — without being ended, while a configmap-mirror beside
//! them keeps mirroring promptly and the host's resident memory stays bounded.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::PostParams;
use kube_wasm_e2e::manifest::{Entry, resident_kib, start_manifest, write_manifest};
use kube_wasm_e2e::metrics::{free_local_addr, scrape};
use kube_wasm_e2e::objects::mirrored;
use kube_wasm_e2e::{client, eventually, fresh_namespace, kubeconfig_for, scratch_dir};
use std::time::{Duration, Instant};

/// Each flood, its `HOSTILE_TASKS`, and the quota its refusals are counted under.
const FLOODS: [(&str, &str, &str); 4] = [
    ("delays", "100", "pending_ops"),
    ("watches", "32", "watches"),
    ("requests", "48", "concurrent_requests"),
    ("bodies", "6", "buffered_bytes"),
];
/// The quotas of every flooding module: small, so that the floods reach them at once.
const QUOTAS: &str = "quotas: {pendingOps: 64, concurrentRequests: 8, watches: 8, streams: 2, \
                      bufferedBytes: 24Mi, logLinesPerSecond: 20}";
/// How soon the healthy module must mirror a new ConfigMap while the others flood.
const PROMPTLY: Duration = Duration::from_secs(5);
/// What the quotas let the flooding modules make the host buffer: each one's `bufferedBytes`
/// (24 MiB, in [`QUOTAS`]), for the four floods that buffer.
const FLOODS_MAY_BUFFER_KIB: u64 = 4 * 24 * 1024;
/// The allocator's slack on top of what the modules hold (freed memory it keeps for reuse).
const RSS_SLACK_KIB: u64 = 64 * 1024;
/// How much more the host may hold late in the flood than early on (a trend, not a swing).
const RSS_TREND_BOUND_KIB: u64 = 48 * 1024;

#[tokio::test]
async fn floods_get_error_values_while_a_neighbour_mirrors_promptly_and_memory_stays_bounded() {
    let client = client().await;
    let mirror_ns = fresh_namespace(&client, "calm").await;
    let dir = scratch_dir().join(format!("quotas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut entries = vec![Entry::new("mirror", "configmap-mirror").namespace(&mirror_ns)];
    for (flood, tasks, _) in FLOODS.iter().copied().chain([("logs", "1", "")]) {
        let ns = fresh_namespace(&client, &format!("flood-{flood}")).await;
        entries.push(
            Entry::new(&format!("flood-{flood}"), "hostile")
                .namespace(&ns)
                .env("HOSTILE_MODE", "flood")
                .env("HOSTILE_FLOOD", flood)
                .env("HOSTILE_TASKS", tasks)
                .memory("96Mi")
                .field(QUOTAS),
        );
    }
    let metrics_addr = free_local_addr().expect("a free port").to_string();
    let manifest = write_manifest(
        &dir,
        "host.yaml",
        &format!("metricsAddr: {metrics_addr}"),
        &entries,
    );
    let kubeconfig = kubeconfig_for(&mirror_ns, &dir);
    let mut host = start_manifest(&kubeconfig, &manifest);
    host.stdout
        .wait_for(
            "[mirror] configmap-mirror: watching",
            Duration::from_secs(60),
        )
        .expect("the mirror starts");
    for (flood, _, _) in FLOODS {
        host.stdout
            .wait_for(
                &format!("[flood-{flood}] hostile: flood {flood} refused"),
                Duration::from_secs(60),
            )
            .unwrap_or_else(|e| panic!("flood-{flood} is refused: {e}"));
    }

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &mirror_ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &mirror_ns);
    let mut latencies = Vec::new();
    let mut rss_kib = Vec::new();
    let flooding_since = Instant::now();
    for round in 0..10 {
        rss_kib.push(resident_kib(host.id()).expect("the host runs"));
        let name = format!("cm-{round}");
        let created = Instant::now();
        cms.create(&PostParams::default(), &mirrored(&name))
            .await
            .expect("create");
        eventually(PROMPTLY, "the mirror to mirror a new ConfigMap", || async {
            secrets.get_opt(&name).await.ok().flatten()
        })
        .await;
        latencies.push(created.elapsed());
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    rss_kib.push(resident_kib(host.id()).expect("the host runs"));
    let flooded_for = flooding_since.elapsed();
    latencies.sort();
    eprintln!(
        "mirror latency while flooded: median {:?}, max {:?}; host RSS KiB over {flooded_for:?}: {rss_kib:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    // Bounded: never more than what the quotas let the floods buffer, plus slack. Flat: the
    // last third of the samples holds about what the first third held (the floods' buffers
    // fill and drain, so single samples swing).
    let (first, max) = (rss_kib[0], rss_kib.iter().copied().max().unwrap_or(0));
    assert!(
        max <= first + FLOODS_MAY_BUFFER_KIB + RSS_SLACK_KIB,
        "the host's RSS went past what the quotas bound: {rss_kib:?}"
    );
    let third = rss_kib.len() / 3;
    let median = |samples: &[u64]| {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        sorted[sorted.len() / 2]
    };
    let (early, late) = (
        median(&rss_kib[..third]),
        median(&rss_kib[rss_kib.len() - third..]),
    );
    assert!(
        late <= early + RSS_TREND_BOUND_KIB,
        "the host's RSS grew from {early} to {late} KiB (medians of the first and last third) while flooded: {rss_kib:?}"
    );

    let metrics = scrape(&metrics_addr);
    for (flood, _, quota) in FLOODS {
        let series = format!(
            "kube_wasm_module_quota_refusals_total{{module=\"flood-{flood}\",quota=\"{quota}\"}}"
        );
        assert!(
            metrics
                .lines()
                .any(|l| l.starts_with(&series) && !l.ends_with(" 0")),
            "{series} counts refusals:\n{metrics}"
        );
    }
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("kube_wasm_log_lines_dropped_total{module=\"flood-logs\"}")),
        "{metrics}"
    );

    let out = host.stdout.snapshot();
    let logged = out
        .iter()
        .filter(|l| l.starts_with("[flood-logs] hostile: log line"))
        .count();
    let allowed = 20 * 10 + 20 * (flooded_for.as_secs() as usize + 60);
    assert!(
        logged <= allowed,
        "flood-logs passed {logged} lines, more than its 20 lines/s allow ({allowed})"
    );
    assert!(
        out.iter().any(|l| l.starts_with("[flood-logs] kube-wasm: ")
            && l.contains("lines dropped: over the module's quota of 20 log lines per second")),
        "the dropped lines are announced"
    );
    let log = host.stderr.snapshot().join("\n");
    assert!(
        !log.contains("restarting module"),
        "no module was ended: refusals are values\n{log}"
    );
    let status = host.terminate(Duration::from_secs(30)).expect("host exits");
    eprintln!("host exit: {status:?}");
}
