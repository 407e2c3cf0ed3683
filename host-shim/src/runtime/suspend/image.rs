//! The memory a fresh instance of a suspendable module starts with, as a snapshot compares
//! against it: its active data segments written over zeroes (a suspendable module has no
//! start function and no `memory.init`, so nothing else puts bytes in it before `_start`),
//! kept as a 128-bit hash (XXH3) of each [`CHUNK`] they make non-zero.
//!
//! A chunk the guest never changed since it was instantiated need not be in a snapshot: the
//! resume's fresh instance holds it already. Most of a module's data segments are read-only
//! data that no instance changes (21 MiB of a Go module's), so a snapshot of only the chunks
//! that differ is a fraction of one of every non-zero chunk.
//!
//! A hash is compared instead of the bytes so that the host keeps 32 bytes per image chunk,
//! not the image. Two different chunks with the same 128-bit hash would make a resume give
//! the guest its old bytes for that chunk; by chance that does not happen, and a guest that
//! built such a chunk on purpose could only corrupt its own memory, which it can do anyway.

use std::collections::BTreeMap;

use xxhash_rust::xxh3::Xxh3;

use super::{CHUNK, ZEROES, is_zero};

/// The hashes of the chunks a module's data segments make non-zero, by chunk index (the
/// chunk at byte `index × CHUNK`). Every other chunk of a fresh instance is zero, in its
/// initial memory and in what it grows.
/// The default is the image of a module without data: every chunk zero.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ImageDigest {
    /// `(chunk index, hash)`, by increasing index.
    chunks: Vec<(u64, u128)>,
}

/// The chunk count only: a Go module's image has thousands of hashes.
impl std::fmt::Debug for ImageDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageDigest")
            .field("chunks", &self.chunks.len())
            .finish()
    }
}

impl ImageDigest {
    /// The digest of the memory that active data segments `(offset in bytes, bytes)`, applied
    /// in order (a later one overwrites an earlier one where they overlap), leave over zeroes.
    /// Holds the segments' non-zero chunks in host memory while it hashes them.
    pub fn from_segments<'a>(segments: impl IntoIterator<Item = (u64, &'a [u8])>) -> Self {
        let mut image: BTreeMap<u64, Box<[u8]>> = BTreeMap::new();
        let chunk = CHUNK as u64;
        for (offset, mut bytes) in segments {
            let mut at = offset;
            while !bytes.is_empty() {
                let index = at / chunk;
                let within = usize::try_from(at % chunk).unwrap_or(0);
                let take = bytes.len().min(CHUNK - within);
                let (now, rest) = bytes.split_at(take);
                image
                    .entry(index)
                    .or_insert_with(|| vec![0; CHUNK].into_boxed_slice())[within..within + take]
                    .copy_from_slice(now);
                bytes = rest;
                at = at.saturating_add(take as u64);
            }
        }
        Self {
            chunks: image
                .into_iter()
                .filter(|(_, bytes)| !is_zero(bytes))
                .map(|(index, bytes)| (index, hash(&bytes)))
                .collect(),
        }
    }

    /// How many chunks the segments make non-zero.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// The `(chunk index, hash)` pairs, by increasing index.
    pub fn hashes(&self) -> &[(u64, u128)] {
        &self.chunks
    }

    /// The digest of these [`ImageDigest::hashes`]; `None` unless their indices increase.
    pub fn from_hashes(chunks: Vec<(u64, u128)>) -> Option<Self> {
        chunks
            .windows(2)
            .all(|pair| pair[0].0 < pair[1].0)
            .then_some(Self { chunks })
    }

    /// A walk comparing a memory's chunks with this image, in increasing chunk order.
    pub(super) fn walk(&self) -> Walk<'_> {
        Walk {
            chunks: &self.chunks,
        }
    }
}

/// How a chunk of live memory compares with the same chunk of a fresh instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compared {
    /// The same bytes: a snapshot leaves it out.
    Fresh,
    /// Zero where the fresh instance holds data.
    Zeroed,
    /// Other bytes.
    Changed,
}

/// [`ImageDigest::walk`]: compares chunks given in increasing index order.
pub(super) struct Walk<'a> {
    chunks: &'a [(u64, u128)],
}

