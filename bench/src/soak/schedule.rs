//! The chaos schedule: which disruptions, in which order, how often. The kinds are taken in
//! turn, one every `every`, starting one `every` after the traffic starts and ending before the
//! run's last `every` (so the last disruption has time to heal before the final check).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

/// One kind of disruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChaosKind {
    /// Restart kube-apiserver (`control-plane.sh restart-apiserver`): every watch and
    /// connection ends, and the API server is down until it is ready again.
    Apiserver,
    /// Restart etcd (`control-plane.sh restart-etcd`): kube-apiserver stays up but cannot
    /// read or write until etcd is back.
    Etcd,
    /// Cut every TCP connection to kube-apiserver (`control-plane.sh drop-connections`, the
    /// kernel resets them): watches and pooled connections drop while the servers stay up.
    Watches,
    /// SIGKILL the host and start it again with the same manifest.
    Host,
}

impl ChaosKind {
    /// Every kind, in the default order.
    pub const ALL: [ChaosKind; 4] = [
        ChaosKind::Apiserver,
        ChaosKind::Watches,
        ChaosKind::Etcd,
        ChaosKind::Host,
    ];

    /// Its name on the command line and in the report.
    pub fn label(self) -> &'static str {
        match self {
            ChaosKind::Apiserver => "apiserver",
            ChaosKind::Etcd => "etcd",
            ChaosKind::Watches => "watches",
            ChaosKind::Host => "host",
        }
    }

    /// Whether the API server is down while it lasts (its window is left out of stalls).
    pub fn takes_apiserver_down(self) -> bool {
        matches!(self, ChaosKind::Apiserver | ChaosKind::Etcd)
    }
}

impl fmt::Display for ChaosKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for ChaosKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ChaosKind::ALL
            .into_iter()
            .find(|k| k.label() == s)
            .ok_or_else(|| format!("unknown chaos {s:?}: one of apiserver, etcd, watches, host"))
    }
}

/// When each disruption happens: `(offset from the traffic's start, kind)`, in time order.
/// Empty when `kinds` is empty or `every` is zero.
pub fn plan(
    kinds: &[ChaosKind],
    every: Duration,
    duration: Duration,
) -> Vec<(Duration, ChaosKind)> {
    if kinds.is_empty() || every.is_zero() {
        return Vec::new();
    }
    (1u32..)
        .map(|i| every * i)
        .take_while(|at| *at + every <= duration)
        .zip(kinds.iter().copied().cycle())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_in_turn_leaving_the_last_interval_quiet() {
        let s = Duration::from_secs;
        let kinds = [ChaosKind::Apiserver, ChaosKind::Host];
        assert_eq!(
            plan(&kinds, s(40), s(170)),
            [
                (s(40), ChaosKind::Apiserver),
                (s(80), ChaosKind::Host),
                (s(120), ChaosKind::Apiserver),
            ]
        );
        assert_eq!(plan(&kinds, s(40), s(160)).len(), 3);
        assert!(plan(&kinds, s(40), s(79)).is_empty());
        assert!(plan(&[], s(40), s(400)).is_empty());
        assert!(plan(&kinds, Duration::ZERO, s(400)).is_empty());
        assert_eq!("etcd".parse::<ChaosKind>(), Ok(ChaosKind::Etcd));
        assert!("disk".parse::<ChaosKind>().is_err());
    }
}
