//! Test support for mini-scheduler's cross-crate tests.
//!
//! [`apiserver`] is an in-memory Kubernetes API test double served over loopback HTTP, used through
//! the real `kube::Client`; [`replica`] runs scheduler replicas in cluster mode against it;
//! [`extender`] is a scheduler extender served over loopback HTTP(S); [`volumes`] holds storage
//! fixtures and a miniature PV controller; [`objects`] holds node/pod builders, pod reads and
//! polling shared by the cluster tests; [`clientgo`] is a leader-election candidate that reads
//! and writes the Lease exactly as client-go does, for interoperability tests; [`chaos`] runs
//! three replicas under a seeded schedule of faults and checks the invariants from the double's
//! write record; [`binary`] runs the `mini-scheduler` binary against the double (its own tests).

pub mod apiserver;
pub mod binary;
pub mod chaos;
pub mod clientgo;
pub mod configmap;
pub mod extender;
pub mod manifests;
pub mod objects;
pub mod replica;
pub mod volumes;
