//! What the API server does to an object on create and `simulate` must do in its place:
//! generated names ([`generate_names`]) and requests defaulted from limits
//! ([`default_requests_from_limits`]).

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::Cluster;

/// The API server's `names.SimpleNameGenerator` (`k8s.io/apiserver/pkg/storage/names`): the
/// `generateName` prefix, cut to 58 bytes, followed by 5 characters drawn from
/// `k8s.io/apimachinery/pkg/util/rand`'s alphabet `bcdfghjklmnpqrstvwxz2456789`. Seeded, so a
/// simulation names the same objects the same way under the same `--seed`.
#[derive(Debug)]
pub struct NameGenerator {
    rng: StdRng,
}

impl NameGenerator {
    /// `utilrand`'s alphabet: no vowels, no `0`, `1`, `3`.
    pub const ALPHABET: &'static [u8] = b"bcdfghjklmnpqrstvwxz2456789";
    /// Random characters appended.
    pub const RANDOM_LENGTH: usize = 5;
    /// Longest prefix kept (`MaxGeneratedNameLength`: 63 − 5).
    pub const MAX_PREFIX_LENGTH: usize = 63 - Self::RANDOM_LENGTH;

    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        NameGenerator {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// A name for an object with `generateName: base`.
    pub fn generate(&mut self, base: &str) -> String {
        let mut cut = base.len().min(Self::MAX_PREFIX_LENGTH);
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut name = base[..cut].to_string();
        for _ in 0..Self::RANDOM_LENGTH {
            let i = self.rng.random_range(0..Self::ALPHABET.len());
            name.push(char::from(Self::ALPHABET[i]));
        }
        name
    }
}

/// Gives every object of `cluster` that has a `generateName` and no name a generated name,
/// in input order (nodes, pods, then the other kinds), unique among the names of its kind and
/// namespace (the API server answers a clash with 409 AlreadyExists; here another name is
/// drawn).
pub fn generate_names(cluster: &mut Cluster, seed: u64) {
    let mut names = NameGenerator::new(seed);
    let mut taken: HashSet<(&'static str, String, String)> = HashSet::new();
    let key = |kind: &'static str, ns: &Option<String>, name: &str| {
        (kind, ns.clone().unwrap_or_default(), name.to_string())
    };
    macro_rules! each_meta {
        ($f:expr) => {
            for o in &mut cluster.nodes {
                $f("Node", &mut o.metadata);
            }
            for o in &mut cluster.pods {
                $f("Pod", &mut o.metadata);
            }
            for o in &mut cluster.services {
                $f("Service", &mut o.metadata);
            }
            for o in &mut cluster.replication_controllers {
                $f("ReplicationController", &mut o.metadata);
            }
            for o in &mut cluster.replica_sets {
                $f("ReplicaSet", &mut o.metadata);
            }
            for o in &mut cluster.stateful_sets {
                $f("StatefulSet", &mut o.metadata);
            }
            for o in &mut cluster.namespaces {
                $f("Namespace", &mut o.metadata);
            }
            for o in &mut cluster.persistent_volumes {
                $f("PersistentVolume", &mut o.metadata);
            }
            for o in &mut cluster.persistent_volume_claims {
                $f("PersistentVolumeClaim", &mut o.metadata);
            }
            for o in &mut cluster.storage_classes {
                $f("StorageClass", &mut o.metadata);
            }
            for o in &mut cluster.csi_nodes {
                $f("CSINode", &mut o.metadata);
            }
        };
    }
    each_meta!(|kind, m: &mut ObjectMeta| {
        if let Some(n) = m.name.as_deref().filter(|n| !n.is_empty()) {
            taken.insert(key(kind, &m.namespace, n));
        }
    });
    for p in &cluster.malformed_pods {
        if !p.name.is_empty() {
            let ns = Some(p.namespace.clone()).filter(|n| !n.is_empty());
            taken.insert(key("Pod", &ns, &p.name));
        }
    }
    let mut fresh = |kind: &'static str, ns: &Option<String>, base: &str| loop {
        let name = names.generate(base);
        if taken.insert(key(kind, ns, &name)) {
            return name;
        }
    };
    each_meta!(|kind, m: &mut ObjectMeta| {
        let base = m.generate_name.clone().unwrap_or_default();
        if m.name.as_deref().unwrap_or_default().is_empty() && !base.is_empty() {
            m.name = Some(fresh(kind, &m.namespace, &base));
        }
    });
    for p in &mut cluster.malformed_pods {
        if p.name.is_empty() && !p.generate_name.is_empty() {
            let ns = Some(p.namespace.clone()).filter(|n| !n.is_empty());
            p.name = fresh("Pod", &ns, &p.generate_name);
        }
    }
}

/// The API server's pod defaulting of requests (`SetDefaults_Pod`, `pkg/apis/core/v1/defaults.go`
/// in v1.22): for each container and init container with limits, every resource limited but not
/// requested is requested at its limit. A pod that asks `limits: {nvidia.com/gpu: 1}` requests
/// one GPU.
pub fn default_requests_from_limits(pod: &mut core::Pod) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    let containers = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten());
    for c in containers {
        let Some(res) = c.resources.as_mut() else {
            continue;
        };
        let Some(limits) = res.limits.as_ref() else {
            continue;
        };
        let requests = res.requests.get_or_insert_with(BTreeMap::new);
        for (name, q) in limits {
            requests.entry(name.clone()).or_insert_with(|| q.clone());
        }
    }
}
