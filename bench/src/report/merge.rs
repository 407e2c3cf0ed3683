//! Parts of one benchmark run: the whole run (`scripts/bench.sh`) takes longer than a quiet
//! machine is often free, so `scripts/bench.sh --part NAME` runs one stage of it (the ring and
//! the fleets, the ring's budgets with the idle CPU and the levers, the fleets' budgets, the
//! suspended scale) and [`merge`] makes one report of the parts.
//!
//! A part holds whole sections: every ratio of the report is computed within one part, as in a
//! whole run. So a section (the ring launches, the churn, a fleet's launches, the idle CPU…)
//! may come from one part only, and the budgets of one fleet and N (every variant's) from one
//! part only; the levers judged under the budget come from the part that holds the ring's
//! budgets at their N and the idle CPU they are weighed against. A merge that would break one
//! of these rules is refused, naming the parts.

use std::collections::BTreeMap;

use super::measured::{Measured, Unavailable};
use crate::budget::Budget;
use crate::fleet::Variant;

/// One part: a name (its folder, say) and what it measured.
#[derive(Debug, Clone)]
pub struct Part {
    /// How the merged report and its errors name the part.
    pub name: String,
    /// Its measurements (`report.json`'s).
    pub measured: Measured,
}

impl Part {
    /// The part in `json` (a `report.json` a run wrote), named after the file's stem.
    ///
    /// # Errors
    /// If the file cannot be read, or holds no measurements of this driver's shape.
    pub fn read(json: &std::path::Path) -> anyhow::Result<Self> {
        let name = json
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .ok_or_else(|| anyhow::anyhow!("{} names no file", json.display()))?;
        Ok(Self {
            name,
            measured: super::Report::read(json)?.measured,
        })
    }
}

/// The sections a part measured, by name, for its line in the merged report.
fn sections(m: &Measured) -> Vec<&'static str> {
    let mut held = Vec::new();
    let mut add = |name, present: bool| {
        if present {
            held.push(name);
        }
    };
    add("ring", !m.ring.is_empty());
    add("churn", !m.churn.is_empty());
    add("resume curve", !m.resume.is_empty());
    add("levers", !m.levers.is_empty());
    add("fleets", !m.mixed.is_empty());
    add("cold start", !m.cold_start.is_empty());
    add("replicas", m.replicas.is_some());
    add("ring budgets", !m.budgets.is_empty());
    add("edge budgets", !m.edge_budgets.is_empty());
    add("mixed budgets", !m.mixed_budgets.is_empty());
    add("Go budgets", !m.go_budgets.is_empty());
    add("idle CPU", !m.idle_cpu.is_empty());
    add("levers under the budget", !m.lever_judgements.is_empty());
    add("suspended scale", !m.suspended_scale.is_empty());
    add("soak", m.soak.is_some());
    held
}

/// Takes `section` from the one part that holds it (as `present` tells), or refuses.
fn one_part<T: Default>(
    parts: &mut [Part],
    section: &str,
    present: impl Fn(&Measured) -> bool,
    take: impl Fn(&mut Measured) -> T,
) -> anyhow::Result<(T, Option<usize>)> {
    let holders: Vec<usize> = (0..parts.len())
        .filter(|&i| present(&parts[i].measured))
        .collect();
    match holders[..] {
        [] => Ok((T::default(), None)),
        [i] => Ok((take(&mut parts[i].measured), Some(i))),
        _ => anyhow::bail!(
            "the {section} is in more than one part ({}): a section comes from one part",
            names(parts, &holders)
        ),
    }
}

