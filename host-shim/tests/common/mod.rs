//! Test helpers: hand-written WAT guests and a fake API server behind a real `kube::Client`.
#![allow(dead_code, reason = "each test file uses a different subset")]

pub mod exported_metrics;

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use futures::stream::{self, BoxStream};
use host_shim::runtime::supervisor::ModuleReport;
use host_shim::runtime::suspend::pressure::PressureSource;
use host_shim::{Host, ModuleOptions, OutputTarget, Settings, StopHandle, Supervisor, Upstream};
use http_body::Frame;
use http_body_util::{BodyExt as _, StreamBody};
use kube_wasm_abi::{HttpRequest, ResponseMode};

/// A GET of `uri` (path and query) answered whole: the request most tests send.
pub fn get(uri: impl Into<String>) -> HttpRequest {
    HttpRequest {
        method: "GET".into(),
        uri: uri.into(),
        headers: Vec::new(),
        response: ResponseMode::Whole,
    }
}

/// Address 1024: where test frames are placed by data segments.
pub const FRAME_AT: u32 = 1024;

/// A WAT guest: a fixed prelude (imports, a `$record` function that prints every completion
/// as `op:header+body` on stdout and exits 0 once `expect_finals` final completions arrived)
/// with replaceable parts.
#[derive(Debug, Clone)]
pub struct Guest {
    /// `_start`'s locals and body.
    pub start: String,
    /// `kube_wasm_complete`'s body (params `$op i64`, `$ptr i32`, `$len i32`).
    pub complete: String,
    /// `kube_wasm_alloc`'s body (param `$len i32`, result i32).
    pub alloc: String,
    /// The `kube_wasm_abi_version` export, or `None` to leave it out.
    pub version: Option<String>,
    /// Final completions after which `$record` exits with status 0.
    pub expect_finals: u32,
    /// Extra module fields (data segments, imports must not go here).
    pub extra: String,
    /// Extra imports.
    pub imports: String,
}

impl Guest {
    /// A guest whose `_start` is `start` and that records every completion.
    pub fn new(start: &str) -> Self {
        Self {
            start: start.into(),
            complete: "(call $record (local.get $op) (local.get $ptr) (local.get $len))".into(),
            alloc: "(if (result i32) (i32.gt_u (local.get $len) (i32.const 131072)) \
                    (then (i32.const 0)) (else (i32.const 65536)))"
                .into(),
            version: Some("(i32.const 0x10000)".into()),
            expect_finals: 1,
            extra: String::new(),
            imports: String::new(),
        }
    }

    pub fn expect_finals(mut self, n: u32) -> Self {
        self.expect_finals = n;
        self
    }

    pub fn complete(mut self, body: &str) -> Self {
        self.complete = body.into();
        self
    }

    pub fn alloc(mut self, body: &str) -> Self {
        self.alloc = body.into();
        self
    }

    pub fn version(mut self, version: Option<&str>) -> Self {
        self.version = version.map(Into::into);
        self
    }

    /// Places `bytes` at [`FRAME_AT`].
    pub fn frame(mut self, bytes: &[u8]) -> Self {
        self.extra.push_str(&format!(
            "(data (i32.const {FRAME_AT}) \"{}\")\n",
            wat_bytes(bytes)
        ));
        self
    }

    pub fn imports(mut self, imports: &str) -> Self {
        self.imports.push_str(imports);
        self
    }

