//! Figures as text: a [`Summary`] as its median (and p99 over several runs).

use crate::stats::Summary;

/// `s` divided by `scale` with `digits` decimals: `median (p99 p99)`, the median alone for one
/// run, `–` for none.
pub fn fmt_summary(s: Option<&Summary>, scale: f64, digits: usize) -> String {
    match s {
        Some(s) if s.runs.len() > 1 => format!(
            "{:.*} (p99 {:.*})",
            digits,
            s.median / scale,
            digits,
            s.p99 / scale
        ),
        Some(s) => format!("{:.*}", digits, s.median / scale),
        None => "–".into(),
    }
}

/// `s` (a fraction) as a percentage: `median % (p99 p99 %)`, as [`fmt_summary`].
pub fn fmt_pct(s: Option<&Summary>) -> String {
    match s {
        Some(s) if s.runs.len() > 1 => {
            format!("{:.1} % (p99 {:.1} %)", s.median * 100.0, s.p99 * 100.0)
        }
        Some(s) => format!("{:.1} %", s.median * 100.0),
        None => "–".into(),
    }
}
