//! Test support for mini-scheduler's cross-crate tests.
//!
//! [`apiserver`] is an in-memory Kubernetes API test double served over loopback HTTP, used through
//! the real `kube::Client`; [`replica`] runs scheduler replicas in cluster mode against it.

pub mod apiserver;
pub mod configmap;
pub mod manifests;
pub mod replica;
