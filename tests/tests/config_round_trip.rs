//! Round trip Policy → `KubeSchedulerConfiguration` → scheduling, for every Policy of the
//! compatibility corpus (`config/policies/pass`) that kube-scheduler v1.22 accepts:
//! `policy convert` (here [`convert_policy`] and the YAML it prints) then `--config` (here
//! [`parse_config`]) must schedule exactly as the Policy does, on the bundled demo cluster
//! (every pod's outcome, message, per-node diagnosis, per-node total and per-plugin scores) and
//! on the openb default trace (its first 500 pods on all 1,213 GPU nodes: placements, GPU
//! devices, messages); the GPU policies (`config/policies/gpu`) likewise.
//!
//! The whole trace (8,152 pods), with every score, for every accepted Policy (the corpus,
//! the GPU policies and the bundled sample) is
//! [`whole_openb_default_trace_round_trips_for_every_accepted_policy`]: ignored in the
//! debug-build suite (minutes there), run by `.ci/run` in a release build.
//!
//! What a version cannot express is left out by the conversion and reported (see
//! `scheduler::config`); the reference for such a Policy is then the Policy's own resolution
//! without exactly the reported plugins, so the test also proves that the warnings name
//! everything that changes. For the Policies the conversion reports nothing about, the
//! reference is the Policy itself. Plugin *names* in score breakdowns differ by design (the
//! Policy path shows priority names, the configuration path plugin names), so scores are
//! compared in plugin order without names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use scheduler::config::{ConfigVersion, REMOVED_PLUGINS, convert_policy, parse_config};
use scheduler::policy::{self, FeatureGates, LoadedPolicy, ResolvedPolicy, ResourceSpec};
use scheduler::profile::Profile;
use scheduler::profile::SchedulerProfile;
use scheduler::sim::{self, Cluster, PodOutcome, Simulation, SimulationConfig};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn corpus() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("config/policies/pass"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.to_string_lossy().contains(".expected."))
        .collect();
    files.sort();
    assert!(files.len() >= 20);
    files
}

fn load(path: &PathBuf) -> LoadedPolicy {
    let text = std::fs::read_to_string(path).unwrap();
    let mut l = policy::parse_policy(&path.display().to_string(), &text).unwrap();
    l.resolved = l.resolved.with_feature_gates(&FeatureGates::default());
    l
}

/// The Policy's resolution without what converting to `v` reports as left out: the plugins
/// the version lacks, the resource scorers after the first (one NodeResourcesFit strategy),
/// `alwaysCheckAllPredicates`; an empty RequestedToCapacityRatio resource list becomes
/// NodeResourcesFit's default cpu:1, memory:1.
fn expected(l: &LoadedPolicy, v: ConfigVersion, warnings: &[String]) -> ResolvedPolicy {
    let mut r = l.resolved.clone();
    let removed = |p: &str| {
        REMOVED_PLUGINS
            .iter()
            .any(|(n, since, _)| *n == p && v >= *since)
    };
    r.filters.retain(|f| !removed(f.plugin));
    r.scores.retain(|s| !removed(s.plugin));
    let scorers = [
        "NodeResourcesLeastAllocated",
        "NodeResourcesMostAllocated",
        "RequestedToCapacityRatio",
    ];
    let mut first = None;
    r.scores.retain(|s| {
        if !scorers.contains(&s.plugin) {
            return true;
        }
        first.get_or_insert(s.plugin) == &s.plugin
    });
    if let Some(a) = r.args.requested_to_capacity_ratio.as_mut()
        && a.resources.is_empty()
    {
        a.resources = vec![
            ResourceSpec {
                name: "cpu".into(),
                weight: 1,
            },
            ResourceSpec {
                name: "memory".into(),
                weight: 1,
            },
        ];
    }
    r.always_check_all_predicates = false;
    // Every difference is announced.
    let changed = r.filters.len() != l.resolved.filters.len()
        || r.scores.len() != l.resolved.scores.len()
        || r.args.requested_to_capacity_ratio != l.resolved.args.requested_to_capacity_ratio
        || l.resolved.always_check_all_predicates;
    assert_eq!(changed, !warnings.is_empty(), "{warnings:?}");
    r
}

fn demo_cluster() -> Cluster {
    let mut c = Cluster::default();
    sim::files::read_cluster_file(&mut c, &root().join("config/demo-cluster.yaml")).unwrap();
    c
}

