//! Native tests of the runtime against the fake host: the watcher's state machine, backoff
//! schedules, the reflector's store and the stream combinators.

mod runtime {
    pub mod support;

    mod backoff;
    mod reflector;
    mod utils;
    mod watcher;
}
