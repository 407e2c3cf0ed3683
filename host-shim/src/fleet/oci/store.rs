//! The content-addressed store of pulled modules: `DIR/sha256/<hex>.wasm`, written once per
//! digest (atomically), shared by every resource that uses the digest, and garbage-collected
//! when none does.

use std::collections::HashSet;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// A sha256 content digest as OCI writes it: `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

/// A string that is not a `sha256:<64 hex>` digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a sha256 digest (`sha256:` and 64 lowercase hex digits)")]
pub struct NotADigest(pub String);

impl Digest {
    /// Parses `sha256:<64 lowercase hex>`.
    ///
    /// # Errors
    /// [`NotADigest`] for anything else (other algorithms included).
    pub fn parse(text: &str) -> Result<Self, NotADigest> {
        let hex = text
            .strip_prefix("sha256:")
            .ok_or_else(|| NotADigest(text.to_owned()))?;
        let valid = hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(NotADigest(text.to_owned()))
        }
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(format!("sha256:{}", hex::encode(Sha256::digest(bytes))))
    }

    /// The 64 hex digits.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    /// The digest as text, `sha256:<hex>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The store in a folder.
#[derive(Debug, Clone)]
pub struct ModuleStore {
    dir: PathBuf,
}

impl ModuleStore {
    /// The store in `dir` (created when the first module is stored).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Where the module of `digest` is (or would be) stored.
    pub fn path_of(&self, digest: &Digest) -> PathBuf {
        self.dir
            .join("sha256")
            .join(format!("{}.wasm", digest.hex()))
    }

    /// The stored module of `digest`, if there is one.
    pub fn get(&self, digest: &Digest) -> Option<PathBuf> {
        let path = self.path_of(digest);
        path.is_file().then_some(path)
    }

    /// Stores `wasm`, whose digest the caller verified to be `digest`; a module already
    /// stored is left as it is. Returns its path.
    ///
    /// # Errors
    /// If the folder or file cannot be written.
    pub fn insert(&self, digest: &Digest, wasm: &[u8]) -> std::io::Result<PathBuf> {
        let path = self.path_of(digest);
        if path.is_file() {
            return Ok(path);
        }
        let folder = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(folder)?;
        let mut file = tempfile::NamedTempFile::new_in(folder)?;
        file.write_all(wasm)?;
        file.as_file().sync_all()?;
        file.persist(&path).map_err(|e| e.error)?;
        Ok(path)
    }

    /// Removes every stored module whose digest is not in `in_use` and that was stored at
    /// least `min_age` ago (a module pulled a moment ago may be about to start). Returns the
    /// digests removed.
    ///
    /// # Errors
    /// If the folder cannot be read; files that cannot be removed are skipped.
    pub fn collect_garbage(
        &self,
        in_use: &HashSet<Digest>,
        min_age: std::time::Duration,
    ) -> std::io::Result<Vec<Digest>> {
        let folder = self.dir.join("sha256");
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut removed = Vec::new();
        for entry in entries.flatten() {
            let Some(digest) = digest_of_file(&entry.path()) else {
                continue;
            };
            let old_enough = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= min_age);
            if !in_use.contains(&digest) && old_enough && std::fs::remove_file(entry.path()).is_ok()
            {
                removed.push(digest);
            }
        }
        removed.sort();
        Ok(removed)
    }
}

fn digest_of_file(path: &Path) -> Option<Digest> {
    let hex = path.file_name()?.to_str()?.strip_suffix(".wasm")?;
    Digest::parse(&format!("sha256:{hex}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_parse_strictly() {
        let good = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(Digest::parse(&good).map(|d| d.hex().len()), Ok(64));
        for bad in [
            "sha256:abc".to_owned(),
            format!("sha512:{}", "ab".repeat(32)),
            format!("sha256:{}", "AB".repeat(32)),
            format!("sha256:../{}", "a".repeat(61)),
        ] {
            assert!(Digest::parse(&bad).is_err(), "{bad}");
        }
        assert_eq!(
            Digest::of(b"").as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn modules_are_stored_by_digest_and_collected_when_unused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ModuleStore::new(dir.path());
        let (a, b) = (b"\0asm-a".as_slice(), b"\0asm-b".as_slice());
        let (da, db) = (Digest::of(a), Digest::of(b));
        assert_eq!(store.get(&da), None);
        let path = store.insert(&da, a).expect("stored");
        assert_eq!(std::fs::read(&path).expect("read"), a);
        assert_eq!(store.insert(&da, a).expect("again"), path, "stored once");
        store.insert(&db, b).expect("stored");
        let keep = HashSet::from([da.clone()]);
        let young = store
            .collect_garbage(&keep, std::time::Duration::from_secs(3600))
            .expect("collected");
        assert!(young.is_empty(), "a module stored a moment ago stays");
        let removed = store
            .collect_garbage(&keep, std::time::Duration::ZERO)
            .expect("collected");
        assert_eq!(removed, std::slice::from_ref(&db));
        assert!(store.get(&da).is_some() && store.get(&db).is_none());
    }
}