fn names(parts: &[Part], which: &[usize]) -> String {
    which
        .iter()
        .map(|&i| parts[i].name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which part (by index) each fleet's budgets at one N came from.
type BudgetParts = BTreeMap<(String, usize), usize>;

/// The budgets of every part, each (fleet, N) from one part only; with the part each came from.
fn fleet_budgets(
    parts: &mut [Part],
    field: impl Fn(&mut Measured) -> &mut Vec<Budget>,
) -> anyhow::Result<(Vec<Budget>, BudgetParts)> {
    let mut from = BudgetParts::new();
    let mut all = Vec::new();
    for i in 0..parts.len() {
        for budget in std::mem::take(field(&mut parts[i].measured)) {
            let key = (budget.fleet.clone(), budget.n);
            match from.get(&key) {
                Some(&j) if j != i => anyhow::bail!(
                    "the {} budgets at N = {} are in more than one part ({}): every variant's \
                     budget at one N comes from one part",
                    key.0,
                    key.1,
                    names(parts, &[j, i])
                ),
                _ => {
                    from.insert(key, i);
                }
            }
            all.push(budget);
        }
    }
    Ok((all, from))
}

/// One report's measurements from `parts`, in their order: each section from the part that
/// holds it (see the module's rules), the variants run in any part, the ring's N and the
/// static figures from the part that ran the ring (else the first), and one line of context
/// per part (its date, machine, load and parameters, and what it holds).
///
/// # Errors
/// If there is no part, or a section (or a fleet's budgets at one N) is in two parts, or the
/// levers under the budget are in a part without the ring's budgets at their N or without
/// the idle CPU.
pub fn merge(mut parts: Vec<Part>) -> anyhow::Result<Measured> {
    anyhow::ensure!(!parts.is_empty(), "no part to merge");
    let mut context = vec![(
        "parts".to_owned(),
        format!(
            "this report merges {} {}, each a stage of the whole run (`scripts/bench.sh --part`); every ratio is computed within one part",
            parts.len(),
            if parts.len() == 1 { "part" } else { "parts" }
        ),
    )];
    for part in &parts {
        let held = sections(&part.measured);
        let facts: Vec<String> = part
            .measured
            .context
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        context.push((
            format!("part `{}` ({})", part.name, held.join(", ")),
            facts.join("; "),
        ));
    }

    let mut variants: Vec<Variant> = Vec::new();
    let mut unavailable: Vec<Unavailable> = Vec::new();
    for part in &parts {
        variants.extend(&part.measured.variants);
        unavailable.extend(part.measured.unavailable.iter().cloned());
    }
    variants = Variant::ALL
        .into_iter()
        .filter(|v| variants.contains(v))
        .collect();
    let mut seen = Vec::new();
    unavailable.retain(|u| {
        let first = !variants.contains(&u.variant) && !seen.contains(&u.variant);
        seen.push(u.variant);
        first
    });

    // A list section from the one part that holds it, and which part that was.
    macro_rules! section {
        ($field:ident, $name:literal) => {
            one_part(
                &mut parts,
                $name,
                |m| !m.$field.is_empty(),
                |m| std::mem::take(&mut m.$field),
            )?
        };
    }
    let (ring, ring_part) = section!(ring, "ring");
    let base = ring_part.unwrap_or(0);
    let ns = parts[base].measured.ns.clone();
    let statics = parts[base]
        .measured
        .statics
        .take()
        .or_else(|| parts.iter_mut().find_map(|p| p.measured.statics.take()));
    let (churn, _) = section!(churn, "churn");
    let (resume, _) = section!(resume, "resume curve");
    let (levers, _) = section!(levers, "levers");
    let (mixed, _) = section!(mixed, "fleets");
    let (cold_start, _) = section!(cold_start, "cold start");
    let (suspended_scale, _) = section!(suspended_scale, "suspended scale");
    let (idle_cpu, idle_part) = section!(idle_cpu, "idle CPU");
    let (lever_judgements, judged_part) = section!(lever_judgements, "levers under the budget");
    let (replicas, _) = one_part(
        &mut parts,
        "replicas",
        |m| m.replicas.is_some(),
        |m| m.replicas.take(),
    )?;
    let replicas_skipped = if replicas.is_some() {
        None
    } else {
        parts[base].measured.replicas_skipped.clone()
    };
    let (soak, _) = one_part(&mut parts, "soak", |m| m.soak.is_some(), |m| m.soak.take())?;

    let (budgets, ring_budgets_from) = fleet_budgets(&mut parts, |m| &mut m.budgets)?;
    let (edge_budgets, _) = fleet_budgets(&mut parts, |m| &mut m.edge_budgets)?;
    let (mixed_budgets, _) = fleet_budgets(&mut parts, |m| &mut m.mixed_budgets)?;
    let (go_budgets, _) = fleet_budgets(&mut parts, |m| &mut m.go_budgets)?;
    if let Some(judged) = judged_part {
        for judgement in &lever_judgements {
            let on = budgets
                .iter()
                .find(|b| b.n == judgement.n && b.variant == judgement.variant)
                .and_then(|b| ring_budgets_from.get(&(b.fleet.clone(), b.n)));
            anyhow::ensure!(
                on == Some(&judged) && idle_part == Some(judged),
                "the levers under the budget (part {}) are weighed against the ring's budgets at \
                 N = {} and the idle CPU of the same part",
                parts[judged].name,
                judgement.n
            );
        }
    }

    let incomplete = parts
        .iter()
        .flat_map(|p| {
            p.measured
                .incomplete
                .iter()
                .map(move |line| format!("part `{}`: {line}", p.name))
        })
        .collect();
    Ok(Measured {
        context,
        variants,
        unavailable,
        ns,
        ring,
        churn,
        resume,
        statics,
        levers,
        cold_start,
        mixed,
        replicas,
        replicas_skipped,
        budgets,
        edge_budgets,
        mixed_budgets,
        go_budgets,
        idle_cpu,
        lever_judgements,
        incomplete,
        suspended_scale,
        soak,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{BudgetLever, IdleCpu, LeverJudgement};
    use crate::workloads::RingRun;

    fn part(name: &str, measured: Measured) -> Part {
        Part {
            name: name.into(),
            measured,
        }
    }

    fn context(date: &str) -> Vec<(String, String)> {
        vec![("date".into(), date.into())]
    }

    fn budget(fleet: &str, variant: Variant, n: usize) -> Budget {
        Budget {
            fleet: fleet.into(),
            variant,
            n,
            unconstrained: RingRun::empty(variant, n),
            unconstrained_p99_ms: 10.0,
            probes: Vec::new(),
            budget_bytes: Some(40 << 20),
        }
    }

    fn idle(variant: Variant, n: usize) -> IdleCpu {
        IdleCpu {
            variant,
            n,
            cpu_s_per_hour: 1.0,
            window_s: 120.0,
            windows_s_per_hour: Vec::new(),
        }
    }

    fn judged(n: usize) -> LeverJudgement {
        LeverJudgement {
            lever: BudgetLever::ReleaseIdleStacks,
            variant: Variant::Wasm,
            n,
            off: budget("ring", Variant::Wasm, n),
            off_cpu: idle(Variant::Wasm, n),
        }
    }

    fn ring_part() -> Part {
        part(
            "ring",
            Measured {
                context: context("2026-12-01T05:00:00Z"),
                variants: vec![Variant::Wasm, Variant::Native],
                ns: vec![1, 10],
                ring: vec![RingRun::empty(Variant::Native, 10)],
                replicas_skipped: Some("--replicas-modules 0".into()),
                ..Measured::default()
            },
        )
    }

    fn budget_part() -> Part {
        part(
            "budget",
            Measured {
                context: context("2026-12-02T05:00:00Z"),
                variants: vec![Variant::Native, Variant::WasmSuspend],
                ns: vec![1, 10, 50, 100],
                budgets: vec![
                    budget("ring", Variant::Native, 100),
                    budget("ring", Variant::Wasm, 100),
                ],
                idle_cpu: vec![idle(Variant::Native, 100), idle(Variant::Wasm, 100)],
                lever_judgements: vec![judged(100)],
                incomplete: vec!["budget ring N=1000 native: timed out".into()],
                replicas_skipped: Some("--replicas-modules 0".into()),
                ..Measured::default()
            },
        )
    }

    #[test]
    fn each_section_comes_from_the_part_that_holds_it() {
        let merged = merge(vec![ring_part(), budget_part()]).expect("merged");
        assert_eq!(merged.ring.len(), 1);
        assert_eq!(merged.budgets.len(), 2);
        assert_eq!(merged.idle_cpu.len(), 2);
        assert_eq!(merged.lever_judgements.len(), 1);
        // The ring's N are the ring part's, not the budget part's defaults.
        assert_eq!(merged.ns, vec![1, 10]);
        assert_eq!(
            merged.variants,
            vec![Variant::Native, Variant::Wasm, Variant::WasmSuspend]
        );
        assert_eq!(
            merged.incomplete,
            vec!["part `budget`: budget ring N=1000 native: timed out".to_string()]
        );
        assert_eq!(
            merged.replicas_skipped.as_deref(),
            Some("--replicas-modules 0")
        );
        // One line for the merge and one a part, saying what each holds and when it ran.
        assert_eq!(merged.context.len(), 3, "{:?}", merged.context);
        assert_eq!(merged.context[1].0, "part `ring` (ring)");
        assert_eq!(merged.context[1].1, "date: 2026-12-01T05:00:00Z");
        assert_eq!(
            merged.context[2].0,
            "part `budget` (ring budgets, idle CPU, levers under the budget)"
        );
    }

    #[test]
    fn a_section_in_two_parts_is_refused() {
        let mut second = budget_part();
        second.measured.ring = vec![RingRun::empty(Variant::Wasm, 10)];
        let err = merge(vec![ring_part(), second]).expect_err("two rings");
        assert!(
            err.to_string()
                .contains("the ring is in more than one part (ring, budget)"),
            "{err}"
        );
    }

    #[test]
    fn budgets_split_by_n_across_parts_but_not_one_n_across_two() {
        let mut large = part(
            "large",
            Measured {
                budgets: vec![budget("ring", Variant::Native, 1000)],
                ..Measured::default()
            },
        );
        let merged = merge(vec![budget_part(), large.clone()]).expect("N = 100 and 1,000");
        assert_eq!(merged.budgets.len(), 3);
        large.measured.budgets = vec![budget("ring", Variant::WasmSuspend, 100)];
        let err = merge(vec![budget_part(), large]).expect_err("N = 100 in two parts");
        assert!(
            err.to_string()
                .contains("the ring budgets at N = 100 are in more than one part (budget, large)"),
            "{err}"
        );
    }

    #[test]
    fn levers_under_the_budget_need_their_budgets_and_idle_cpu_in_their_part() {
        let mut levers = budget_part();
        levers.measured.budgets.clear();
        let budgets = part(
            "budgets",
            Measured {
                budgets: vec![budget("ring", Variant::Wasm, 100)],
                ..Measured::default()
            },
        );
        let err = merge(vec![levers, budgets]).expect_err("judged against another part");
        assert!(err.to_string().contains("levers under the budget"), "{err}");
        assert!(merge(Vec::new()).is_err());
    }
}