/// The openb GPU nodes with the default trace's first `pods` pods (all 8,152 with `None`).
fn openb_cluster(pods: Option<usize>) -> Cluster {
    let dir = root().join("data/openb");
    let mut c = Cluster::default();
    sim::openb::read_nodes(&mut c, &dir.join("openb_node_list_gpu_node.csv")).unwrap();
    let text = std::fs::read_to_string(dir.join("openb_pod_list_default.csv")).unwrap();
    let head: String = match pods {
        Some(n) => text.lines().take(n + 1).map(|l| format!("{l}\n")).collect(),
        None => text,
    };
    sim::openb::parse_pods(
        &mut c,
        "openb_pod_list_default.csv",
        &head,
        "mini-scheduler",
    )
    .unwrap();
    assert_eq!(c.pods.len(), pods.unwrap_or(8_152));
    c
}

/// Everything an outcome says, with score breakdowns reduced to their values in plugin order.
type Comparable = (
    String,
    String,
    Option<String>,
    String,
    Option<Vec<u32>>,
    Option<Vec<(String, Vec<String>)>>,
    Option<Vec<(String, i64, Vec<i64>)>>,
);

fn comparable(p: &PodOutcome) -> Comparable {
    (
        format!("{}/{}", p.namespace, p.name),
        format!("{:?}", p.status),
        p.node.clone(),
        p.message.clone(),
        p.gpu_indexes.clone(),
        p.diagnosis
            .as_ref()
            .map(|d| d.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        p.scores.as_ref().map(|s| {
            s.iter()
                .map(|(n, j)| (n.clone(), j.total, j.plugins.values().copied().collect()))
                .collect()
        }),
    )
}

fn run(cluster: Cluster, profiles: Vec<SchedulerProfile>, explain: bool) -> Vec<Comparable> {
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed: 7,
        percentage_of_nodes_to_score: 0,
        explain,
    };
    Simulation::with_profiles(cluster, profiles, &cfg)
        .unwrap()
        .map(|o| comparable(&o))
        .collect()
}

fn profile(policy: ResolvedPolicy, pct: Option<i32>) -> Vec<SchedulerProfile> {
    vec![SchedulerProfile {
        scheduler_name: "mini-scheduler".into(),
        profile: Profile::from_resolved(policy, "test").unwrap(),
        percentage_of_nodes_to_score: pct,
    }]
}

/// Score values are compared in plugin order without names: the Policy path orders a node's
/// breakdown by priority name, the configuration path by plugin name. Sort both.
fn normalize(mut v: Vec<Comparable>) -> Vec<Comparable> {
    for c in &mut v {
        if let Some(s) = c.6.as_mut() {
            for (_, _, values) in s.iter_mut() {
                values.sort_unstable();
            }
        }
    }
    v
}

