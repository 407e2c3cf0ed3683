//! The content-addressed cache of precompiled modules.
//!
//! An entry's name is the SHA-256 of the engine's compatibility fingerprint
//! ([`Engine::precompile_compatibility_hash`]: wasmtime version, target, compiler settings)
//! and the host's [`PIPELINE`] followed by the SHA-256 of the wasm bytes compiled, or of
//! whatever determines them ([`ModuleCache::load_or_compile_source`]: the host names a
//! module by its bytes as it got them and the func-ref form chosen, so that finding its entry
//! needs no rewrite of a large module). So a changed module, a changed engine configuration,
//! another wasmtime version or another treatment of the bytes before compiling is a miss,
//! never a wrong hit.
//!
//! # Trust model
//!
//! Deserialising precompiled code is running native code: wasmtime trusts the artifact
//! completely. So the host only deserialises artifacts it wrote itself:
//! - the cache folder is created with mode `0700`; if it exists and is not owned by the
//!   host's user or is accessible to group or others, the cache is not used at all;
//! - the folder holds a 32-byte random `key` (mode `0600`), made on first use;
//! - every entry is two files: `<name>.cwasm`, the artifact exactly as `Module::serialize`
//!   made it, and `<name>.tag`, `KWASMC2\n` then HMAC-SHA256(key, entry name ‖ artifact).
//!   The artifact is read once through its open file to check the tag, then that same open
//!   file is mapped (`Module::deserialize_open_file`), so only the pages of compiled code and
//!   data a module actually uses become resident, and they are shared page cache rather than
//!   a private copy. An entry that fails the check (or that wasmtime rejects) is compiled
//!   again and overwritten. Entries are only ever written to a private temporary file and
//!   renamed into place, so a file once mapped never changes under the host.
//!
//! Records ([`ModuleCache::write_record`]) are small files that what the host does depends
//! on — what a module's load-time check found ([`crate::runtime::suspend::check_record`]) —
//! written and tagged like entries (`<name>.record`, `<name>.record-tag`).
//!
//! Other files may be kept beside the entries ([`ModuleCache::write_beside`]), written in the
//! same way but carrying no tag: the func-ref profiles of modules
//! ([`crate::runtime::func_refs`]), which only choose the order of a module's func refs,
//! whatever they say.
//!
//! Whoever can write to the folder as the host's user can also replace the host binary, so
//! this guards against foreign or corrupted files, not against the host's own user (who
//! could also rewrite an entry in place between its check and its use).

use std::fs::{self, File, OpenOptions};
use std::hash::Hasher;
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac as _};
use sha2::{Digest as _, Sha256};
use wasmtime::{Engine, Module};

use crate::runtime::compiler::PIPELINE;

const MAGIC: &[u8; 8] = b"KWASMC2\n";
const TAG_LEN: usize = 32;
const KEY_FILE: &str = "key";

/// Whether a module came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Deserialised from a checked cache entry.
    Cached,
    /// Compiled now, stored, and deserialised from the entry just stored (so that, like a
    /// cached one, its code is a file mapping).
    Stored,
    /// Compiled now and kept in memory (the entry could not be stored or read back).
    Compiled,
}

/// A module as [`ModuleCache::load_or_compile`] gives it.
#[derive(Debug)]
pub struct Deserialised {
    /// The module.
    pub module: Module,
    /// Where it came from.
    pub source: Source,
    /// The checked cache file it maps (another handle to the file mapped), to map it again
    /// after the module is dropped; `None` if it is not a file mapping or the handle could
    /// not be duplicated.
    pub file: Option<File>,
}

impl Deserialised {
    /// A module compiled now and kept in memory.
    pub fn compiled(module: Module) -> Self {
        Self {
            module,
            source: Source::Compiled,
            file: None,
        }
    }

    /// `artifact` (a checked entry) deserialised as a mapping of the file, from `source`.
    ///
    /// # Safety
    /// As [`Module::deserialize_open_file`]: `artifact` must be an artifact this host wrote.
    unsafe fn mapped(engine: &Engine, artifact: File, source: Source) -> wasmtime::Result<Self> {
        let file = artifact
            .try_clone()
            .inspect_err(|e| tracing::debug!("the cache file cannot be opened twice: {e}"))
            .ok();
        // SAFETY: by this function's contract.
        let module = unsafe { Module::deserialize_open_file(engine, artifact) }?;
        Ok(Self {
            module,
            source,
            file,
        })
    }
}

