//! Whether a process's memory stayed bounded over a run: the median of the last third of the
//! samples taken after a warm-up against the median of the first third. A leak shows as a
//! later third above the earlier one; medians make a single spike (a module filling its memory
//! cap before the host kills it) count for nothing.

use serde::{Deserialize, Serialize};

use crate::stats;

/// When growth is judged a trend: more than `percent` of the first third's median and more
/// than `floor_kib` (so a small process's few pages of noise do not fail it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tolerance {
    /// Allowed growth, in percent of the first third's median.
    pub percent: f64,
    /// Growth always allowed, in KiB.
    pub floor_kib: u64,
}

/// The verdict on one series of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Samples judged (those after the warm-up).
    pub samples: usize,
    /// Median of the first third, in KiB.
    pub first_kib: u64,
    /// Median of the last third, in KiB.
    pub last_kib: u64,
    /// The largest sample judged, in KiB.
    pub peak_kib: u64,
    /// Least-squares slope over the judged samples, in KiB per minute.
    pub slope_kib_per_min: f64,
    /// `last_kib - first_kib` (negative when it shrank), in KiB.
    pub growth_kib: i64,
    /// The same in percent of `first_kib`.
    pub growth_percent: f64,
    /// Growth within the tolerance.
    pub bounded: bool,
}

/// The fewest samples after the warm-up that are judged: two per third.
pub const MIN_SAMPLES: usize = 6;

/// Judges `samples` — `(seconds since the process started, KiB)`, in time order — leaving out
/// those before `warmup_secs`. `None` with fewer than [`MIN_SAMPLES`] left.
pub fn judge(samples: &[(f64, u64)], warmup_secs: f64, tolerance: Tolerance) -> Option<Trend> {
    let kept: Vec<(f64, u64)> = samples
        .iter()
        .copied()
        .filter(|&(t, _)| t >= warmup_secs)
        .collect();
    if kept.len() < MIN_SAMPLES {
        return None;
    }
    let third = kept.len() / 3;
    let kib = |part: &[(f64, u64)]| -> Vec<f64> { part.iter().map(|&(_, k)| k as f64).collect() };
    let first = stats::median(&kib(&kept[..third]))?;
    let last = stats::median(&kib(&kept[kept.len() - third..]))?;
    let points: Vec<(f64, f64)> = kept.iter().map(|&(t, k)| (t / 60.0, k as f64)).collect();
    let growth = last - first;
    let allowed = (first * tolerance.percent / 100.0).max(tolerance.floor_kib as f64);
    Some(Trend {
        samples: kept.len(),
        first_kib: first as u64,
        last_kib: last as u64,
        peak_kib: kept.iter().map(|&(_, k)| k).max().unwrap_or_default(),
        slope_kib_per_min: stats::slope(&points).unwrap_or(0.0),
        growth_kib: growth as i64,
        growth_percent: if first > 0.0 {
            growth / first * 100.0
        } else {
            0.0
        },
        bounded: growth <= allowed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEN_PERCENT: Tolerance = Tolerance {
        percent: 10.0,
        floor_kib: 1024,
    };

    fn series(values: &[u64]) -> Vec<(f64, u64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, &k)| (i as f64 * 2.0, k))
            .collect()
    }

    #[test]
    fn flat_memory_with_a_spike_is_bounded() {
        let s = series(&[
            50_000, 50_100, 49_900, 50_000, 250_000, 50_200, 50_100, 49_800, 50_000,
        ]);
        let t = judge(&s, 0.0, TEN_PERCENT).expect("enough samples");
        assert!(t.bounded, "{t:?}");
        assert_eq!(
            (t.first_kib, t.last_kib, t.peak_kib),
            (50_000, 50_000, 250_000)
        );
        assert_eq!(t.samples, 9);
    }

    #[test]
    fn steady_growth_is_a_trend() {
        let values: Vec<u64> = (0..30).map(|i| 50_000 + i * 500).collect();
        let t = judge(&series(&values), 0.0, TEN_PERCENT).expect("enough samples");
        assert!(!t.bounded, "{t:?}");
        assert!(t.growth_percent > 15.0, "{t:?}");
        // 500 KiB every 2 s: 15 000 KiB a minute.
        assert!((t.slope_kib_per_min - 15_000.0).abs() < 1.0, "{t:?}");
    }

    #[test]
    fn growth_under_the_floor_is_bounded_and_warm_up_is_left_out() {
        // A small process: +800 KiB is 16 % but under the 1 MiB floor.
        let t = judge(
            &series(&[5_000, 5_000, 5_000, 5_400, 5_800, 5_800]),
            0.0,
            TEN_PERCENT,
        )
        .expect("enough samples");
        assert!(t.bounded && t.growth_kib == 800, "{t:?}");
        // The warm-up's climb (samples before 10 s) is not judged.
        let s = series(&[
            10_000, 30_000, 45_000, 50_000, 50_000, 50_000, 50_100, 50_000, 50_000, 50_000, 50_200,
        ]);
        let t = judge(&s, 10.0, TEN_PERCENT).expect("enough samples");
        assert!(t.bounded && t.samples == 6, "{t:?}");
        assert!(judge(&s, 12.0, TEN_PERCENT).is_none());
    }
}