    pub fn wat(&self) -> String {
        let version = self
            .version
            .as_ref()
            .map(|v| format!("(func (export \"kube_wasm_abi_version\") (result i32) {v})"))
            .unwrap_or_default();
        format!(
            r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $environ_get (param i32 i32) (result i32)))
  (import "kube_wasm_v1" "http_request" (func $http_request (param i32 i32) (result i64)))
  (import "kube_wasm_v1" "watch" (func $watch (param i32 i32) (result i64)))
  (import "kube_wasm_v1" "delay" (func $delay (param i64) (result i64)))
  (import "kube_wasm_v1" "stop_signal" (func $stop_signal (result i64)))
  (import "kube_wasm_v1" "cancel" (func $cancel (param i64) (result i32)))
  {imports}
  (memory (export "memory") 4)
  (data (i32.const 32) "\n:")
  (global $finals (mut i32) (i32.const 0))
  (global $expect_finals i32 (i32.const {expect}))
  (func $write (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16))))
  (func $newline (call $write (i32.const 32) (i32.const 1)))
  (func $print_num (param $n i64) (local $p i32)
    (local.set $p (i32.const 100))
    (loop $digits
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $n) (i64.const 10)))))
      (local.set $n (i64.div_u (local.get $n) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $n) (i64.const 0))))
    (call $write (local.get $p) (i32.sub (i32.const 100) (local.get $p))))
  (func $println_num (param $n i64) (call $print_num (local.get $n)) (call $newline))
  ;; The first letter of the kind: watch_event, line and head are the only non-final kinds.
  (func $is_final (param $ptr i32) (result i32) (local $c i32)
    (local.set $c (i32.load8_u (i32.add (local.get $ptr) (i32.const 13))))
    (i32.eqz (i32.or (i32.eq (local.get $c) (i32.const 119))
      (i32.or (i32.eq (local.get $c) (i32.const 108)) (i32.eq (local.get $c) (i32.const 104))))))
  (func $record (param $op i64) (param $ptr i32) (param $len i32)
    (call $print_num (local.get $op))
    (call $write (i32.const 33) (i32.const 1))
    (call $write (i32.add (local.get $ptr) (i32.const 4)) (i32.sub (local.get $len) (i32.const 4)))
    (call $newline)
    (if (call $is_final (local.get $ptr))
      (then
        (global.set $finals (i32.add (global.get $finals) (i32.const 1)))
        (if (i32.eq (global.get $finals) (global.get $expect_finals))
          (then (call $proc_exit (i32.const 0)))))))
  (func $print_env
    (drop (call $environ_sizes_get (i32.const 200) (i32.const 204)))
    (drop (call $environ_get (i32.const 2048) (i32.const 8192)))
    (call $write (i32.const 8192) (i32.load (i32.const 204)))
    (call $newline))
  (func (export "kube_wasm_alloc") (param $len i32) (result i32) {alloc})
  {version}
  (func (export "kube_wasm_complete") (param $op i64) (param $ptr i32) (param $len i32)
    {complete})
  (func (export "_start")
    {start})
  {extra}
)"#,
            imports = self.imports,
            expect = self.expect_finals,
            alloc = self.alloc,
            complete = self.complete,
            start = self.start,
            extra = self.extra,
        )
    }

    pub fn wasm(&self) -> Vec<u8> {
        match wat::parse_str(self.wat()) {
            Ok(bytes) => bytes,
            Err(err) => panic!("bad test WAT: {err}\n{}", self.wat()),
        }
    }
}

/// Bytes as a WAT string literal body.
pub fn wat_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:02x}")).collect()
}

/// `(call $import (i32.const FRAME_AT) (i32.const len))` for a frame placed with
/// [`Guest::frame`].
pub fn call_with_frame(import: &str, frame: &[u8]) -> String {
    format!(
        "(call ${import} (i32.const {FRAME_AT}) (i32.const {}))",
        frame.len()
    )
}

/// A request the fake API server saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

/// What the fake API server answers.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Body chunks; an `Err` breaks the stream off.
    pub chunks: Vec<Result<Vec<u8>, String>>,
    /// After the chunks, these, each after its delay (e.g. a watch event that comes later).
    pub later: Vec<(Duration, Vec<u8>)>,
    /// After the chunks, keep the stream open forever (a watch that never ends).
    pub hang: bool,
    /// Set when the body is dropped (the host closed the request).
    pub closed: Option<Arc<AtomicBool>>,
}