impl Walk<'_> {
    /// How `bytes`, the chunk at `index` of a live memory (shorter than [`CHUNK`] only at
    /// the memory's end), compares with the fresh instance's. Indices must not decrease from
    /// one call to the next.
    pub(super) fn compare(&mut self, index: u64, bytes: &[u8]) -> Compared {
        while let Some(((first, _), rest)) = self.chunks.split_first()
            && *first < index
        {
            self.chunks = rest;
        }
        let zero = is_zero(bytes);
        match self.chunks.first() {
            Some((first, image)) if *first == index => {
                if zero {
                    Compared::Zeroed
                } else if hash(bytes) == *image {
                    Compared::Fresh
                } else {
                    Compared::Changed
                }
            }
            _ if zero => Compared::Fresh,
            _ => Compared::Changed,
        }
    }
}

/// The XXH3-128 of `bytes` followed by zeroes up to [`CHUNK`] (memory past the end of a
/// fresh instance's is zero when it grows).
fn hash(bytes: &[u8]) -> u128 {
    let mut hasher = Xxh3::new();
    hasher.update(bytes);
    if let Some(padding) = ZEROES.get(bytes.len()..) {
        hasher.update(padding);
    }
    hasher.digest128()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `len` bytes of zeroes with `segments` written over them, in order.
    pub(in crate::runtime::suspend) fn fresh_memory(
        len: usize,
        segments: &[(u64, &[u8])],
    ) -> Vec<u8> {
        let mut memory = vec![0u8; len];
        for (offset, bytes) in segments {
            let at = usize::try_from(*offset).expect("small");
            memory[at..at + bytes.len()].copy_from_slice(bytes);
        }
        memory
    }

    fn compare_all(digest: &ImageDigest, memory: &[u8]) -> Vec<Compared> {
        let mut walk = digest.walk();
        memory
            .chunks(CHUNK)
            .enumerate()
            .map(|(i, chunk)| walk.compare(i as u64, chunk))
            .collect()
    }

    #[test]
    fn a_fresh_memory_compares_fresh_chunk_by_chunk() {
        let long = vec![7u8; CHUNK + 100];
        let segments: [(u64, &[u8]); 4] = [
            (10, b"AAAA"),
            // Spans chunks 1, 2 and 3.
            (CHUNK as u64 * 2 - 50, &long),
            // Overwrites part of the first one.
            (12, b"BB"),
            // All zero: the chunk stays zero.
            (CHUNK as u64 * 5, &[0; 16]),
        ];
        let digest = ImageDigest::from_segments(segments);
        assert_eq!(digest.chunks(), 4, "chunks 0 to 3 hold data");
        let memory = fresh_memory(8 * CHUNK, &segments);
        assert_eq!(&memory[10..14], b"AABB");
        assert_eq!(compare_all(&digest, &memory), vec![Compared::Fresh; 8]);
    }

    #[test]
    fn changed_and_zeroed_chunks_are_told_apart() {
        let segments: [(u64, &[u8]); 2] = [(0, b"data"), (CHUNK as u64 * 2, b"more")];
        let digest = ImageDigest::from_segments(segments);
        let mut memory = fresh_memory(4 * CHUNK, &segments);
        memory[1] = b'A';
        memory[CHUNK * 2..CHUNK * 2 + 4].fill(0);
        memory[CHUNK * 3 + 9] = 1;
        assert_eq!(
            compare_all(&digest, &memory),
            vec![
                Compared::Changed,
                Compared::Fresh,
                Compared::Zeroed,
                Compared::Changed
            ]
        );
    }

    #[test]
    fn a_short_last_chunk_compares_as_if_padded_with_zeroes() {
        let segments: [(u64, &[u8]); 1] = [(CHUNK as u64 + 3, b"tail")];
        let digest = ImageDigest::from_segments(segments);
        let memory = fresh_memory(CHUNK + 100, &segments);
        assert_eq!(
            compare_all(&digest, &memory),
            vec![Compared::Fresh, Compared::Fresh]
        );
        let mut changed = memory.clone();
        changed[CHUNK + 99] = 1;
        assert_eq!(compare_all(&digest, &changed)[1], Compared::Changed);
    }

    #[test]
    fn no_segments_means_every_non_zero_chunk_changed() {
        let digest = ImageDigest::from_segments([]);
        let mut memory = vec![0u8; 3 * CHUNK];
        memory[CHUNK] = 1;
        assert_eq!(
            compare_all(&digest, &memory),
            vec![Compared::Fresh, Compared::Changed, Compared::Fresh]
        );
    }
}
