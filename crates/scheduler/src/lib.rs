//! mini-scheduler's scheduling core: the framework and its plugins, the legacy Policy loader,
//! the profile built from it, the cluster snapshot, cache and queue, the scheduling algorithm,
//! and `simulate` over cluster files; and cluster mode (`controller`).
//!
//! Everything but `controller` (the kube edge: watches, bindings, events) and the extenders'
//! HTTP client is synchronous and free of API calls; see `docs/architecture.md`. Two cargo
//! features, both on by default, bring those two in:
//! - `cluster`: the `controller` module, and with it kube, kube-runtime, tokio, prometheus,
//!   notify (hot reload) and the `election` crate;
//! - `http-extender`: `extender::HttpExtender`, the extenders' HTTP(S) client (hyper,
//!   hyper-rustls, tokio). Without it a Policy that lists extenders does not build
//!   ([`profile::ProfileError::Extender`]).
//!
//! With `default-features = false` the crate is the pure core: `simulate`, the benches and any
//! library user get no kube, hyper or tokio (`cargo tree -p scheduler --no-default-features`).
//! Semantics follow kube-scheduler v1.22, the last release that read a Policy file, with scores
//! on the framework scale 0..=100.
//!
//! Each public item has one path, its module's (`scheduler::framework::PodInfo`,
//! `scheduler::profile::Profile`); the crate root re-exports nothing.

pub mod cache;
pub mod config;
#[cfg(feature = "cluster")]
pub mod controller;
pub mod escape;
pub mod extender;
pub mod framework;
pub mod labels;
pub mod nesting;
pub mod policy;
pub mod preemption;
pub mod profile;
pub mod quantity;
pub mod queue;
pub mod schedule_one;
pub mod sim;
pub mod snapshot;
pub mod volume;

#[cfg(test)]
mod fuzz;
