//! The whole report as written to `report.json`: the goals, the figures, the measurements.

use serde::Serialize;

use super::figures::Figures;
use super::goals::{Goal, goals};
use super::measured::Measured;
use super::{budget, cold_start, mixed, replicas, scale, soak, suspended_scale};

/// The whole report, as written to `report.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The goals.
    pub goals: Vec<Goal>,
    /// The figures (its fields are the document's: `cells`, `comparisons`, `marginal_kib`,
    /// `churn`).
    #[serde(flatten)]
    pub figures: Figures,
    /// The raw measurements.
    pub measured: Measured,
}

impl Report {
    /// Computes the report from the measurements.
    pub fn new(measured: Measured) -> Self {
        let figures = Figures::new(&measured);
        let mut goals = goals(&figures, &measured);
        goals.extend(mixed::goals(&measured));
        goals.extend(cold_start::goals(&measured));
        goals.extend(replicas::goals(&measured));
        goals.extend(budget::goals(&measured));
        goals.extend(scale::goals(&measured));
        goals.push(suspended_scale::goal(&measured));
        goals.push(soak::goal(&measured));
        Self {
            goals,
            figures,
            measured,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_stay_top_level_fields_of_report_json() {
        let report = Report::new(Measured::default());
        let json = serde_json::to_value(&report).expect("serialises");
        let keys: Vec<&str> = json
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        // serde_json's map is sorted by key.
        assert_eq!(
            keys,
            [
                "cells",
                "churn",
                "comparisons",
                "goals",
                "marginal_kib",
                "measured"
            ]
        );
    }
}
