//! Time errors, as `tokio::time::error`.

use std::fmt;

/// A [`super::timeout`] ran out before its future completed (tokio's `Elapsed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl Elapsed {
    pub(crate) fn new() -> Self {
        Elapsed(())
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(e: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}
