//! What [`check`](super::check) found out about a module, kept in the host's cache folder so
//! that loading the module from the cache again needs neither its bytes in memory nor
//! another pass over them. A record is named by the SHA-256 of the module's bytes and the
//! host's [`PIPELINE`]; it is written and checked like a compiled entry (this cache's HMAC),
//! because a snapshot is written and restored by what it says.

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::{ImageDigest, SnapshotLayout, Suspendable};
use crate::runtime::cache::ModuleCache;
use crate::runtime::compiler::PIPELINE;
use crate::runtime::shadow_stack::ShadowStack;

/// The largest record read, in bytes: a Go module's image has thousands of chunk hashes
/// (about 60 bytes each as JSON).
const MAX_RECORD_BYTES: u64 = 16 << 20;

#[derive(Debug, Serialize, Deserialize)]
enum Record {
    Yes {
        globals: Vec<String>,
        stack: Option<(String, u32)>,
        image: Option<Vec<(u64, u128)>>,
    },
    No(String),
}

/// The record name of the module whose bytes have SHA-256 `digest`.
fn name(digest: &[u8; 32]) -> String {
    let mut name = Sha256::new();
    name.update(b"check\0");
    name.update(PIPELINE);
    name.update(b"\0");
    name.update(digest);
    hex::encode(name.finalize())
}

/// The recorded check of the module with SHA-256 `digest`, if `cache` holds one it wrote.
pub fn read(cache: &ModuleCache, digest: &[u8; 32]) -> Option<Suspendable> {
    let bytes = match cache.read_record(&name(digest), MAX_RECORD_BYTES) {
        Ok(bytes) => bytes?,
        Err(e) => {
            tracing::debug!("cannot read a module's check record: {e}");
            return None;
        }
    };
    match serde_json::from_slice(&bytes).ok()? {
        Record::No(why) => Some(Suspendable::No(why)),
        Record::Yes {
            globals,
            stack,
            image,
        } => {
            let image = match image {
                Some(hashes) => Some(ImageDigest::from_hashes(hashes)?),
                None => None,
            };
            Some(Suspendable::Yes(std::sync::Arc::new(SnapshotLayout {
                globals,
                stack: stack.map(|(pointer, top)| ShadowStack { pointer, top }),
                image,
            })))
        }
    }
}

/// Records `suspendable`, the check of the module with SHA-256 `digest`, in `cache`; a
/// failure is logged (the next load checks the module again).
pub fn write(cache: &ModuleCache, digest: &[u8; 32], suspendable: &Suspendable) {
    let record = match suspendable {
        Suspendable::No(why) => Record::No(why.clone()),
        Suspendable::Yes(layout) => Record::Yes {
            globals: layout.globals.clone(),
            stack: layout
                .stack
                .as_ref()
                .map(|stack| (stack.pointer.clone(), stack.top)),
            image: layout.image.as_ref().map(|image| image.hashes().to_vec()),
        },
    };
    let written = serde_json::to_vec(&record)
        .map_err(std::io::Error::other)
        .and_then(|bytes| cache.write_record(&name(digest), &bytes));
    if let Err(e) = written {
        tracing::warn!("cannot record a module's check in the cache: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::suspend::check;

    #[test]
    fn a_recorded_check_reads_back_as_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ModuleCache::open(&dir.path().join("cache")).expect("cache");
        let wasm = wat::parse_str(
            r#"(module
                 (memory (export "memory") 1)
                 (global $sp (mut i32) (i32.const 1024))
                 (data (i32.const 2048) "data")
                 (func (export "f")))"#,
        )
        .expect("wat");
        let checked = check(&wasm).suspendable;
        assert!(matches!(checked, Suspendable::Yes(_)));
        let digest = Sha256::digest(&wasm).into();
        assert_eq!(read(&cache, &digest), None, "nothing recorded yet");
        write(&cache, &digest, &checked);
        assert_eq!(read(&cache, &digest), Some(checked));
        let no = Suspendable::No("it has a start function".into());
        write(&cache, &digest, &no);
        assert_eq!(read(&cache, &digest), Some(no));
        assert_eq!(read(&cache, &[0; 32]), None, "another module's");
    }
}
