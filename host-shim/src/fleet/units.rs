//! Sizes and durations as people write them in a manifest: `64Mi`, `1G`, `65536`; `500ms`,
//! `30s`, `5m`, `1h`.

use std::time::Duration;

/// Parses a byte size: a whole number with an optional Kubernetes quantity suffix, binary
/// (`Ki`, `Mi`, `Gi`, `Ti`: powers of 1024) or decimal (`k`, `M`, `G`, `T`: powers of 1000),
/// e.g. `64Mi` = 67108864. No fractions, no exponents.
///
/// # Errors
/// A message saying why `text` is not a size (also for sizes over `u64::MAX`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    const UNITS: &[(&str, u64)] = &[
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
    ];
    let (digits, factor) = UNITS
        .iter()
        .find_map(|(suffix, factor)| text.strip_suffix(suffix).map(|d| (d, *factor)))
        .unwrap_or((text, 1));
    let number = parse_digits(digits).ok_or_else(|| {
        format!("{text:?} is not a size (a whole number of bytes, optionally with Ki, Mi, Gi, Ti, k, M, G or T)")
    })?;
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Parses a duration: a whole number followed by `ms`, `s`, `m` or `h`, e.g. `500ms`, `5m`.
///
/// # Errors
/// A message saying why `text` is not a duration.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    const UNITS: &[(&str, u64)] = &[("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000)];
    let parsed = UNITS.iter().find_map(|(suffix, millis)| {
        let digits = text.strip_suffix(suffix)?;
        let n = parse_digits(digits)?;
        n.checked_mul(*millis).map(Duration::from_millis)
    });
    parsed.ok_or_else(|| {
        format!("{text:?} is not a duration (a whole number followed by ms, s, m or h, e.g. 30s)")
    })
}

fn parse_digits(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_kubernetes_suffixes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64Mi"), Ok(64 << 20));
        assert_eq!(parse_size("1Gi"), Ok(1 << 30));
        assert_eq!(parse_size("2k"), Ok(2000));
        assert_eq!(parse_size("3M"), Ok(3_000_000));
        for bad in [
            "",
            "Mi",
            "64Q",
            "-1",
            "1.5Mi",
            "64 Mi",
            "64mi",
            "99999999999999999999",
        ] {
            let err = parse_size(bad).expect_err(bad);
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
        assert!(
            parse_size("99999999999Ti")
                .expect_err("overflow")
                .contains("too large")
        );
    }

    #[test]
    fn durations_take_a_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "30", "s", "1.5s", "-1s", "3d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
