//! A hostile module allowed only ConfigMaps (and to list Services) tries to reach Secrets —
//! and to watch Services — through every import, with spellings the API server decodes
//! differently from the raw URI: encoded slashes and letters, dot segments, doubled slashes,
//! the deprecated `/watch/` prefix, other spellings of the `watch` parameter, a lowercase
//! method. Every such try gets a 403 from the host, the allowed controls (some spelled
//! encoded too) succeed, and the real API server's audit log shows no request on Secrets and
//! no watch of Services at all.

use kube_wasm_e2e::audit::Tail;
use kube_wasm_e2e::manifest::{Entry, start_manifest, write_manifest};
use kube_wasm_e2e::{client, env_path, fresh_namespace, kubeconfig_for, scratch_dir};
use std::time::Duration;

/// `IMPORT METHOD URI => OUTCOME`, NS the module's namespace.
const TRIES: &[(&str, &str)] = &[
    // Secrets, however spelled: denied.
    ("http GET /api%2Fv1%2Fnamespaces%2FNS%2Fsecrets", "403"),
    ("http GET /api/v1/namespaces/NS/%73ecrets", "403"),
    ("http GET /api/v1/namespaces/NS%2Fsecrets", "403"),
    ("http GET /%61pi/v1/secrets", "403"),
    ("http POST /api%2Fv1/namespaces/NS/secrets", "403"),
    ("http DELETE /api/v1/namespaces/NS/secret%73", "403"),
    (
        "http GET /api/v1/namespaces/NS/configmaps/..%2F..%2F..%2Fapi/v1/namespaces/NS/secrets",
        "403",
    ),
    (
        "http GET /api/v1/namespaces/NS/configmaps/../../NS/secrets",
        "403",
    ),
    ("http GET /api//v1/namespaces/NS/secrets", "403"),
    ("http GET /api/v1/namespaces/NS/secrets?watch=yes", "403"),
    ("http GET /api/v1/watch/namespaces/NS/secrets", "403"),
    ("http GET /api/v1/%77atch/namespaces/NS/secrets", "403"),
    ("http get /api/v1/namespaces/NS/configmaps", "403"),
    ("http GET //127.0.0.1/api/v1/namespaces/NS/secrets", "403"),
    ("http GET /metrics", "403"),
    ("watch GET /api%2Fv1%2Fnamespaces%2FNS%2Fsecrets", "403"),
    ("watch GET /api/v1/namespaces/NS/%73ecrets", "403"),
    (
        "watch GET /api/v1/namespaces/NS/configmaps%2F..%2Fsecrets",
        "403",
    ),
    ("watch GET /api/v1/secrets", "403"),
    ("stream GET /api%2Fv1%2Fnamespaces%2FNS%2Fsecrets", "403"),
    (
        "stream GET /api/v1/namespaces/NS/pods/p/exec?command=cat&stdout=true",
        "403",
    ),
    // Services may be listed, not watched, whatever the spelling of `watch`.
    ("http GET /api/v1/namespaces/NS/services?watch=yes", "403"),
    (
        "http GET /api/v1/namespaces/NS/services?%77atch=true",
        "403",
    ),
    ("http GET /api/v1/namespaces/NS/services?watch", "403"),
    ("http GET /api/v1/watch/namespaces/NS/services", "403"),
    ("watch GET /api/v1/namespaces/NS/services", "403"),
    ("http GET /api/v1/namespaces/NS/services?watch=FALSE", "200"),
    ("http GET /api/v1/namespaces/NS/services", "200"),
    // What the module may do still works, spelled plainly or encoded.
    ("http GET /api/v1/namespaces/NS/configmaps", "200"),
    ("http GET /api%2Fv1%2Fnamespaces%2FNS%2Fconfigmaps", "200"),
    (
        "http GET /api/v1/namespaces/NS/configmaps?resourceVersion=0",
        "200",
    ),
    ("watch GET /api%2Fv1/namespaces/NS/configmaps", "200"),
    ("http GET /api", "200"),
    ("http GET /apis/apps/v1", "200"),
];

#[tokio::test]
async fn no_spelling_reaches_secrets_or_watches_what_may_only_be_listed() {
    let client = client().await;
    let ns = fresh_namespace(&client, "spellings").await;
    let dir = scratch_dir().join(format!("spellings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let tries: Vec<String> = TRIES.iter().map(|(t, _)| t.replace("NS", &ns)).collect();
    let entries = [Entry::new("hostile", "hostile")
        .namespace(&ns)
        .env("HOSTILE_MODE", "tries")
        .env("HOSTILE_TRIES", &tries.join("\n"))
        .field("restartPolicy: Never")
        .field(
            "permissions: [{verbs: [get, list, watch], resources: [configmaps]}, \
             {verbs: [list], resources: [services]}]",
        )];
    // Shared watches on (the default): a watch import is served by the host's informer, which
    // must list and watch only what the module was allowed.
    let manifest = write_manifest(&dir, "host.yaml", "", &entries);
    let kubeconfig = kubeconfig_for(&ns, &dir);
    let mut audit = Tail::at_end(env_path("KUBE_WASM_AUDIT_LOG")).expect("the audit log");
    let mut host = start_manifest(&kubeconfig, &manifest);
    host.stdout
        .wait_for("[hostile] hostile: tries done", Duration::from_secs(60))
        .expect("the module gets through its tries");

    let output = host.module_output("hostile");
    let mut wrong = Vec::new();
    for ((_, expected), tried) in TRIES.iter().zip(&tries) {
        let prefix = format!("hostile: {tried} -> ");
        match output.iter().find_map(|l| l.strip_prefix(&prefix)) {
            Some(outcome) if outcome == *expected => {}
            outcome => wrong.push(format!("{tried}: expected {expected}, got {outcome:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    host.terminate(Duration::from_secs(10))
        .expect("the host stops");
    let events = audit.events().expect("the audit log reads");
    let secrets: Vec<String> = events
        .iter()
        .filter(|e| e["objectRef"]["resource"] == "secrets")
        .map(|e| format!("{} {}", e["verb"], e["requestURI"]))
        .collect();
    assert!(
        secrets.is_empty(),
        "the API server saw requests on secrets: {secrets:?}"
    );
    let service_watches: Vec<String> = events
        .iter()
        .filter(|e| e["objectRef"]["resource"] == "services" && e["verb"] == "watch")
        .map(|e| format!("{}", e["requestURI"]))
        .collect();
    assert!(
        service_watches.is_empty(),
        "the API server saw watches of services: {service_watches:?}"
    );
    let configmaps = events
        .iter()
        .filter(|e| e["objectRef"]["resource"] == "configmaps" && e["objectRef"]["namespace"] == ns)
        .count();
    assert!(
        configmaps > 0,
        "the allowed requests reached the API server"
    );
}
