//! What the API server does to an object on create and `simulate` must do in its place:
//! generated names ([`generate_names`]), requests defaulted from limits
//! ([`default_requests_from_limits`]) and pod priorities from PriorityClasses
//! ([`admit_priority`]).

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rand::rngs::StdRng;
use rand::{Rng, RngExt, SeedableRng};

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
            for o in &mut cluster.priority_classes {
                $f("PriorityClass", &mut o.metadata);
            }
            for o in &mut cluster.pod_disruption_budgets {
                $f("PodDisruptionBudget", &mut o.metadata);
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

/// Gives every pod without `metadata.uid` one, as the API server does on create: a version-4
/// UUID, drawn from an RNG seeded with `seed` so that a run is reproducible. The nominator and
/// preemption tell pods apart by UID.
pub fn assign_uids(cluster: &mut Cluster, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5549_4453);
    for p in &mut cluster.pods {
        if p.metadata.uid.as_deref().unwrap_or_default().is_empty() {
            let mut b = [0u8; 16];
            rng.fill_bytes(&mut b);
            b[6] = (b[6] & 0x0f) | 0x40;
            b[8] = (b[8] & 0x3f) | 0x80;
            let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
            p.metadata.uid = Some(format!(
                "{}-{}-{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            ));
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

/// The PriorityClasses the `Priority` admission plugin resolves pod priorities from: those
/// read from the cluster files and the two the API server creates at start-up
/// (`system-cluster-critical` = 2000000000, `system-node-critical` = 2000001000) unless a file
/// defines them.
#[derive(Debug, Clone, Default)]
pub struct PriorityClasses {
    /// Name → (value, preemptionPolicy, globalDefault).
    classes: BTreeMap<String, (i32, String, bool)>,
}

impl PriorityClasses {
    /// The classes read plus the system ones. A class without `preemptionPolicy` gets the API
    /// default `PreemptLowerPriority`.
    pub fn new(read: &[k8s_openapi::api::scheduling::v1::PriorityClass]) -> PriorityClasses {
        let mut classes = BTreeMap::new();
        for (name, value) in [
            ("system-cluster-critical", 2_000_000_000),
            ("system-node-critical", 2_000_001_000),
        ] {
            classes.insert(
                name.to_string(),
                (value, "PreemptLowerPriority".to_string(), false),
            );
        }
        for pc in read {
            let Some(name) = pc.metadata.name.clone().filter(|n| !n.is_empty()) else {
                continue;
            };
            let policy = pc
                .preemption_policy
                .clone()
                .unwrap_or_else(|| "PreemptLowerPriority".into());
            classes.insert(
                name,
                (
                    pc.value.unwrap_or(0),
                    policy,
                    pc.global_default == Some(true),
                ),
            );
        }
        PriorityClasses { classes }
    }

    /// `getDefaultPriorityClass`: the global default class with the lowest value, if any.
    fn default_class(&self) -> Option<(&str, i32, &str)> {
        self.classes
            .iter()
            .filter(|(_, (_, _, global))| *global)
            .min_by_key(|(_, (value, _, _))| *value)
            .map(|(n, (v, p, _))| (n.as_str(), *v, p.as_str()))
    }
}

/// The `Priority` admission plugin (`plugin/pkg/admission/priority/admission.go`, v1.22, with
/// `NonPreemptingPriority` on) for a pod without `spec.priority`: `priorityClassName`
/// resolved to its class, or, without one, the global default class (its name is then set),
/// or priority 0 and `PreemptLowerPriority`; `spec.priority` and `spec.preemptionPolicy` are
/// set from it. A pod that already carries `spec.priority` is taken as stored (an API server
/// admitted it: what `kubectl get` prints).
///
/// # Errors
/// The admission plugin's refusal, `pods "<name>" is forbidden: ...`: an unknown class, or a
/// `preemptionPolicy` other than the class's.
pub fn admit_priority(pod: &mut core::Pod, classes: &PriorityClasses) -> Result<(), String> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let Some(spec) = pod.spec.as_mut() else {
        return Ok(());
    };
    if spec.priority.is_some() {
        return Ok(());
    }
    let forbidden = |e: String| format!("pods {name:?} is forbidden: {e}");
    let class_name = spec.priority_class_name.clone().unwrap_or_default();
    let (value, policy) = if class_name.is_empty() {
        match classes.default_class() {
            Some((n, v, p)) => {
                spec.priority_class_name = Some(n.to_string());
                (v, p.to_string())
            }
            None => (0, "PreemptLowerPriority".to_string()),
        }
    } else {
        match classes.classes.get(&class_name) {
            Some((v, p, _)) => (*v, p.clone()),
            None => {
                return Err(forbidden(format!(
                    "no PriorityClass with name {class_name} was found"
                )));
            }
        }
    };
    if let Some(own) = spec.preemption_policy.as_deref()
        && own != policy
    {
        return Err(forbidden(format!(
            "the string value of PreemptionPolicy ({own}) must not be provided in pod spec; \
             priority admission controller computed {policy} from the given PriorityClass name"
        )));
    }
    spec.priority = Some(value);
    spec.preemption_policy = Some(policy);
    Ok(())
}
