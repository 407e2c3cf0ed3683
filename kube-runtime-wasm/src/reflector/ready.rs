//! A one-time "the store is ready" signal, shared by a writer and all its readers.

use futures::FutureExt;
use futures::channel::oneshot;
use futures::future::Shared;
use std::fmt;

/// The writer's side: fires once.
pub(crate) struct Ready(Option<oneshot::Sender<()>>);

/// The readers' side: any number of waiters; resolves `Err` if the writer was dropped
/// without firing.
#[derive(Clone)]
pub(crate) struct WhenReady(Shared<oneshot::Receiver<()>>);

/// A connected pair.
pub(crate) fn ready() -> (Ready, WhenReady) {
    let (tx, rx) = oneshot::channel();
    (Ready(Some(tx)), WhenReady(rx.shared()))
}

impl Ready {
    /// Marks the store ready (later calls do nothing).
    pub(crate) fn fire(&mut self) {
        if let Some(tx) = self.0.take() {
            // No reader left is fine: nobody is waiting.
            let _ = tx.send(());
        }
    }
}

impl WhenReady {
    /// Waits until ready; `Err(())` if the writer was dropped before.
    pub(crate) async fn wait(&self) -> Result<(), ()> {
        self.0.clone().await.map_err(|_| ())
    }
}

impl fmt::Debug for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ready")
            .field("fired", &self.0.is_none())
            .finish()
    }
}

impl fmt::Debug for WhenReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WhenReady")
            .field("ready", &matches!(self.0.peek(), Some(Ok(()))))
            .finish()
    }
}
