//! mini-scheduler's scheduling core: the framework and its plugins, the legacy Policy loader,
//! the profile built from it, the cluster snapshot, cache and queue, the scheduling algorithm,
//! and `simulate` over cluster files; and cluster mode ([`controller`]).
//!
//! Everything but [`controller`] (the kube edge: watches, bindings, events) and the extenders'
//! HTTP client is synchronous and free of API calls; see `docs/architecture.md`.
//! Semantics follow kube-scheduler v1.22, the last release that read a Policy file, with scores
//! on the framework scale 0..=100.

pub mod cache;
pub mod config;
pub mod controller;
pub mod escape;
pub mod extender;
pub mod framework;
pub mod labels;
pub mod model;
pub mod nesting;
pub mod policy;
pub mod profile;
pub mod quantity;
pub mod queue;
pub mod schedule_one;
pub mod sim;
pub mod snapshot;
pub mod volume;

#[cfg(test)]
mod fuzz;

pub use framework::{Framework, Status};
pub use profile::{Profile, ProfileError};
pub use schedule_one::{Algorithm, FitError, ScheduleError, ScheduleResult};
pub use snapshot::Snapshot;