#[test]
fn every_corpus_policy_schedules_the_same_through_its_configuration() {
    let mut lossless = 0;
    for file in corpus() {
        let name = file.display().to_string();
        let loaded = load(&file);
        for v in ConfigVersion::ALL {
            let conv = convert_policy(&loaded, &name, v, "mini-scheduler").unwrap();
            let yaml = conv.to_yaml();
            let config = parse_config(&format!("{name}.{v}.yaml"), &yaml).unwrap_or_else(|e| {
                panic!("{name} {v}: the converted file does not load:\n{e}\n{yaml}")
            });
            assert_eq!(config.version, v);
            assert_eq!(config.profiles.len(), 1);
            let p = &config.profiles[0];
            assert_eq!(p.scheduler_name, "mini-scheduler");
            let want = expected(&loaded, v, &conv.warnings);
            if conv.warnings.is_empty() && v == ConfigVersion::V1beta2 {
                lossless += 1;
            }
            // The same plugins, order, weights and arguments the scheduler builds from.
            let plugins = |r: &ResolvedPolicy| {
                (
                    r.filters.iter().map(|f| f.plugin).collect::<Vec<_>>(),
                    r.scores
                        .iter()
                        .map(|s| (s.plugin, s.weight))
                        .collect::<Vec<_>>(),
                    r.extenders.clone(),
                    r.always_check_all_predicates,
                )
            };
            assert_eq!(plugins(&p.resolved), plugins(&want), "{name} {v}");
            let uses = |r: &ResolvedPolicy, plugin: &str| match plugin {
                // The weight only matters to the score plugin.
                "InterPodAffinity" => r.scores.iter().any(|s| s.plugin == plugin),
                _ => r.has_plugin(plugin),
            };
            for (plugin, got, want_args) in [
                (
                    "RequestedToCapacityRatio",
                    format!("{:?}", p.resolved.args.requested_to_capacity_ratio),
                    format!("{:?}", want.args.requested_to_capacity_ratio),
                ),
                (
                    "InterPodAffinity",
                    format!("{:?}", p.resolved.args.inter_pod_affinity),
                    format!("{:?}", want.args.inter_pod_affinity),
                ),
                (
                    "PodTopologySpread",
                    format!(
                        "{:?}",
                        p.resolved
                            .args
                            .pod_topology_spread
                            .as_ref()
                            .map(|a| a.defaulting_type)
                    ),
                    format!(
                        "{:?}",
                        Some(
                            want.args
                                .pod_topology_spread
                                .as_ref()
                                .map_or(policy::DefaultingType::List, |a| a.defaulting_type)
                        )
                    ),
                ),
                (
                    "NodeResourcesFit",
                    format!("{:?}", p.resolved.args.node_resources_fit),
                    format!("{:?}", want.args.node_resources_fit),
                ),
            ] {
                if uses(&want, plugin) {
                    assert_eq!(got, want_args, "{name} {v} {plugin} args");
                }
            }
            // Behaviour on the demo cluster, with every diagnosis and score.
            let via_policy = run(demo_cluster(), profile(want.clone(), None), true);
            let via_config = run(
                demo_cluster(),
                profile(p.resolved.clone(), p.percentage_of_nodes_to_score),
                true,
            );
            assert_eq!(
                normalize(via_config),
                normalize(via_policy),
                "{name} {v} demo"
            );
            if conv.warnings.is_empty() {
                // Nothing left out: the reference is the Policy itself.
                let original = run(demo_cluster(), profile(loaded.resolved.clone(), None), true);
                let again = run(demo_cluster(), profile(p.resolved.clone(), None), true);
                assert_eq!(
                    normalize(again),
                    normalize(original),
                    "{name} {v} demo (lossless)"
                );
            }
        }
        // The openb default trace (first 500 pods), v1beta2 (the default target).
        let conv =
            convert_policy(&loaded, &name, ConfigVersion::V1beta2, "mini-scheduler").unwrap();
        let config = parse_config(&name, &conv.to_yaml()).unwrap();
        let want = expected(&loaded, ConfigVersion::V1beta2, &conv.warnings);
        let via_policy = run(openb_cluster(Some(500)), profile(want, None), false);
        let via_config = run(
            openb_cluster(Some(500)),
            profile(config.profiles[0].resolved.clone(), None),
            false,
        );
        assert_eq!(via_config, via_policy, "{name} openb");
    }
    assert!(lossless >= 5, "{lossless}");
}

/// Two profiles routed by schedulerName over one cluster: each pod is scheduled with its
/// profile's plugins, and they share the node state.
#[test]
fn two_profiles_route_pods_by_scheduler_name() {
    let yaml = r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: mini-scheduler
  plugins:
    multiPoint:
      disabled: [{name: '*'}]
    queueSort: {enabled: [{name: PrioritySort}]}
    preFilter: {enabled: [{name: NodeResourcesFit}]}
    filter: {enabled: [{name: NodeResourcesFit}, {name: TaintToleration}, {name: NodeUnschedulable}]}
    score: {enabled: [{name: NodeResourcesFit}]}
    bind: {enabled: [{name: DefaultBinder}]}
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
- schedulerName: default-scheduler
"#;
    let config = parse_config("two.yaml", yaml).unwrap();
    assert_eq!(config.profiles.len(), 2);
    let scores = |i: usize| -> Vec<&str> {
        config.profiles[i]
            .resolved
            .scores
            .iter()
            .map(|s| s.plugin)
            .collect()
    };
    assert_eq!(scores(0), ["NodeResourcesMostAllocated"]);
    assert!(
        scores(1).contains(&"NodeResourcesLeastAllocated"),
        "{:?}",
        scores(1)
    );
    let profiles: Vec<SchedulerProfile> = config
        .profiles
        .iter()
        .map(|p| SchedulerProfile {
            scheduler_name: p.scheduler_name.clone(),
            profile: Profile::from_resolved(p.resolved.clone(), "two.yaml").unwrap(),
            percentage_of_nodes_to_score: p.percentage_of_nodes_to_score,
        })
        .collect();
    let out = run(demo_cluster(), profiles, true);
    // The demo cluster's default-scheduler pod is scheduled by the second profile now.
    let other = out
        .iter()
        .find(|c| c.0 == "default/other-scheduler")
        .unwrap();
    assert_eq!(other.1, "Scheduled", "{other:?}");
    // Its score breakdown has the default profile's plugins (several), the first profile's pods
    // one plugin only.
    let breakdown_len = |c: &Comparable| {
        c.6.as_ref()
            .and_then(|s| s.first())
            .map(|(_, _, v)| v.len())
    };
    assert!(breakdown_len(other).unwrap() > 1);
    let first = out
        .iter()
        .find(|c| {
            c.1 == "Scheduled"
                && c.0 != "default/other-scheduler"
                && c.6.as_ref().is_some_and(|s| s.len() > 1)
        })
        .unwrap();
    assert_eq!(breakdown_len(first), Some(1), "{first:?}");
}

