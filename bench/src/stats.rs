//! Statistics over samples: percentiles (nearest rank), the median/p99 summary the report
//! prints for every figure, and a mean with its standard error.

use serde::{Deserialize, Deserializer, Serialize};

/// Reads back a figure that is NaN when nothing was measured (a mean over no samples): JSON
/// has no NaN, so serde_json writes it as `null`, and this reads `null` as NaN
/// (`#[serde(deserialize_with = "crate::stats::null_as_nan")]`).
///
/// # Errors
/// If the value is neither a number nor `null`.
pub fn null_as_nan<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

/// The `p`-th percentile (0–100) of `values` by the nearest-rank method; `None` if empty.
/// NaN values are ignored.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The mean of `values` and the variance of that mean (the sample variance over n; its square
/// root is the standard error); `None` for fewer than two values.
pub fn mean_and_variance_of_mean(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((mean, variance / n as f64))
}

/// The median (nearest rank: the lower middle of an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50.0)
}

/// A figure measured once per run: its median and p99 over the runs, and every run's value.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// The median over runs.
    pub median: f64,
    /// The 99th percentile over runs (with few runs: the largest).
    pub p99: f64,
    /// One value per run, in run order.
    pub runs: Vec<f64>,
}

impl Summary {
    /// The summary of per-run values; `None` if there are none.
    pub fn of(runs: Vec<f64>) -> Option<Self> {
        Some(Self {
            median: median(&runs)?,
            p99: percentile(&runs, 99.0)?,
            runs,
        })
    }
}

/// The ratio `a[i] / b[i]` of each pair of runs (pairs where `b[i]` is 0 are skipped).
pub fn pairwise_ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .filter(|(_, b)| **b != 0.0)
        .map(|(a, b)| a / b)
        .collect()
}

/// The difference `a[i] - b[i]` of each pair of runs.
pub fn pairwise_differences(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(a, b)| a - b).collect()
}

/// The least-squares slope of `y` over `x`; `None` with fewer than two distinct `x`.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    Some(sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_nothing_measured_reads_back_as_nan() {
        #[derive(Serialize, Deserialize)]
        struct Figure {
            #[serde(deserialize_with = "null_as_nan")]
            ms: f64,
        }
        let written = serde_json::to_string(&Figure { ms: f64::NAN }).expect("written");
        assert_eq!(written, r#"{"ms":null}"#);
        let read: Figure = serde_json::from_str(&written).expect("read back");
        assert!(read.ms.is_nan());
        let read: Figure = serde_json::from_str(r#"{"ms":2.5}"#).expect("a number");
        assert_eq!(read.ms, 2.5);
        assert!(serde_json::from_str::<Figure>(r#"{"ms":"2.5"}"#).is_err());
    }

    #[test]
    fn the_mean_comes_with_the_variance_of_the_mean() {
        assert_eq!(mean_and_variance_of_mean(&[1.0]), None);
        let (mean, var) = mean_and_variance_of_mean(&[1.0, 2.0, 3.0, 6.0]).expect("four");
        assert!((mean - 3.0).abs() < 1e-12);
        // Sample variance (4 + 1 + 0 + 9) / 3, over 4 values.
        assert!((var - 14.0 / 3.0 / 4.0).abs() < 1e-12, "{var}");
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50.0), Some(2.0));
        assert_eq!(percentile(&[5.0], 99.0), Some(5.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.0));
    }

    #[test]
    fn summaries_ratios_and_slopes() {
        let s = Summary::of(vec![3.0, 1.0, 2.0]).expect("values");
        assert_eq!((s.median, s.p99), (2.0, 3.0));
        assert_eq!(s.runs, [3.0, 1.0, 2.0]);
        assert!(Summary::of(Vec::new()).is_none());
        assert_eq!(
            pairwise_ratios(&[1.0, 4.0, 1.0], &[2.0, 2.0, 0.0]),
            [0.5, 2.0]
        );
        assert_eq!(pairwise_differences(&[3.0, 1.0], &[1.0, 1.0]), [2.0, 0.0]);
        let s = slope(&[(1.0, 10.0), (2.0, 12.0), (5.0, 18.0)]).expect("slope");
        assert!((s - 2.0).abs() < 1e-9);
        assert!(slope(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
    }
}