/// A cache folder the host owns. See the module docs for the trust model.
#[derive(Clone)]
pub struct ModuleCache {
    dir: PathBuf,
    key: [u8; 32],
}

impl std::fmt::Debug for ModuleCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleCache")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The default cache folder: `$XDG_CACHE_HOME/kube-wasm/host-shim`, else
/// `$HOME/.cache/kube-wasm/host-shim`; `None` if neither variable is set.
pub fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".cache"))
        })?;
    Some(base.join("kube-wasm").join("host-shim"))
}

impl ModuleCache {
    /// Opens (creating it with mode `0700` if needed) the cache folder `dir` and its key.
    ///
    /// # Errors
    /// If the folder cannot be created, is not owned by this user, is accessible to group or
    /// others, or the key cannot be read or made.
    pub fn open(dir: &Path) -> io::Result<Self> {
        if !dir.exists() {
            if let Some(parent) = dir.parent() {
                fs::create_dir_all(parent)?;
            }
            match fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        let meta = fs::symlink_metadata(dir)?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if !meta.is_dir() || meta.uid() != me || meta.permissions().mode() & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} must be a folder owned by uid {me} with mode 0700 (it is {}, uid {}, mode {:o})",
                    dir.display(),
                    if meta.is_dir() {
                        "a folder"
                    } else {
                        "not a folder"
                    },
                    meta.uid(),
                    meta.permissions().mode() & 0o7777
                ),
            ));
        }
        let key = read_or_make_key(&dir.join(KEY_FILE))?;
        Ok(Self {
            dir: dir.to_owned(),
            key,
        })
    }

    /// The cache folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The module for `wasm`: from a checked cache entry, or precompiled now by `precompile`
    /// (an artifact as [`Engine::precompile_module`] makes it, for this `engine`: see
    /// [`crate::runtime::compiler::Compiler::precompile`]) and stored. CPU-bound: call from a
    /// blocking thread. A failure to store is logged, not returned.
    ///
    /// # Errors
    /// If `wasm` does not compile (`precompile`'s error).
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        precompile: impl FnOnce(&[u8]) -> wasmtime::Result<Vec<u8>>,
    ) -> wasmtime::Result<Deserialised> {
        self.load_or_compile_source(engine, &Sha256::digest(wasm).into(), || precompile(wasm))
    }

    /// [`ModuleCache::load_or_compile`] for a module known by its `source` (a SHA-256 of
    /// everything that determines the wasm `precompile` compiles) instead of its bytes: a hit
    /// needs neither the wasm nor any work to make it. The caller guarantees that equal
    /// sources compile equal wasm.
    ///
    /// # Errors
    /// If `precompile` fails.
    pub fn load_or_compile_source(
        &self,
        engine: &Engine,
        source: &[u8; 32],
        precompile: impl FnOnce() -> wasmtime::Result<Vec<u8>>,
    ) -> wasmtime::Result<Deserialised> {
        let name = source_entry_name(engine, source);
        let path = self.dir.join(format!("{name}.cwasm"));
        let tag_path = self.dir.join(format!("{name}.tag"));
        match self.open_entry(&name, &path, &tag_path) {
            Ok(Some(artifact)) => {
                // SAFETY: the artifact carries this cache's HMAC, so this host wrote it with
                // `Module::serialize`, and entries are never rewritten in place (see the
                // trust model above).
                match unsafe { Deserialised::mapped(engine, artifact, Source::Cached) } {
                    Ok(cached) => return Ok(cached),
                    Err(err) => tracing::warn!(
                        "cache entry {} is not usable ({err}); compiling again",
                        path.display()
                    ),
                }
            }
            Ok(None) => tracing::warn!(
                "cache entry {} was not written by this host (bad tag or HMAC); compiling again",
                path.display()
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("cannot read cache entry {}: {e}", path.display()),
        }
        let artifact = precompile()?;
        match self.store_entry(&name, &path, &tag_path, &artifact) {
            Ok(()) => {
                if let Ok(Some(stored)) = self.open_entry(&name, &path, &tag_path) {
                    // SAFETY: as for a cached entry above: checked with this cache's HMAC.
                    if let Ok(mapped) =
                        unsafe { Deserialised::mapped(engine, stored, Source::Stored) }
                    {
                        return Ok(mapped);
                    }
                }
            }
            Err(e) => tracing::warn!("cannot store cache entry {}: {e}", path.display()),
        }
        // SAFETY: `precompile` is this host's compiler, and the artifact never left memory.
        let module = unsafe { Module::deserialize(engine, &artifact) }?;
        Ok(Deserialised::compiled(module))
    }

    /// The record `name` (see [`ModuleCache::write_record`]), if it exists, is at most
    /// `max_bytes` long and carries this cache's tag; `Ok(None)` otherwise.
    ///
    /// # Errors
    /// If the record exists but cannot be read.
    pub fn read_record(&self, name: &str, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
        let (path, tag_path) = self.record_paths(name)?;
        let file = match self.open_entry(name, &path, &tag_path) {
            Ok(Some(file)) => file,
            Ok(None) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        read_at_most(file, max_bytes)
    }

    /// Keeps `bytes` as the record `name` (a plain file name): a small file that what the
    /// host does depends on, written and tagged like an entry (`<name>.record` and
    /// `<name>.record-tag`).
    ///
    /// # Errors
    /// If `name` is not a plain file name or the files cannot be written.
    pub fn write_record(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let (path, tag_path) = self.record_paths(name)?;
        self.store_entry(name, &path, &tag_path, bytes)
    }

    fn record_paths(&self, name: &str) -> io::Result<(PathBuf, PathBuf)> {
        Ok((
            self.beside(&format!("{name}.record"))?,
            self.beside(&format!("{name}.record-tag"))?,
        ))
    }

    /// The file `file_name` kept beside the entries (see the module docs), if it exists and
    /// is at most `max_bytes` long. Such files carry no tag: only what may be wrong without
    /// harm goes there.
    ///
    /// # Errors
    /// If `file_name` is not a plain file name, or the file exists but cannot be read.
    pub fn read_beside(&self, file_name: &str, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
        let file = match File::open(self.beside(file_name)?) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        read_at_most(file, max_bytes)
    }

    /// Writes `bytes` as the file `file_name` beside the entries, as entries are written
    /// (see [`ModuleCache::read_beside`]); returns its path.
    ///
    /// # Errors
    /// If `file_name` is not a plain file name, or the file cannot be written.
    pub fn write_beside(&self, file_name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
        let path = self.beside(file_name)?;
        self.write_atomically(&path, &[bytes])?;
        Ok(path)
    }

    /// The path of `file_name` in the folder: a plain name, not hidden, and none of the
    /// cache's own files.
    fn beside(&self, file_name: &str) -> io::Result<PathBuf> {
        let plain = !file_name.is_empty()
            && !file_name.contains('/')
            && !file_name.starts_with('.')
            && file_name != KEY_FILE
            && !file_name.ends_with(".cwasm")
            && !file_name.ends_with(".tag");
        if !plain {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{file_name:?} is not a file the cache keeps beside its entries"),
            ));
        }
        Ok(self.dir.join(file_name))
    }

    /// The HMAC of an entry named `name`, before its artifact is fed in.
    fn tag(&self, name: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256>>::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(name.as_bytes());
        mac
    }

    /// The entry's artifact file, open and rewound, if its tag file holds this cache's HMAC
    /// of it; `Ok(None)` if the tag is malformed or does not match.
    ///
    /// # Errors
    /// If either file cannot be opened or read (`NotFound`: no entry).
    fn open_entry(&self, name: &str, path: &Path, tag_path: &Path) -> io::Result<Option<File>> {
        let mut artifact = File::open(path)?;
        let tag_file = fs::read(tag_path)?;
        let Some(tag) = tag_file.strip_prefix(MAGIC.as_slice()) else {
            return Ok(None);
        };
        if tag.len() != TAG_LEN {
            return Ok(None);
        }
        let mut mac = self.tag(name);
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            match artifact.read(&mut buffer)? {
                0 => break,
                n => mac.update(&buffer[..n]),
            }
        }
        if mac.verify_slice(tag).is_err() {
            return Ok(None);
        }
        artifact.seek(SeekFrom::Start(0))?;
        Ok(Some(artifact))
    }

    /// Writes an entry: the artifact, then its tag, each to a private temporary file renamed
    /// into place (never rewriting a file another host may have mapped).
    fn store_entry(
        &self,
        name: &str,
        path: &Path,
        tag_path: &Path,
        artifact: &[u8],
    ) -> io::Result<()> {
        let mut mac = self.tag(name);
        mac.update(artifact);
        let tag = mac.finalize().into_bytes();
        self.write_atomically(path, &[artifact])?;
        self.write_atomically(tag_path, &[MAGIC, &tag])
    }

    /// Writes `parts` to `path` through a private (`0600`) temporary file in the folder,
    /// synced, then renamed over `path`.
    fn write_atomically(&self, path: &Path, parts: &[&[u8]]) -> io::Result<()> {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = self
            .dir
            .join(format!(".{file_name}.{}.tmp", std::process::id()));
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            for part in parts {
                file.write_all(part)?;
            }
            file.sync_all()?;
            fs::rename(&tmp, path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }
}

