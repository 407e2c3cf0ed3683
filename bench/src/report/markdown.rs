//! `report.md`: the goals, the figures as tables, the plots and the method.

use std::fmt::Write as _;

use super::document::Report;
use super::figures::{Cell, MIB, MIB_BYTES};
use super::format::{fmt_pct, fmt_summary};
use crate::fleet::Variant;
use crate::stats::{self, Summary};

impl Report {
    pub(super) fn markdown(&self, plots: &[&str]) -> String {
        let m = &self.measured;
        let mut s =
            String::from("# kube-wasm benchmark: wasm controllers vs native kube-rs 5.0\n\n");
        for (k, v) in &m.context {
            let _ = writeln!(s, "- {k}: {v}");
        }
        let _ = writeln!(
            s,
            "\nVariants (the same `ring-controller` source each time):\n"
        );
        for v in Variant::ALL {
            let state = if m.variants.contains(&v) {
                "run".to_string()
            } else {
                match self.measured.unavailable(v) {
                    Some(reason) => format!("**not available**: {reason}"),
                    None => "not selected".into(),
                }
            };
            let _ = writeln!(s, "- `{}`: {} — {state}", v.label(), v.description());
        }
        // The goals table between mdBook anchors: the book's "What a module costs" includes it
        // (`{{#include report.md:goals}}`).
        s.push_str("\nFigures are the median over runs, with the p99 over runs in brackets where there were several; ratios and differences are computed pair by pair (run r of a wasm variant against run r of native) and then summarised.\n\n## Goals\n\n<!-- ANCHOR: goals -->\n| goal | target | measured | verdict |\n|---|---|---|---|\n");
        for g in &self.goals {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                g.goal,
                g.target,
                g.measured,
                verdict(g.holds)
            );
        }
        s.push_str("<!-- ANCHOR_END: goals -->\n");
        let variants = &m.variants;
        let header = |s: &mut String, first: &str| {
            let _ = write!(s, "| {first} |");
            for v in variants {
                let _ = write!(s, " {} |", v.label());
            }
            s.push_str("\n|---|");
            for _ in variants {
                s.push_str("---|");
            }
            s.push('\n');
        };
        let table = |s: &mut String, title: &str, note: &str, f: &dyn Fn(&Cell) -> String| {
            let _ = writeln!(s, "\n### {title}\n\n{note}\n");
            header(s, "N");
            for &n in &m.ns {
                let _ = write!(s, "| {n} |");
                for &v in variants {
                    let _ = write!(
                        s,
                        " {} |",
                        self.figures.cell(v, n).map(f).unwrap_or_else(|| "–".into())
                    );
                }
                s.push('\n');
            }
        };
        s.push_str("\n## Memory\n");
        table(
            &mut s,
            "Idle fleet: PSS of all processes, MiB",
            "N controllers, each with its own watch and one Ring, nothing changing (after the warm-up cycles and the settle time). Native: the sum over the N processes; wasm: the one host process.",
            &|c| fmt_summary(c.idle_pss_kib.as_ref(), MIB, 1),
        );
        table(
            &mut s,
            "Idle fleet: RSS summed over processes, MiB (for scale only)",
            "RSS counts the pages native processes share (their binary, libraries) once per process; the goals use PSS.",
            &|c| fmt_summary(c.idle_rss_kib.as_ref(), MIB, 1),
        );
        table(
            &mut s,
            "Under load: PSS during the ring cycles, MiB",
            "Median of samples taken every second while the measured cycles ran.",
            &|c| fmt_summary(c.load_pss_kib.as_ref(), MIB, 1),
        );
        let _ = writeln!(
            s,
            "\n### wasm / native PSS ratio (pair by pair)\n\n| variant | N | idle | under load |\n|---|---|---|---|"
        );
        for c in &self.figures.comparisons {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                c.variant.label(),
                c.n,
                fmt_pct(c.idle_ratio.as_ref()),
                fmt_pct(c.load_ratio.as_ref())
            );
        }
        let _ = writeln!(
            s,
            "\n### Marginal memory per controller (slope of idle PSS over N)\n\n| variant | KiB per controller |\n|---|---|"
        );
        for (v, kib) in &self.figures.marginal_kib {
            let _ = writeln!(
                s,
                "| {} | {} |",
                v.label(),
                kib.map(|k| format!("{k:.0}"))
                    .unwrap_or_else(|| "– (needs two N)".into())
            );
        }
        s.push_str("\n## Latency\n");
        table(
            &mut s,
            "Event→reconcile p50 / p99, ms",
            "From the driver's write of nonce j in namespace 0 until controller 0's reconcile started (its stamp, same clock), per run p50 / p99 over the measured cycles.",
            &|c| {
                format!(
                    "{} / {}",
                    fmt_summary(c.reconcile_p50_ms.as_ref(), 1.0, 2),
                    fmt_summary(c.reconcile_p99_ms.as_ref(), 1.0, 2)
                )
            },
        );
        table(
            &mut s,
            "Ring latency p50 / p99, ms",
            "From writing nonce j in namespace 0 until the driver's watch of namespace N sees it (N hops).",
            &|c| {
                format!(
                    "{} / {}",
                    fmt_summary(c.ring_p50_ms.as_ref(), 1.0, 1),
                    fmt_summary(c.ring_p99_ms.as_ref(), 1.0, 1)
                )
            },
        );
        let _ = writeln!(
            s,
            "\n### wasm − native latency differences, ms (pair by pair)\n\n| variant | N | event→reconcile p50 | p99 | ring p50 | ring p99 |\n|---|---|---|---|---|---|"
        );
        for c in &self.figures.comparisons {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                c.variant.label(),
                c.n,
                fmt_summary(c.reconcile_p50_delta_ms.as_ref(), 1.0, 2),
                fmt_summary(c.reconcile_p99_delta_ms.as_ref(), 1.0, 2),
                fmt_summary(c.ring_p50_delta_ms.as_ref(), 1.0, 1),
                fmt_summary(c.ring_p99_delta_ms.as_ref(), 1.0, 1)
            );
        }
        let _ = writeln!(
            s,
            "\n## Churn\n\nOne controller; a burst of K = {} Ring writes in its namespace ({} in flight); copies per second from the first write until every copy arrived.\n\n| variant | copies/s | × native | upstream requests |\n|---|---|---|---|",
            self.measured.churn.first().map(|c| c.k).unwrap_or_default(),
            self.measured
                .churn
                .first()
                .map(|c| c.parallel)
                .unwrap_or_default()
        );
        for c in &self.figures.churn {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                c.variant.label(),
                fmt_summary(c.per_second.as_ref(), 1.0, 0),
                fmt_summary(c.ratio_to_native.as_ref(), 1.0, 2),
                fmt_summary(c.requests.as_ref(), 1.0, 0)
            );
        }
        s.push_str("\n## Upstream requests and watches (apiserver audit log)\n");
        table(
            &mut s,
            "Requests of the controllers over a whole ring launch: total / list / watch",
            "Every request of the launch (start, warm-up, settle, cycles, stop) except the driver's own, counted once per audit ID.",
            &|c| {
                format!(
                    "{} / {} / {}",
                    fmt_summary(c.requests.as_ref(), 1.0, 0),
                    fmt_summary(c.lists.as_ref(), 1.0, 0),
                    fmt_summary(c.watches.as_ref(), 1.0, 0)
                )
            },
        );
        table(
            &mut s,
            "Host: linear memory per module (KiB) / upstream watches open, when idle",
            "From the host's metrics endpoint; native controllers have none.",
            &|c| match (&c.linear_bytes_per_module, &c.open_upstream_watches) {
                (Some(l), Some(w)) => format!(
                    "{} / {}",
                    fmt_summary(Some(l), 1024.0, 0),
                    fmt_summary(Some(w), 1.0, 0)
                ),
                _ => "–".into(),
            },
        );
        table(
            &mut s,
            "Startup: until the first ring cycle completed, ms",
            "Processes started (and, for the host, modules compiled or loaded from its cache) until the first nonce went round.",
            &|c| fmt_summary(c.startup_ms.as_ref(), 1.0, 0),
        );
        if let Some(st) = &m.statics {
            let _ = writeln!(
                s,
                "\n## Modules\n\nWith the host's engine configuration and its cache of precompiled modules. Instantiation: {} instantiations of `ring-controller` from one pre-instantiation, each into a fresh store (stub imports; WASI context not included): p50 {:.3} ms, p99 {:.3} ms; dropping the store afterwards: p50 {:.3} ms. (`cargo bench -p host-shim --bench abi` times the host's whole instantiate + `_start` + exit.)\n\n| module | `.wasm` (release) | cold compile, ms | load from cache, ms |\n|---|---|---|---|",
                st.instantiate.count,
                st.instantiate.p50_ms,
                st.instantiate.p99_ms,
                st.instantiate.drop_p50_ms
            );
            for w in &st.wasm {
                let _ = writeln!(
                    s,
                    "| {} | {:.0} KiB | {} | {} |",
                    w.name,
                    w.bytes as f64 / 1024.0,
                    fmt_summary(Summary::of(w.compile_ms.clone()).as_ref(), 1.0, 0),
                    fmt_summary(Summary::of(w.cache_load_ms.clone()).as_ref(), 1.0, 2)
                );
            }
        }
        s.push_str("\n## Resume from disk vs linear memory size\n\n");
        if m.resume.is_empty() {
            let _ = writeln!(
                s,
                "The resume curve did not run: {}",
                self.measured
                    .unavailable(Variant::WasmSuspend)
                    .unwrap_or("it needs the wasm-suspend variant (and no --no-resume-curve)")
            );
        } else {
            s.push_str("One ring-controller module holding `RING_BALLAST_MIB` of written memory, suspended after `idleAfter` and woken by a Ring write, again and again; times are the host's own (`kube_wasm_module_{suspend,resume}_duration_seconds`).\n\n| ballast, MiB | linear memory, MiB | snapshot, MiB | suspend p50, ms | resume p50, ms | resume max, ms | resumes |\n|---|---|---|---|---|---|---|\n");
            for p in &m.resume {
                let _ = writeln!(
                    s,
                    "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
                    p.ballast_mib,
                    p.linear_memory_bytes as f64 / MIB_BYTES,
                    p.snapshot_bytes as f64 / MIB_BYTES,
                    stats::median(&p.suspend_ms).unwrap_or(f64::NAN),
                    stats::median(&p.resume_ms).unwrap_or(f64::NAN),
                    p.resume_ms.iter().copied().fold(f64::NAN, f64::max),
                    p.resume_ms.len()
                );
            }
        }
        let ring_resumes = m
            .ring
            .iter()
            .filter_map(|r| {
                r.host_end
                    .as_ref()
                    .filter(|h| h.resumes > 0)
                    .map(|h| (r.n, h))
            })
            .collect::<Vec<_>>();
        if !ring_resumes.is_empty() {
            s.push_str("\nResumes during the ring launches of wasm-suspend (modules woken by the ring's own writes):\n\n| N | linear memory per module, KiB | resumes | mean resume, ms |\n|---|---|---|---|\n");
            for (n, h) in ring_resumes {
                let _ = writeln!(
                    s,
                    "| {n} | {:.0} | {} | {:.2} |",
                    h.linear_memory_bytes as f64 / h.modules.max(1) as f64 / 1024.0,
                    h.resumes,
                    h.resume_seconds * 1000.0 / h.resumes as f64
                );
            }
        }
        s.push_str(&super::levers::section(m));
        s.push_str(&super::mixed::section(m));
        s.push_str(&super::budget::section(m));
        s.push_str(&super::suspended_scale::section(m));
        s.push_str(&super::cold_start::section(m));
        s.push_str(&super::replicas::section(m));
        s.push_str(&super::soak::section(m));
        if !plots.is_empty() {
            s.push_str("\n## Plots\n\n");
            for name in plots {
                let _ = writeln!(s, "![{name}]({name})");
            }
        }
        s.push_str("\n## Method\n\n- One control plane (kube-apiserver and etcd on loopback, the version above) for every variant, in the same run; variants interleaved per N and run, so pair r of two variants ran minutes apart at most.\n- Ring: N controllers, controller i copies the Ring's nonce from namespace i to namespace i+1 (N+1 namespaces; fresh ones per launch). Warm-up cycles first (the first one proves every controller is up), then the settle time, then the idle samples, then the measured cycles one after another.\n- Memory: PSS from `/proc/PID/smaps_rollup`, summed over the native processes; the host is one process.\n- Requests: lines the audit log gained during the launch, less the driver's (its own User-Agent).\n");
        s
    }
}

fn verdict(holds: Option<bool>) -> &'static str {
    match holds {
        Some(true) => "holds",
        Some(false) => "**fails**",
        None => "not measured",
    }
}
