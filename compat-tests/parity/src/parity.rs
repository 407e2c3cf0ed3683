//! A scenario run by two builds side by side through the same scripted steps, and the
//! comparison of what they did. The rules are in the crate documentation.

use crate::allowlist::Allowlist;
use crate::audit::{HARNESS_USER, Request};
use crate::report::{Difference, sequence_differences, table};
use crate::run::Run;
use crate::state;
use kube::Client;
use kube::api::ApiResource;
use kube_wasm_e2e::restart_apiserver;
use kube_wasm_e2e::side_by_side::{Build, SideBySide};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a step's effect may take to show.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(90);
/// How long nothing new must happen for a run to count as quiescent.
pub const QUIET: Duration = Duration::from_millis(1500);
/// How long the harness waits for quiescence at most (a scenario that never settles is
/// compared as it is then).
const SETTLE_LIMIT: Duration = Duration::from_secs(30);

/// How a step's writes are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// In the order the apiserver received them (one object changes at a time).
    Sequence,
    /// As a sorted list (several objects reconciled concurrently).
    Unordered,
    /// As a sorted list, and reads not compared: after an apiserver restart, whether a watch
    /// resumes or gets 410 Gone and relists depends on cluster-wide writes, i.e. on timing.
    Restart,
}

/// What one run did during one step.
struct Record {
    observations: Vec<String>,
    requests: Vec<Request>,
}

struct Step {
    name: String,
    order: Order,
    records: Vec<Record>,
}

/// The kinds of `watched` (plural names) that `run` has no open watch of among its requests
/// from index `from` on.
fn unwatched<'a>(run: &mut Run, from: usize, watched: &[&'a str]) -> Vec<&'a str> {
    run.audit.poll();
    let open = run.audit.open_watches(from);
    watched
        .iter()
        .filter(|plural| {
            !open
                .iter()
                .any(|q| q.target.split(['.', '/', ' ']).next() == Some(**plural))
        })
        .copied()
        .collect()
}

/// The builds to compare: `KUBE_WASM_PARITY_BUILDS` (`native,wasm` by default;
/// `native,native` checks that the projections are deterministic).
fn builds() -> [Build; 2] {
    let text = std::env::var("KUBE_WASM_PARITY_BUILDS").unwrap_or_else(|_| "native,wasm".into());
    let builds: Vec<Build> = text
        .split(',')
        .map(|b| match b.trim() {
            "native" => Build::Native,
            "wasm" => Build::Wasm,
            other => panic!("KUBE_WASM_PARITY_BUILDS: unknown build {other:?}"),
        })
        .collect();
    builds
        .try_into()
        .unwrap_or_else(|_| panic!("KUBE_WASM_PARITY_BUILDS names two builds"))
}

/// A client for the test control plane that impersonates [`HARNESS_USER`] (in group
/// `system:masters`), so the audit log tells the harness's requests from the programs'.
pub async fn harness_client() -> Client {
    kube_wasm_e2e::env_path("KUBECONFIG");
    let mut config = kube::Config::infer().await.expect("test kubeconfig");
    config.auth_info.impersonate = Some(HARNESS_USER.into());
    config.auth_info.impersonate_groups = Some(vec!["system:masters".into()]);
    Client::try_from(config).expect("harness client")
}

/// One scenario: its program, run by two builds in two fresh namespaces.
pub struct Parity {
    program: &'static str,
    resources: Vec<ApiResource>,
    label_versions: bool,
    whole_run_reads: bool,
    /// The two runs, native first.
    pub runs: Vec<Run>,
    steps: Vec<Step>,
    client: Client,
}

impl Parity {
    /// Prepares runs of `program` (a binary of `parity-scenarios`); `resources` are the
    /// kinds whose objects make up the compared final state.
    pub async fn new(program: &'static str, resources: Vec<ApiResource>) -> Parity {
        let client = harness_client().await;
        let short = program.trim_start_matches("parity-");
        let sides = SideBySide::new(&client, &format!("p-{short}"), builds()).await;
        let runs = sides.sides.into_iter().map(Run::new).collect();
        Parity {
            program,
            resources,
            label_versions: false,
            whole_run_reads: false,
            runs,
            steps: Vec::new(),
            client,
        }
    }

    /// Shows watch and list resourceVersions in requests as `<rv of Kind/name>` when they
    /// are the version of an object the harness listed at the end of an earlier step.
    pub fn label_versions(mut self) -> Parity {
        self.label_versions = true;
        self
    }

    /// Compares the reads of the whole run as one set instead of step by step: for programs
    /// whose watches time out and restart on their own, at moments no step controls.
    pub fn whole_run_reads(mut self) -> Parity {
        self.whole_run_reads = true;
        self
    }

    /// Runs `action` for each run before the programs start (not compared).
    pub async fn setup(&mut self, action: impl AsyncFn(&Run)) {
        for run in &self.runs {
            action(run).await;
        }
    }

