//! Guidance for the one panic a ported controller is most likely to hit: starting a thread.
//!
//! A wasm32-wasip1 module has exactly one thread, so `std::thread::spawn` (and
//! `std::thread::scope`'s spawn, `std::thread::Builder::spawn(..).unwrap()`) compiles but
//! panics at run time with `failed to spawn thread: … Unsupported …`. `#[tokio::main]` and
//! `#[tokio::test]` install a panic hook that lets the previous hook report the panic as
//! usual and then, for that panic only, prints what to use instead. A hook the program sets
//! afterwards replaces it, as any panic hook.

use std::sync::Once;

/// What a guest uses instead of threads, printed after a thread-spawn panic.
pub(crate) const ADVICE: &str = "\
note: a kube-wasm module has one thread and cannot start another: std::thread::spawn is \
unsupported in a wasm32-wasip1 guest.
  - concurrent async work: tokio::spawn (tasks run interleaved on the guest's one executor);
  - blocking or CPU-bound work: tokio::task::spawn_blocking runs the closure inline on that \
thread, blocking every other task (and the host's deliveries) until it returns; split long \
work and `tokio::task::yield_now().await` between parts so other tasks keep running;
  - a library that starts threads itself must be configured not to, or kept out of the wasm32 \
build.";

/// The advice for a panic with `message`, if it is a failed thread spawn.
pub(crate) fn advice_for(message: &str) -> Option<&'static str> {
    message
        .starts_with("failed to spawn thread")
        .then_some(ADVICE)
}

/// Installs the hook once per process, chaining to the hook installed before it.
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            if let Some(advice) = info.payload_as_str().and_then(advice_for) {
                eprintln!("{advice}");
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_a_failed_thread_spawn_only() {
        let wasi = "failed to spawn thread: Error { kind: Unsupported, message: \"operation \
                    not supported on this platform\" }";
        assert_eq!(advice_for(wasi), Some(ADVICE));
        assert_eq!(
            advice_for("failed to spawn thread: Unsupported"),
            Some(ADVICE)
        );
        assert_eq!(advice_for("index out of bounds"), None);
        assert!(ADVICE.contains("tokio::spawn") && ADVICE.contains("spawn_blocking"));
    }
}
