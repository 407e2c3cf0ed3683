//! Differences between the two builds' runs, and the readable table they are reported in.

/// What part of a run a difference is in: the first word of [`Difference::aspect`].
pub const ASPECTS: &[&str] = &["state", "requests", "observations"];

/// One difference between the two runs of a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The scenario (its program's name).
    pub scenario: String,
    /// `state <object> <field>`, `requests <step> …` or `observations <step> …`.
    pub aspect: String,
    /// What the first build (native) showed; `(none)` when it showed nothing there.
    pub left: String,
    /// What the second build (wasm) showed.
    pub right: String,
}

impl Difference {
    /// The row as one line `aspect | left | right`, what allowlist patterns match against.
    pub fn line(&self) -> String {
        format!("{} | {} | {}", self.aspect, self.left, self.right)
    }
}

/// The rows of two sequences that differ, position by position: `aspect #i`.
pub fn sequence_differences(
    scenario: &str,
    aspect: &str,
    left: &[String],
    right: &[String],
) -> Vec<Difference> {
    let none = "(none)".to_string();
    (0..left.len().max(right.len()))
        .filter_map(|i| {
            let (l, r) = (left.get(i).unwrap_or(&none), right.get(i).unwrap_or(&none));
            (l != r).then(|| Difference {
                scenario: scenario.to_string(),
                aspect: format!("{aspect} #{}", i + 1),
                left: l.clone(),
                right: r.clone(),
            })
        })
        .collect()
}

/// The differences as a table with aligned columns `scenario | aspect | <left> | <right>`.
pub fn table(left_label: &str, right_label: &str, rows: &[Difference]) -> String {
    let header = ["scenario", "aspect", left_label, right_label];
    let cells: Vec<[&str; 4]> = rows
        .iter()
        .map(|d| [&d.scenario[..], &d.aspect[..], &d.left[..], &d.right[..]])
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let render = |row: &[&str; 4]| {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        cells.join(" | ").trim_end().to_string()
    };
    let mut out = vec![render(&header)];
    out.push(widths.map(|w| "-".repeat(w)).join("-+-"));
    out.extend(cells.iter().map(render));
    out.join("\n")
}
