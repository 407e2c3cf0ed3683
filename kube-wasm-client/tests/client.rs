//! The client surface driven against the fake host: what each call submits, and how each
//! completion comes back.

mod client {
    pub mod support;

    mod discovery;
    mod dynamic;
    mod entry;
    mod errors;
    mod raw_send;
    mod requests;
    mod scoped;
    mod send;
    mod streams;
    mod watch;
}
