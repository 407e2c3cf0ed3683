//! When the API server was down: the windows the chaos caused (a restart of kube-apiserver or
//! etcd, from the moment it was begun until the driver's own request was answered again), and
//! how much of an interval they cover. A change that waited through such a window waited for
//! the API server, not for its module.

use serde::Serialize;

/// Intervals on the run's clock, in seconds since the soak started.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Downtime {
    windows: Vec<(f64, f64)>,
}

impl Downtime {
    /// Adds the window `from..to` (seconds; an empty or reversed one is ignored).
    pub fn add(&mut self, from: f64, to: f64) {
        if to > from {
            self.windows.push((from, to));
        }
    }

    /// The windows merged where they overlap, in time order.
    pub fn merged(&self) -> Vec<(f64, f64)> {
        let mut sorted = self.windows.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::with_capacity(sorted.len());
        for (from, to) in sorted {
            match merged.last_mut() {
                Some(last) if from <= last.1 => last.1 = last.1.max(to),
                _ => merged.push((from, to)),
            }
        }
        merged
    }

    /// The total time down, in seconds (overlaps counted once).
    pub fn total(&self) -> f64 {
        self.merged().iter().map(|(a, b)| b - a).sum()
    }

    /// How many seconds of `from..to` fall in a window.
    pub fn overlap(&self, from: f64, to: f64) -> f64 {
        self.merged()
            .iter()
            .map(|&(a, b)| (b.min(to) - a.max(from)).max(0.0))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_measures_overlap() {
        let mut d = Downtime::default();
        d.add(10.0, 14.0);
        d.add(30.0, 31.0);
        d.add(12.0, 16.0);
        d.add(5.0, 5.0);
        assert_eq!(d.merged(), [(10.0, 16.0), (30.0, 31.0)]);
        assert_eq!(d.total(), 7.0);
        assert_eq!(d.overlap(0.0, 100.0), 7.0);
        assert_eq!(d.overlap(15.0, 30.5), 1.5);
        assert_eq!(d.overlap(17.0, 29.0), 0.0);
    }
}
