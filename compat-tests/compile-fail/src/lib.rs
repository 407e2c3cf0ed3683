//! No library: the cases are `tests/ui/*.rs`, run by `tests/compile_fail.rs`.
