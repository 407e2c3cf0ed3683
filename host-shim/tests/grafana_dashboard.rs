//! `deploy/grafana-dashboard.json` shows what the host exports: every query names only series
//! of the host's metric families (read from its own registry) and only labels those series
//! carry (or `le`, or the scrape's `instance` and `job`), and every family is on a panel.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::exported_metrics::{Family, exported};
use serde_json::Value;

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/grafana-dashboard.json");
    let text = std::fs::read_to_string(&path).expect("deploy/grafana-dashboard.json");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every PromQL text of the dashboard with its legend: the panels' targets and the query
/// variables.
fn queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(!panels.is_empty(), "a dashboard without panels");
    for panel in panels {
        if panel["type"] == "row" {
            continue;
        }
        let targets = panel["targets"].as_array().expect("a panel's targets");
        assert!(!targets.is_empty(), "panel {} has no query", panel["title"]);
        for target in targets {
            let expr = target["expr"].as_str().expect("a target's expr");
            let legend = target["legendFormat"].as_str().unwrap_or_default();
            found.push((expr.to_owned(), legend.to_owned()));
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("templating")
    {
        if variable["type"] == "query" {
            let query = variable["query"]["query"]
                .as_str()
                .or(variable["query"].as_str())
                .expect("a variable's query");
            found.push((query.to_owned(), String::new()));
        }
    }
    found
}

/// The identifiers of a PromQL text (metric names, labels, functions, keywords).
fn identifiers(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|word| word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .collect()
}

/// The label names a PromQL text uses: in `by (…)`, `without (…)`, `on (…)`, `ignoring (…)`,
/// selectors' matchers `{label=…}` and `label_values(metric, label)`.
fn labels_used(expr: &str) -> BTreeSet<String> {
    let mut labels = BTreeSet::new();
    for keyword in ["by", "without", "on", "ignoring"] {
        let mut rest = expr;
        while let Some(at) = rest.find(&format!("{keyword} (")) {
            let list = &rest[at + keyword.len() + 2..];
            let end = list.find(')').expect("a closed label list");
            labels.extend(list[..end].split(',').map(|l| l.trim().to_owned()));
            rest = &list[end..];
        }
    }
    let mut rest = expr;
    while let Some(open) = rest.find('{') {
        let selector = &rest[open + 1..];
        let end = selector.find('}').expect("a closed selector");
        for matcher in selector[..end].split(',') {
            let name = matcher.split(['=', '!', '~']).next().unwrap_or_default();
            labels.insert(name.trim().to_owned());
        }
        rest = &selector[end..];
    }
    if let Some(args) = expr.strip_prefix("label_values(") {
        let label = args
            .trim_end_matches(')')
            .rsplit(',')
            .next()
            .expect("a label");
        labels.insert(label.trim().to_owned());
    }
    labels.remove("");
    labels
}

/// The labels a legend format names (`{{label}}`).
fn legend_labels(legend: &str) -> BTreeSet<String> {
    legend
        .split("{{")
        .skip(1)
        .filter_map(|part| part.split_once("}}"))
        .map(|(label, _)| label.trim().to_owned())
        .collect()
}

fn family_of<'a>(families: &'a [Family], series: &str) -> Option<&'a Family> {
    families
        .iter()
        .find(|f| f.series.contains(series) || (f.kind == "gauge" && f.name == series))
}

#[test]
fn every_query_names_only_what_the_host_exports() {
    let families = exported();
    let dashboard = dashboard();
    for (expr, legend) in queries(&dashboard) {
        let mut allowed: BTreeSet<String> = ["le", "instance", "job"].map(str::to_owned).into();
        let mut names_a_metric = false;
        for word in identifiers(&expr) {
            if !word.starts_with("kube_wasm_") {
                continue;
            }
            let family = family_of(&families, word)
                .unwrap_or_else(|| panic!("`{expr}` names {word}, which the host does not export"));
            allowed.extend(family.labels.iter().cloned());
            names_a_metric = true;
        }
        assert!(names_a_metric, "`{expr}` names no metric of the host");
        for label in labels_used(&expr).union(&legend_labels(&legend)) {
            assert!(
                allowed.contains(label),
                "`{expr}` (legend `{legend}`) uses the label {label}, which its series do not have"
            );
        }
    }
}

#[test]
fn every_family_the_host_exports_is_on_the_dashboard() {
    let families = exported();
    let dashboard = dashboard();
    let named: BTreeSet<String> = queries(&dashboard)
        .iter()
        .flat_map(|(expr, _)| identifiers(expr).into_iter().map(str::to_owned))
        .collect();
    for family in &families {
        assert!(
            family.series.iter().any(|s| named.contains(s)) || named.contains(&family.name),
            "{} is on no panel of deploy/grafana-dashboard.json",
            family.name
        );
    }
}

#[test]
fn the_checks_catch_names_the_host_does_not_have() {
    let families = exported();
    assert!(family_of(&families, "kube_wasm_module_entries_total").is_some());
    assert!(family_of(&families, "kube_wasm_module_entries").is_none());
    assert!(family_of(&families, "kube_wasm_module_op_duration_seconds_bucket").is_some());
    assert!(family_of(&families, "kube_wasm_module_cpu_seconds_total").is_none());
    assert_eq!(
        labels_used(r#"sum by (le, kind) (rate(x{module=~"$module"}[5m]))"#),
        ["kind", "le", "module"].map(str::to_owned).into()
    );
    assert_eq!(
        labels_used("label_values(kube_wasm_module_state, module)"),
        ["module".to_owned()].into()
    );
    assert_eq!(legend_labels("{{module}} {{quota}}").len(), 2);
}
