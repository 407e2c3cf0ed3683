//! Native tests of the runtime against the fake host: the watcher's state machine, backoff
//! schedules, the reflector's store, the stream combinators, `wait`, `finalizer` and
//! `events`.

mod runtime {
    pub mod support;

    mod backoff;
    mod controller;
    mod events;
    mod finalizer;
    mod logs;
    mod reflector;
    mod scheduler;
    mod shared;
    mod utils;
    mod wait;
    mod watcher;
}
