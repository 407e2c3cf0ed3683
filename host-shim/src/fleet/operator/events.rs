//! The Events the operator records on a WasmController (pulls, starts, crashes, back-offs,
//! stops, releases and takeovers).

use kube::Resource as _;
use kube::runtime::events::{Event, EventType};

use super::Context;
use crate::fleet::wasm_controller::WasmController;

/// Records an Event on `obj` (a failure to record is logged, not returned).
pub(crate) async fn event(
    ctx: &Context,
    obj: &WasmController,
    type_: EventType,
    reason: &str,
    note: String,
) {
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    if let Err(err) = ctx.recorder.publish(&event, &obj.object_ref(&())).await {
        tracing::warn!("cannot record the event {reason}: {err}");
    }
}