/// The GPU policies (`config/policies/gpu`, one per scorer of issue 14): each converts without
/// a warning, `--config` accepts its GPU score plugins, and the configuration schedules the
/// first 500 openb pods (placements, GPU devices, messages, every node's scores) and the demo
/// cluster as the Policy does (the whole trace:
/// [`whole_openb_default_trace_round_trips_for_every_accepted_policy`]). Before the configuration loader knew the GPU plugins, this failed with
/// `plugin "GpuBestFit" does not exist`.
#[test]
fn gpu_policies_schedule_the_same_through_their_configuration() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("config/policies/gpu"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    for file in files {
        let name = file.display().to_string();
        let loaded = load(&file);
        let conv =
            convert_policy(&loaded, &name, ConfigVersion::V1beta2, "mini-scheduler").unwrap();
        assert!(conv.warnings.is_empty(), "{name}: {:?}", conv.warnings);
        let config = parse_config(&format!("{name}.v1beta2.yaml"), &conv.to_yaml())
            .unwrap_or_else(|e| panic!("{name}: --config refuses its conversion: {e}"));
        let via_policy = run(
            openb_cluster(Some(500)),
            profile(loaded.resolved.clone(), None),
            true,
        );
        let via_config = run(
            openb_cluster(Some(500)),
            profile(config.profiles[0].resolved.clone(), None),
            true,
        );
        assert_eq!(normalize(via_config), normalize(via_policy), "{name} openb");
        // The demo cluster too (no GPUs there: the GPU scorers see only GPU-less nodes).
        let via_policy = run(demo_cluster(), profile(loaded.resolved.clone(), None), true);
        let via_config = run(
            demo_cluster(),
            profile(config.profiles[0].resolved.clone(), None),
            true,
        );
        assert_eq!(normalize(via_config), normalize(via_policy), "{name} demo");
    }
}