    /// Starts both programs, waits until `done` holds for each, and records the step
    /// `start` (writes compared unordered: every listed object is reconciled at once).
    pub async fn start(&mut self, done: impl AsyncFn(&Run) -> Option<()>) {
        for run in &mut self.runs {
            run.start(self.program);
        }
        self.finish_step("start", Order::Unordered, done).await;
    }

    /// Runs `action` for each run, waits until `done` holds for each, lets both settle and
    /// records the step (writes compared in order).
    pub async fn step(
        &mut self,
        name: &str,
        action: impl AsyncFn(&Run),
        done: impl AsyncFn(&Run) -> Option<()>,
    ) {
        for run in &self.runs {
            action(run).await;
        }
        self.finish_step(name, Order::Sequence, done).await;
    }

    /// Like [`Parity::step`], with the step's writes compared as a sorted list.
    pub async fn unordered_step(
        &mut self,
        name: &str,
        action: impl AsyncFn(&Run),
        done: impl AsyncFn(&Run) -> Option<()>,
    ) {
        for run in &self.runs {
            action(run).await;
        }
        self.finish_step(name, Order::Unordered, done).await;
    }

    /// Restarts the apiserver (once, for both runs), waits until each run has an established
    /// watch of every kind in `watched` (plural names) again and both settled, then records
    /// the step; its reads are not compared (see the crate documentation).
    ///
    /// The first watch after a restart may be refused (410 Gone: its resourceVersion is older
    /// than the new watch cache) and the watcher relists after its backoff, which can be longer
    /// than [`QUIET`]: so the wait is for a watch that stays open, checked again after settling
    /// (a refused watch counts as open until its end is logged).
    pub async fn restart_step(&mut self, name: &str, watched: &[&str]) {
        let before: Vec<usize> = self
            .runs
            .iter_mut()
            .map(|r| {
                r.audit.poll();
                r.audit.len()
            })
            .collect();
        restart_apiserver().expect("apiserver restarted");
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let mut recovered = true;
            for (run, from) in self.runs.iter_mut().zip(&before) {
                let missing = unwatched(run, *from, watched);
                assert!(
                    missing.is_empty() || Instant::now() < deadline,
                    "{}: the {} run has no open watch of {missing:?} {STEP_TIMEOUT:?} after \
                     the restart",
                    self.program,
                    run.label
                );
                recovered &= missing.is_empty();
            }
            if recovered {
                self.settle().await;
                let mut runs = self.runs.iter_mut().zip(&before);
                if runs.all(|(run, from)| unwatched(run, *from, watched).is_empty()) {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        self.finish_step(name, Order::Restart, async |_| Some(()))
            .await;
    }

    async fn finish_step(
        &mut self,
        name: &str,
        order: Order,
        done: impl AsyncFn(&Run) -> Option<()>,
    ) {
        for run in &self.runs {
            let deadline = Instant::now() + STEP_TIMEOUT;
            while done(run).await.is_none() {
                assert!(
                    Instant::now() < deadline,
                    "{}: step {name:?}: the {} run did not get there within {STEP_TIMEOUT:?}; \
                     its observations:\n{}",
                    self.program,
                    run.label,
                    run.observations().join("\n")
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        self.settle().await;
        if self.label_versions {
            for run in &mut self.runs {
                let (_, versions) = state::collect(&self.client, &run.namespace, &self.resources)
                    .await
                    .expect("listing the run's objects");
                for (version, what) in versions {
                    run.audit.label_versions(&version, &what);
                }
            }
        }
        let mut records = Vec::new();
        for run in &mut self.runs {
            let observations = run.observations();
            let requests = run.audit.requests(run.requests_seen);
            run.requests_seen = run.audit.len();
            records.push(Record {
                observations: observations[run.observations_seen.min(observations.len())..]
                    .to_vec(),
                requests,
            });
            run.observations_seen = observations.len();
        }
        self.steps.push(Step {
            name: name.to_string(),
            order,
            records,
        });
    }

    /// Waits until neither run printed an observation nor sent a request for [`QUIET`].
    async fn settle(&mut self) {
        let started = Instant::now();
        let mut last = Vec::new();
        let mut since = Instant::now();
        while started.elapsed() < SETTLE_LIMIT {
            let signature: Vec<(usize, usize)> = self
                .runs
                .iter_mut()
                .map(|run| (run.observations().len(), run.audit.poll()))
                .collect();
            if signature != last {
                last = signature;
                since = Instant::now();
            } else if since.elapsed() >= QUIET {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        eprintln!("{}: no quiescence within {SETTLE_LIMIT:?}", self.program);
    }

    /// Compares the runs — final state, requests and observations step by step — and fails
    /// with a table of every difference the allowlist does not list, or of its stale entries.
    /// `expected` are the keys (`Kind/name`) the first run's final state must have.
    pub async fn finish(mut self, expected: &[&str]) {
        let mut states = Vec::new();
        for run in &self.runs {
            let (state, _) = state::collect(&self.client, &run.namespace, &self.resources)
                .await
                .expect("listing the final state");
            states.push(state);
        }
        for run in &mut self.runs {
            run.program = None;
        }
        let keys: Vec<&str> = states[0].keys().map(String::as_str).collect();
        let mut expected = expected.to_vec();
        expected.sort_unstable();
        assert_eq!(
            keys, expected,
            "{}: the final state of the {} run",
            self.program, self.runs[0].label
        );

        let mut differences = Vec::new();
        for row in kube_wasm_e2e::state::differences(&states[0], &states[1]) {
            let cells: Vec<&str> = row.splitn(4, " | ").collect();
            if let [key, path, left, right] = cells[..] {
                differences.push(Difference {
                    scenario: self.program.to_string(),
                    aspect: format!("state {key} {path}"),
                    left: left.to_string(),
                    right: right.to_string(),
                });
            }
        }
        for (i, step) in self.steps.iter().enumerate() {
            differences.extend(self.step_differences(i + 1, step));
        }

        let (left, right) = (&self.runs[0], &self.runs[1]);
        let against_wasm = right.build == Build::Wasm && left.build == Build::Native;
        let allowlist = if against_wasm {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("allowlist.toml");
            Allowlist::load(&path).unwrap_or_else(|e| panic!("{e:#}"))
        } else {
            Allowlist::default()
        };
        let (allowed, denied, stale) = allowlist.apply(self.program, differences);
        if !allowed.is_empty() {
            eprintln!(
                "{}: differences listed in allowlist.toml:\n{}",
                self.program,
                table(&left.label, &right.label, &allowed)
            );
        }
        let mut failure = String::new();
        if !denied.is_empty() {
            failure += &format!(
                "{}: the builds behave differently (namespaces {} and {}):\n{}\n",
                self.program,
                left.namespace,
                right.namespace,
                table(&left.label, &right.label, &denied)
            );
        }
        for entry in stale {
            failure += &format!(
                "{}: stale allowlist entry (no such difference any more): aspect {}, pattern \
                 {:?}, reason {:?}\n",
                self.program, entry.aspect, entry.pattern, entry.reason
            );
        }
        assert!(failure.is_empty(), "\n{failure}");
    }

    fn step_differences(&self, number: usize, step: &Step) -> Vec<Difference> {
        let scenario = self.program;
        let title = format!("step {number} '{}'", step.name);
        let step_title = title.clone();
        let [left, right] = &step.records[..] else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let writes = |r: &Record| {
            let mut writes: Vec<String> = r
                .requests
                .iter()
                .filter(|q| !q.is_read())
                .map(ToString::to_string)
                .collect();
            if step.order != Order::Sequence {
                writes.sort();
            }
            writes
        };
        out.extend(sequence_differences(
            scenario,
            &format!("requests {title} writes"),
            &writes(left),
            &writes(right),
        ));
        let reads = |r: &Record| -> BTreeSet<String> {
            r.requests
                .iter()
                .filter(|q| q.is_read())
                .map(ToString::to_string)
                .collect()
        };
        let (l, r) = match self.whole_run_reads {
            false if step.order == Order::Restart => Default::default(),
            false => (reads(left), reads(right)),
            true if number == self.steps.len() => {
                let all = |i: usize| {
                    self.steps
                        .iter()
                        .flat_map(|s| reads(&s.records[i]))
                        .collect()
                };
                (all(0), all(1))
            }
            true => Default::default(),
        };
        let title = match self.whole_run_reads {
            true => "all steps".to_string(),
            false => title,
        };
        for only in l.difference(&r) {
            out.push(Difference {
                scenario: scenario.to_string(),
                aspect: format!("requests {title} reads"),
                left: only.clone(),
                right: "(none)".into(),
            });
        }
        for only in r.difference(&l) {
            out.push(Difference {
                scenario: scenario.to_string(),
                aspect: format!("requests {title} reads"),
                left: "(none)".into(),
                right: only.clone(),
            });
        }
        let streams = |r: &Record| {
            let mut streams: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for line in &r.observations {
                let (stream, text) = line.split_once(' ').unwrap_or((line, ""));
                streams
                    .entry(stream.to_string())
                    .or_default()
                    .push(text.to_string());
            }
            streams
        };
        let (l, r) = (streams(left), streams(right));
        let names: BTreeSet<&String> = l.keys().chain(r.keys()).collect();
        for name in names {
            out.extend(sequence_differences(
                scenario,
                &format!("observations {step_title} {name}"),
                l.get(name).map_or(&[][..], Vec::as_slice),
                r.get(name).map_or(&[][..], Vec::as_slice),
            ));
        }
        out
    }
}
