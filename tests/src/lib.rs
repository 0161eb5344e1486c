//! Test support for mini-scheduler's cross-crate tests.
