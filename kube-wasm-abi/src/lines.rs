//! Framing a byte stream into lines, independent of how the transport chunks it.
//!
//! Watch responses are newline-delimited JSON; a transport chunk may hold half an event or
//! several. One earlier system decoded per chunk and broke; this framer is what the host uses
//! so that each watch completion carries exactly one whole event.

/// Splits a chunked byte stream on `\n`, holding partial lines across chunks.
#[derive(Debug)]
pub struct LineFramer {
    pending: Vec<u8>,
    max_line: usize,
}

/// A line grew past the framer's limit without a `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("line exceeds {limit} bytes without a newline")]
pub struct LineTooLong {
    /// The limit in bytes.
    pub limit: usize,
}

impl LineFramer {
    /// A framer that accepts lines of at most `max_line` bytes (excluding the `\n`).
    pub fn new(max_line: usize) -> Self {
        Self {
            pending: Vec::new(),
            max_line,
        }
    }

    /// Feeds one chunk and returns the lines it completes, in order, each without its `\n`
    /// (a `\r` before it is kept). Bytes after the last `\n` wait for the next chunk.
    ///
    /// # Errors
    /// [`LineTooLong`] once the unfinished line exceeds the limit; the framer should then be
    /// dropped.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, LineTooLong> {
        let mut lines = Vec::new();
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            let mut line = std::mem::take(&mut self.pending);
            line.extend_from_slice(&rest[..pos]);
            if line.len() > self.max_line {
                return Err(LineTooLong {
                    limit: self.max_line,
                });
            }
            lines.push(line);
            rest = &rest[pos + 1..];
        }
        self.pending.extend_from_slice(rest);
        if self.pending.len() > self.max_line {
            return Err(LineTooLong {
                limit: self.max_line,
            });
        }
        Ok(lines)
    }

    /// Ends the stream: returns the final unterminated line, if any bytes are left.
    pub fn finish(self) -> Option<Vec<u8>> {
        (!self.pending.is_empty()).then_some(self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_all(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut framer = LineFramer::new(1024);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(framer.push(c).expect("within limit"));
        }
        out.extend(framer.finish());
        out
    }

    #[test]
    fn every_split_of_a_stream_yields_the_same_lines() {
        let stream: &[u8] = b"{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\",\"x\":\"\xc3\xa9\"}\n\n{\"type\":\"DELETED\"}\n";
        let expected = frame_all(&[stream]);
        assert_eq!(
            expected,
            vec![
                b"{\"type\":\"ADDED\"}".to_vec(),
                b"{\"type\":\"MODIFIED\",\"x\":\"\xc3\xa9\"}".to_vec(),
                b"".to_vec(),
                b"{\"type\":\"DELETED\"}".to_vec(),
            ]
        );
        for a in 0..=stream.len() {
            for b in a..=stream.len() {
                let got = frame_all(&[&stream[..a], &stream[a..b], &stream[b..]]);
                assert_eq!(got, expected, "split at {a} and {b}");
            }
        }
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(frame_all(&bytewise), expected);
    }

    #[test]
    fn unterminated_tail_comes_out_at_finish() {
        assert_eq!(
            frame_all(&[b"a\nb", b"c"]),
            vec![b"a".to_vec(), b"bc".to_vec()]
        );
        assert!(LineFramer::new(8).finish().is_none());
    }

    #[test]
    fn over_long_lines_are_refused() {
        let mut framer = LineFramer::new(4);
        assert_eq!(
            framer.push(b"abcd\n").expect("fits"),
            vec![b"abcd".to_vec()]
        );
        assert_eq!(framer.push(b"abc"), Ok(vec![]));
        assert_eq!(framer.push(b"de"), Err(LineTooLong { limit: 4 }));
        let mut framer = LineFramer::new(4);
        assert_eq!(framer.push(b"abcdef\n"), Err(LineTooLong { limit: 4 }));
    }
}
