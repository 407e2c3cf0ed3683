//! The client surface driven against the fake host: what each call submits, and how each
//! completion comes back.

mod client {
    pub mod support;

    mod entry;
    mod errors;
    mod requests;
    mod send;
    mod watch;
}
