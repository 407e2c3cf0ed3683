//! A module's stdout and stderr: each line the guest writes comes out prefixed with
//! `[module-name] ` (SPEC.md, "Lifecycle", step 1), so that the output of concurrent modules
//! stays readable.
//!
//! [`PrefixedOutput`] is a wasmtime-wasi stdout/stderr stream. It buffers an unfinished line
//! until its `\n` arrives (or the module ends), and writes each whole line with its prefix in
//! one `write` to the target, so lines of different modules never interleave mid-line. Lines
//! over the module's log-lines quota are dropped ([`LogGate`]); the next line written says how
//! many.

use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::runtime::quota::{LineVerdict, LogGate};

/// An unfinished line longer than this (in bytes) is written out as if it had ended.
pub const MAX_PENDING_LINE: usize = 64 * 1024;

/// Where module output goes.
#[derive(Debug, Clone, Default)]
pub enum OutputTarget {
    /// The host process's own stdout (for module stdout) and stderr (for module stderr).
    #[default]
    Inherit,
    /// One in-memory buffer for both streams, for tests.
    Capture(Arc<Mutex<Vec<u8>>>),
}

impl OutputTarget {
    /// A capturing target and the buffer it fills.
    pub fn capture() -> (Self, Arc<Mutex<Vec<u8>>>) {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        (OutputTarget::Capture(buffer.clone()), buffer)
    }
}

/// Which of the module's streams an output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// WASI fd 1.
    Stdout,
    /// WASI fd 2.
    Stderr,
}

struct LineBuffer {
    prefix: Vec<u8>,
    pending: Vec<u8>,
    target: OutputTarget,
    stream: Stream,
    gate: Option<Arc<LogGate>>,
}

impl LineBuffer {
    fn write(&mut self, mut bytes: &[u8]) {
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n') {
            self.pending.extend_from_slice(&bytes[..pos]);
            self.emit_pending();
            bytes = &bytes[pos + 1..];
        }
        self.pending.extend_from_slice(bytes);
        if self.pending.len() > MAX_PENDING_LINE {
            self.emit_pending();
        }
    }

    fn emit_pending(&mut self) {
        let verdict = self
            .gate
            .as_ref()
            .map(|gate| (gate.admit(), gate.per_second()));
        match verdict {
            Some((LineVerdict::Drop, _)) => {
                self.pending.clear();
                return;
            }
            Some((LineVerdict::Write { dropped_before }, per_second)) if dropped_before > 0 => {
                let notice = format!(
                    "kube-wasm: {dropped_before} lines dropped: over the module's quota of \
                     {per_second} log lines per second"
                );
                self.write_line(notice.as_bytes());
            }
            _ => {}
        }
        self.write_line(&self.pending);
        self.pending.clear();
    }

    fn write_line(&self, text: &[u8]) {
        let mut line = Vec::with_capacity(self.prefix.len() + text.len() + 1);
        line.extend_from_slice(&self.prefix);
        line.extend_from_slice(text);
        line.push(b'\n');
        // Output is best effort: a closed host stdout must not end the module.
        let _ = match (&self.target, self.stream) {
            (OutputTarget::Inherit, Stream::Stdout) => std::io::stdout().lock().write_all(&line),
            (OutputTarget::Inherit, Stream::Stderr) => std::io::stderr().lock().write_all(&line),
            (OutputTarget::Capture(buffer), _) => {
                lock(buffer).extend_from_slice(&line);
                Ok(())
            }
        };
    }
}

impl Drop for LineBuffer {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            self.emit_pending();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One stream (stdout or stderr) of one module, prefixing each line with `[name] `. Clones
/// share the same line buffer; the last unfinished line is written when the last clone is
/// dropped (when the module's store goes away).
#[derive(Clone)]
pub struct PrefixedOutput {
    inner: Arc<Mutex<LineBuffer>>,
}

impl PrefixedOutput {
    /// The `stream` of module `name`, written to `target`, every line passing `gate` (the
    /// module's log-lines quota, shared by its two streams) if there is one.
    pub fn new(
        name: &str,
        stream: Stream,
        target: OutputTarget,
        gate: Option<Arc<LogGate>>,
    ) -> Self {
        Self {
            inner: Arc::new(Mutex::new(LineBuffer {
                prefix: format!("[{name}] ").into_bytes(),
                pending: Vec::new(),
                target,
                stream,
                gate,
            })),
        }
    }

    /// Writes `bytes` as the guest wrote them; whole lines go out at once.
    pub fn write_bytes(&self, bytes: &[u8]) {
        lock(&self.inner).write(bytes);
    }
}

impl IsTerminal for PrefixedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for PrefixedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for PrefixedOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.write_bytes(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        // Whole lines are written as they complete; an unfinished line waits for its `\n`.
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(1024 * 1024)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for PrefixedOutput {
    async fn ready(&mut self) {}
}

impl AsyncWrite for PrefixedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.write_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(buffer: &Arc<Mutex<Vec<u8>>>) -> String {
        String::from_utf8_lossy(&lock(buffer)).into_owned()
    }

    #[test]
    fn every_line_gets_the_prefix_whatever_the_chunking() {
        let (target, buffer) = OutputTarget::capture();
        let out = PrefixedOutput::new("ring-0", Stream::Stdout, target, None);
        out.write_bytes(b"hel");
        assert_eq!(captured(&buffer), "", "an unfinished line waits");
        out.write_bytes(b"lo\nwor");
        out.write_bytes(b"ld\n\nlast");
        assert_eq!(
            captured(&buffer),
            "[ring-0] hello\n[ring-0] world\n[ring-0] \n"
        );
        drop(out);
        assert!(
            captured(&buffer).ends_with("[ring-0] last\n"),
            "flushed at the end"
        );
    }

    #[test]
    fn lines_over_the_quota_are_dropped_and_counted() {
        let (target, buffer) = OutputTarget::capture();
        let metrics = crate::metrics::Metrics::new();
        let gate = Arc::new(LogGate::new("chatty", 1, metrics.clone()));
        let out = PrefixedOutput::new("chatty", Stream::Stdout, target.clone(), Some(gate.clone()));
        let err = PrefixedOutput::new("chatty", Stream::Stderr, target, Some(gate));
        for i in 0..15 {
            out.write_bytes(format!("line {i}\n").as_bytes());
        }
        err.write_bytes(b"and one on stderr\n");
        let text = captured(&buffer);
        assert_eq!(
            text.lines().count(),
            10,
            "a burst of ten seconds' worth: {text}"
        );
        assert!(text.ends_with("[chatty] line 9\n"), "{text}");
        assert!(
            metrics
                .encode()
                .contains("kube_wasm_log_lines_dropped_total{module=\"chatty\"} 6"),
            "{}",
            metrics.encode()
        );
    }

    #[test]
    fn overlong_lines_are_split() {
        let (target, buffer) = OutputTarget::capture();
        let out = PrefixedOutput::new("m", Stream::Stderr, target, None);
        out.write_bytes(&vec![b'x'; MAX_PENDING_LINE + 1]);
        assert_eq!(captured(&buffer).len(), "[m] ".len() + MAX_PENDING_LINE + 2);
    }
}