/// The entry name of `wasm` on `engine`: hex SHA-256 of (engine fingerprint ‖ [`PIPELINE`] ‖
/// SHA-256(wasm)).
pub fn entry_name(engine: &Engine, wasm: &[u8]) -> String {
    source_entry_name(engine, &Sha256::digest(wasm).into())
}

/// The entry name of the module known by `source` on `engine` (see
/// [`ModuleCache::load_or_compile_source`]): hex SHA-256 of (engine fingerprint ‖
/// [`PIPELINE`] ‖ `source`).
pub fn source_entry_name(engine: &Engine, source: &[u8; 32]) -> String {
    let mut fingerprint = Sha256Hasher(Sha256::new());
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut fingerprint);
    std::hash::Hash::hash(PIPELINE, &mut fingerprint);
    let mut name = fingerprint.0;
    name.update(source);
    hex::encode(name.finalize())
}

/// Feeds a `Hash` value into SHA-256 (std's hashers are not stable across builds).
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        // Only the digest of the written bytes is used.
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// All of `file` if it is at most `max_bytes` long; `None` if it is longer.
fn read_at_most(file: File, max_bytes: u64) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max_bytes).then_some(bytes))
}

fn read_or_make_key(path: &Path) -> io::Result<[u8; 32]> {
    match fs::read(path) {
        Ok(bytes) => {
            return bytes.try_into().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not a 32-byte key", path.display()),
                )
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| io::Error::other(e.to_string()))?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
    match &mut file {
        Ok(file) => {
            file.write_all(&key)?;
            file.sync_all()?;
            Ok(key)
        }
        // Another host made it first: use theirs.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => read_or_make_key(path),
        Err(_) => file.map(|_| key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAT: &str = r#"(module (func (export "f") (result i32) (i32.const 7)))"#;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("host-shim-cache-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn compiles_once_then_loads_the_checked_entry() {
        let dir = temp_dir("hit");
        let engine = Engine::default();
        let wasm = wat::parse_str(WAT).expect("wat");
        let cache = ModuleCache::open(&dir).expect("opens");
        assert_eq!(
            fs::metadata(&dir).expect("dir").permissions().mode() & 0o777,
            0o700
        );
        let first = cache
            .load_or_compile(&engine, &wasm, |w| engine.precompile_module(w))
            .expect("compiles");
        let second = cache
            .load_or_compile(&engine, &wasm, |_| {
                Err(wasmtime::format_err!("a hit compiles nothing"))
            })
            .expect("loads");
        assert_eq!(
            (first.source, second.source),
            (Source::Stored, Source::Cached)
        );
        let run = |module: &Module| {
            let mut store = wasmtime::Store::new(&engine, ());
            let instance = wasmtime::Instance::new(&mut store, module, &[]).expect("instance");
            let f = instance
                .get_typed_func::<(), i32>(&mut store, "f")
                .expect("f");
            f.call(&mut store, ()).expect("call")
        };
        // The mapped artifact runs.
        assert_eq!(run(&second.module), 7);
        // The file kept maps it again, after the module is dropped and even once the entry
        // is replaced in the folder (a new entry is a new file, renamed into place).
        let kept = second.file.expect("a cached module keeps its file");
        drop(second.module);
        drop(first);
        fs::rename(
            dir.join(format!("{}.tag", entry_name(&engine, &wasm))),
            dir.join(format!("{}.cwasm", entry_name(&engine, &wasm))),
        )
        .expect("replace the entry");
        // SAFETY: the file was checked when it was first opened, and is never written.
        let again = unsafe { Module::deserialize_open_file(&engine, kept) }.expect("maps again");
        assert_eq!(run(&again), 7);
        for file in fs::read_dir(&dir).expect("dir") {
            let file = file.expect("entry");
            let name = file.file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".tmp"), "temporary file left: {name}");
            assert_eq!(
                file.metadata().expect("meta").permissions().mode() & 0o777,
                0o600,
                "{name}"
            );
        }
        let other = wat::parse_str(r#"(module (func (export "g")))"#).expect("wat");
        assert_ne!(entry_name(&engine, &wasm), entry_name(&engine, &other));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn tampered_or_foreign_entries_are_compiled_again() {
        let dir = temp_dir("tamper");
        let engine = Engine::default();
        let wasm = wat::parse_str(WAT).expect("wat");
        let cache = ModuleCache::open(&dir).expect("opens");
        cache
            .load_or_compile(&engine, &wasm, |w| engine.precompile_module(w))
            .expect("compiles");
        let name = entry_name(&engine, &wasm);
        let entry = dir.join(format!("{name}.cwasm"));
        let tag = dir.join(format!("{name}.tag"));
        let mut bytes = fs::read(&entry).expect("entry");
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&entry, &bytes).expect("tamper");
        let source = cache
            .load_or_compile(&engine, &wasm, |w| engine.precompile_module(w))
            .expect("recompiles")
            .source;
        assert_eq!(source, Source::Stored, "a changed artifact is not trusted");
        let source = cache
            .load_or_compile(&engine, &wasm, |w| engine.precompile_module(w))
            .expect("loads")
            .source;
        assert_eq!(source, Source::Cached, "the entry was written again");
        fs::write(&tag, b"KWASMC2\nshort").expect("tamper");
        let source = cache
            .load_or_compile(&engine, &wasm, |w| engine.precompile_module(w))
            .expect("recompiles")
            .source;
        assert_eq!(source, Source::Stored, "a malformed tag is not trusted");
        fs::remove_file(&tag).expect("remove the tag");
        let source = cache
            .load_or_compile(&engine, &wasm, |w| engine.precompile_module(w))
            .expect("recompiles")
            .source;
        assert_eq!(
            source,
            Source::Stored,
            "an artifact without a tag is not trusted"
        );
        // A cache with another key (another host's folder copied in) does not trust it.
        fs::write(dir.join(KEY_FILE), [9u8; 32]).expect("new key");
        let other = ModuleCache::open(&dir).expect("opens");
        let source = other
            .load_or_compile(&engine, &wasm, |w| engine.precompile_module(w))
            .expect("recompiles")
            .source;
        assert_eq!(source, Source::Stored);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_folder_others_can_reach_is_refused() {
        let dir = temp_dir("open");
        fs::create_dir_all(&dir).expect("dir");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        let err = ModuleCache::open(&dir).expect_err("group/other access");
        assert!(err.to_string().contains("mode 0700"), "{err}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn files_beside_the_entries_are_bounded_and_never_the_caches_own() {
        let dir = temp_dir("beside");
        let cache = ModuleCache::open(&dir).expect("cache");
        assert_eq!(cache.read_beside("p.funcrefs", 8).expect("reads"), None);
        let path = cache
            .write_beside("p.funcrefs", b"12345678")
            .expect("written");
        assert_eq!(path, dir.join("p.funcrefs"));
        assert_eq!(
            cache.read_beside("p.funcrefs", 8).expect("reads"),
            Some(b"12345678".to_vec())
        );
        assert_eq!(cache.read_beside("p.funcrefs", 7).expect("reads"), None);
        for name in ["key", "x.cwasm", "x.tag", ".hidden", "a/b", "../x", ""] {
            let err = cache.write_beside(name, b"x").expect_err(name);
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name}");
            assert!(cache.read_beside(name, 8).is_err(), "{name}");
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