impl Reply {
    pub fn new(status: u16, chunks: Vec<Result<Vec<u8>, String>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks,
            later: Vec::new(),
            hang: false,
            closed: None,
        }
    }

    pub fn ok(body: &[u8]) -> Self {
        Self::new(200, vec![Ok(body.to_vec())])
    }

    pub fn hanging(mut self, closed: Arc<AtomicBool>) -> Self {
        self.hang = true;
        self.closed = Some(closed);
        self
    }
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

type FakeBody = StreamBody<BoxStream<'static, Result<Frame<Bytes>, std::io::Error>>>;

/// A real `kube::Client` whose transport is `respond` (no network), and the log of requests.
pub fn fake_client(
    respond: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> (kube::Client, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let respond = Arc::new(respond);
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let log = log.clone();
        let respond = respond.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = body
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let seen = Seen {
                method: parts.method,
                uri: parts.uri,
                headers: parts.headers,
                body,
            };
            let reply = respond(&seen);
            log.lock().expect("log").push(seen);
            let guard = reply.closed.map(SetOnDrop);
            let chunks = stream::iter(reply.chunks).map(|chunk| match chunk {
                Ok(bytes) => Ok(Frame::data(Bytes::from(bytes))),
                Err(message) => Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    message,
                )),
            });
            let later = stream::iter(reply.later).then(|(delay, bytes)| async move {
                tokio::time::sleep(delay).await;
                Ok(Frame::data(Bytes::from(bytes)))
            });
            let tail = if reply.hang {
                stream::pending().boxed()
            } else {
                stream::empty().boxed()
            };
            let body: BoxStream<'static, _> = chunks
                .chain(later)
                .chain(tail)
                .map(move |item| {
                    let _keep = &guard;
                    item
                })
                .boxed();
            let mut response = http::Response::builder().status(reply.status);
            for (name, value) in reply.headers {
                response = response.header(name, value);
            }
            let response: http::Response<FakeBody> = response
                .body(StreamBody::new(body))
                .expect("valid fake response");
            Ok::<_, Infallible>(response)
        }
    });
    (kube::Client::new(service, "fake-ns"), seen)
}

/// An upstream whose requests all get `404 Not Found` (for tests that make none).
/// A fresh cache folder the host accepts (mode 0700), removed on drop.
pub fn cache_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    dir
}

pub fn idle_upstream() -> Upstream {
    let (client, _) = fake_client(|_| Reply::new(404, vec![Ok(b"{}".to_vec())]));
    Upstream::new(client, "https://fake.invalid")
}

/// A host with [`test_settings`] and `cache` as its cache folder, against
/// [`idle_upstream`].
pub fn host_with_cache(cache: &std::path::Path) -> Host {
    let (settings, _) = test_settings();
    let settings = Settings {
        cache_dir: Some(cache.to_owned()),
        ..settings
    };
    Host::new(idle_upstream(), settings).expect("host")
}

/// Settings with captured output.
pub fn test_settings() -> (Settings, Arc<Mutex<Vec<u8>>>) {
    let (output, buffer) = OutputTarget::capture();
    let settings = Settings {
        output,
        epoch_tick: Duration::from_millis(20),
        // The tests decide when modules are suspended, never the machine's memory.
        memory_pressure: PressureSource::Off,
        ..Settings::default()
    };
    (settings, buffer)
}

/// The result of running some guests.
pub struct Run {
    pub reports: Vec<ModuleReport>,
    pub output: String,
}

impl Run {
    pub fn outcome(&self, name: &str) -> &host_shim::ModuleOutcome {
        &self
            .reports
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no module {name}"))
            .outcome
    }

    /// The lines module `name` printed, without the prefix.
    pub fn lines_of(&self, name: &str) -> Vec<String> {
        let prefix = format!("[{name}] ");
        self.output
            .lines()
            .filter_map(|line| line.strip_prefix(&prefix))
            .map(str::to_owned)
            .collect()
    }
}