/// The Policies the whole-trace round trip covers: every accepted Policy of the corpus — the
/// bundled sample (what `run` and `simulate` use by default), the compatibility corpus
/// (`config/policies/pass`) and the GPU policies (`config/policies/gpu`).
fn whole_trace_policies() -> Vec<PathBuf> {
    let mut files = vec![root().join("config/policy-config-file.json")];
    files.extend(corpus());
    let mut gpu: Vec<PathBuf> = std::fs::read_dir(root().join("config/policies/gpu"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    gpu.sort();
    assert!(gpu.len() >= 6, "{gpu:?}");
    files.extend(gpu);
    files
}

/// What one policy's whole-trace round trip saw.
struct TraceRoundTrip {
    pods: usize,
    scheduled: usize,
    /// Distinct failure messages (0 when every pod was scheduled).
    messages: usize,
    /// Whether the conversion reported something left out (the reference is then the Policy
    /// without it).
    lossy: bool,
    seconds: f64,
}

/// `policy convert` (v1beta2) then `--config` against the Policy for one file, pod by pod over
/// `cluster`: the same outcome, node, GPU devices, message, diagnosis and every node's scores
/// (values per plugin; names differ by design). The reference is the Policy itself, or, when
/// the conversion reports something left out, the Policy without exactly that ([`expected`]).
/// The two simulations run in lockstep, one pod at a time, so memory stays small. `Err` names
/// the first pod that differs.
fn round_trip_whole_trace(file: &PathBuf, cluster: &Cluster) -> Result<TraceRoundTrip, String> {
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed: 7,
        percentage_of_nodes_to_score: 0,
        explain: true,
    };
    let started = std::time::Instant::now();
    let name = file.display().to_string();
    let loaded = load(file);
    let conv = convert_policy(&loaded, &name, ConfigVersion::V1beta2, "mini-scheduler")
        .map_err(|e| format!("{name}: policy convert: {e:?}"))?;
    let config = parse_config(&format!("{name}.v1beta2.yaml"), &conv.to_yaml())
        .map_err(|e| format!("{name}: --config refuses its conversion: {e}"))?;
    let p = &config.profiles[0];
    let want = expected(&loaded, ConfigVersion::V1beta2, &conv.warnings);
    let mut via_policy =
        Simulation::with_profiles(cluster.clone(), profile(want, None), &cfg).unwrap();
    let mut via_config = Simulation::with_profiles(
        cluster.clone(),
        profile(p.resolved.clone(), p.percentage_of_nodes_to_score),
        &cfg,
    )
    .unwrap();
    let (mut pods, mut scheduled) = (0usize, 0usize);
    let mut messages = std::collections::BTreeSet::new();
    loop {
        match (via_policy.next(), via_config.next()) {
            (None, None) => break,
            (Some(a), Some(b)) => {
                let (a, b) = (
                    normalize(vec![comparable(&a)]),
                    normalize(vec![comparable(&b)]),
                );
                if a != b {
                    return Err(format!(
                        "{name}: pod {pods} differs through the configuration:\n policy: {a:?}\n config: {b:?}"
                    ));
                }
                scheduled += usize::from(a[0].2.is_some());
                if a[0].2.is_none() {
                    messages.insert(a[0].3.clone());
                }
                pods += 1;
            }
            (a, b) => {
                return Err(format!(
                    "{name}: one run ended first after {pods} pods (policy: {}, config: {})",
                    a.is_some(),
                    b.is_some()
                ));
            }
        }
    }
    Ok(TraceRoundTrip {
        pods,
        scheduled,
        messages: messages.len(),
        lossy: !conv.warnings.is_empty(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Issue 17 item 3 on the whole openb default trace: for every accepted Policy
/// ([`whole_trace_policies`]), [`round_trip_whole_trace`] over all 8,152 pods on the 1,213 GPU
/// nodes. The policies run in parallel, one per thread (`ROUND_TRIP_THREADS`, default: the
/// cores available; `ROUND_TRIP_ONLY` keeps the policies whose path contains one of its
/// comma-separated parts); every policy runs even after a failure, and the failures are listed
/// together. Each policy's line (pods scheduled, distinct failure messages, time) goes to
/// stderr: a policy that schedules nothing there (its filters need labels or volumes the trace
/// lacks) still compares equal, pod by pod, but exercises little.
#[test]
#[ignore = "minutes in a debug build: .ci/run runs it in a release build (cargo test --release ... -- --ignored)"]
fn whole_openb_default_trace_round_trips_for_every_accepted_policy() {
    let cluster = openb_cluster(None);
    let mut files = whole_trace_policies();
    // `ROUND_TRIP_ONLY=a,b`: only the policies whose path contains one of these (to rerun one).
    if let Ok(only) = std::env::var("ROUND_TRIP_ONLY") {
        files.retain(|f| only.split(',').any(|o| f.to_string_lossy().contains(o)));
        assert!(
            !files.is_empty(),
            "ROUND_TRIP_ONLY={only} matches no policy"
        );
    }
    let threads = std::env::var("ROUND_TRIP_THREADS")
        .ok()
        .and_then(|t| t.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, files.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        round_trip_whole_trace(file, &cluster)
                    }))
                        .unwrap_or_else(|_| Err(format!("{}: panicked", file.display())));
                    match &r {
                        Ok(t) => eprintln!(
                            "{}: {} pods, {} scheduled, {} distinct failure messages{}: identical through v1beta2 in {:.1} s",
                            file.display(),
                            t.pods,
                            t.scheduled,
                            t.messages,
                            if t.lossy { " (reference: the Policy without what the conversion reports)" } else { "" },
                            t.seconds
                        ),
                        Err(e) => eprintln!("{e}"),
                    }
                    results.lock().unwrap().push((i, r));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    assert_eq!(results.len(), files.len());
    let mut failures = Vec::new();
    for (i, r) in results {
        let name = files[i].display();
        match r {
            Ok(t) => {
                assert_eq!(t.pods, 8_152, "{name}");
                if files[i].ends_with("policy-config-file.json") {
                    assert!(t.scheduled > 4_000, "{name}: {} scheduled", t.scheduled);
                }
            }
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} policies differ through their configuration:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    eprintln!(
        "{} policies x 8,152 pods identical through v1beta2 in {:.1} s on {threads} threads",
        files.len(),
        started.elapsed().as_secs_f64()
    );
}