/// Runs `guests` concurrently on one host; `control` may stop the host.
pub async fn run_guests_with(
    upstream: Upstream,
    settings: Settings,
    buffer: Arc<Mutex<Vec<u8>>>,
    stop_timeout: Duration,
    guests: &[(&str, Vec<u8>)],
    control: impl FnOnce(StopHandle) + Send + 'static,
) -> Run {
    let configured: Vec<_> = guests
        .iter()
        .map(|(name, wasm)| (*name, wasm.clone(), ModuleOptions::default()))
        .collect();
    run_configured_with(
        upstream,
        settings,
        buffer,
        stop_timeout,
        &configured,
        control,
    )
    .await
}

/// Runs `guests`, each with its own options, concurrently on one host with default test
/// settings, no stop.
pub async fn run_configured(upstream: Upstream, guests: &[(&str, Vec<u8>, ModuleOptions)]) -> Run {
    let (settings, buffer) = test_settings();
    run_configured_with(
        upstream,
        settings,
        buffer,
        Duration::from_secs(5),
        guests,
        |_| {},
    )
    .await
}

async fn run_configured_with(
    upstream: Upstream,
    settings: Settings,
    buffer: Arc<Mutex<Vec<u8>>>,
    stop_timeout: Duration,
    guests: &[(&str, Vec<u8>, ModuleOptions)],
    control: impl FnOnce(StopHandle) + Send + 'static,
) -> Run {
    let host = Host::new(upstream, settings).expect("host");
    let modules = guests
        .iter()
        .map(|(name, wasm, options)| {
            host.load_bytes(name, wasm)
                .expect("compiles")
                .with_options(options.clone())
        })
        .collect();
    let supervisor = Supervisor::new(host, stop_timeout);
    control(supervisor.stop_handle());
    let reports = tokio::time::timeout(Duration::from_secs(30), supervisor.run_all(modules))
        .await
        .expect("modules end within 30 s");
    let output = String::from_utf8_lossy(&buffer.lock().expect("output")).into_owned();
    Run { reports, output }
}

/// Runs `guests` concurrently on one host with default test settings, no stop.
pub async fn run_guests(upstream: Upstream, guests: &[(&str, Vec<u8>)]) -> Run {
    run_guests_on(upstream, test_settings(), guests).await
}

/// Runs `guests` concurrently on one host with `settings` and their output buffer, no stop.
pub async fn run_guests_on(
    upstream: Upstream,
    (settings, buffer): (Settings, Arc<Mutex<Vec<u8>>>),
    guests: &[(&str, Vec<u8>)],
) -> Run {
    run_guests_with(
        upstream,
        settings,
        buffer,
        Duration::from_secs(5),
        guests,
        |_| {},
    )
    .await
}

/// Runs `module` under a supervisor on `host` and asserts it exits with status 0 within 30 s.
pub async fn runs_to_exit(host: &Host, module: host_shim::runtime::module::LoadedModule) {
    let reports = tokio::time::timeout(
        Duration::from_secs(30),
        Supervisor::new(host.clone(), Duration::from_secs(5)).run_all(vec![module]),
    )
    .await
    .expect("the module ends within 30 s");
    assert!(
        matches!(reports[0].outcome, host_shim::ModuleOutcome::Exited(0)),
        "{:?}",
        reports[0].outcome
    );
}

/// The files of the folder `dir` (a cache folder) whose extension is `ext`.
pub fn files_with_extension(dir: &std::path::Path, ext: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .expect("cache folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect()
}

/// The value of `host`'s host-wide series `metric` (no labels), 0 if absent.
pub fn host_metric(host: &Host, metric: &str) -> f64 {
    let prefix = format!("{metric} ");
    host.metrics()
        .encode()
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
        .map_or(0.0, |v| v.parse::<f64>().expect("a number"))
}
