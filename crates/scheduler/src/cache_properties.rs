//! Property test of the cache with the scheduling cycle on top (as the controller drives them):
//! no sequence of schedule-and-assume, forget (binding failed), finish-binding, bind confirmed
//! by the watch, expiry of assumed pods, removal of bound pods, and node updates (labels, taints,
//! allocatable grown or kept) over-commits a node on any resource or a GPU device beyond 1000
//! milli-GPU; and after every step each node's accounting equals what an independent model
//! of the live pods adds up to.
//!
//! `cargo test -p scheduler --lib cache_properties` runs 256 sequences of up to 120 steps with
//! a fixed seed; `FUZZ_CASES=N FUZZ_SEED=S` runs more.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

use super::*;
use crate::framework::Framework;
use crate::framework::plugins::testutil::{node, pod};
use crate::schedule_one::Algorithm;

const NODES: usize = 4;
const TTL: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Assumed { finished: bool },
    Added,
}

/// The model's view of one live pod.
#[derive(Debug, Clone)]
struct Live {
    pod: Arc<PodInfo>,
    node: String,
    gpu: Vec<u32>,
    phase: Phase,
}

fn node_info(i: usize, gpus: u32, cpu: u32, generation: u32) -> NodeInfo {
    let cpu = cpu.to_string();
    let gpus = gpus.to_string();
    let mut res = vec![("cpu", cpu.as_str()), ("memory", "8Gi"), ("pods", "6")];
    if gpus != "0" {
        res.push(("nvidia.com/gpu", gpus.as_str()));
    }
    let mut n = node(&format!("n{i}"))
        .allocatable(&res)
        .label("generation", &generation.to_string());
    if generation % 3 == 2 {
        n = n.taint("soft", "x", "PreferNoSchedule");
    }
    n.info()
}

fn new_pod(k: u32, a: u32) -> PodInfo {
    let cpu = format!("{}m", 100 + a % 1900);
    let mem = format!("{}Mi", 64 + (a / 7) % 2000);
    let mut req = vec![("cpu", cpu.clone()), ("memory", mem)];
    match a % 5 {
        0 => req.push(("nvidia.com/gpu", (1 + a % 2).to_string())),
        1 => req.push((
            "alibabacloud.com/gpu-milli",
            (100 + (a / 3) % 800).to_string(),
        )),
        _ => {}
    }
    let req: Vec<(&str, &str)> = req.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut p = pod(&format!("p{k}")).container(&req);
    p.0.metadata.uid = Some(format!("uid-{k}"));
    p.info()
}

/// Checks the invariants: accounting equals the model, nothing over allocatable or 1000 milli.
fn check(cache: &Cache, model: &BTreeMap<String, Live>) -> Result<(), TestCaseError> {
    for ni in cache.snapshot().nodes() {
        let on: Vec<&Live> = model.values().filter(|l| l.node == ni.name).collect();
        let cpu: i64 = on.iter().map(|l| l.pod.requests.milli_cpu).sum();
        let mem: i64 = on.iter().map(|l| l.pod.requests.memory).sum();
        prop_assert_eq!(ni.requested.milli_cpu, cpu, "{} cpu", &ni.name);
        prop_assert_eq!(ni.requested.memory, mem, "{} memory", &ni.name);
        prop_assert_eq!(ni.pods.len(), on.len(), "{} pods", &ni.name);
        prop_assert!(
            cpu <= ni.allocatable.milli_cpu,
            "{} cpu over-committed",
            &ni.name
        );
        prop_assert!(
            mem <= ni.allocatable.memory,
            "{} memory over-committed",
            &ni.name
        );
        prop_assert!(on.len() as i64 <= ni.allocatable.allowed_pod_number);
        let mut devices = vec![0u32; ni.gpu_used.len()];
        for l in &on {
            for &i in &l.gpu {
                prop_assert!(
                    (i as usize) < devices.len(),
                    "{}: device {} of {}",
                    &ni.name,
                    i,
                    devices.len()
                );
                devices[i as usize] += l.pod.gpu.milli;
            }
        }
        prop_assert_eq!(&devices, &ni.gpu_used, "{} devices", &ni.name);
        for (i, d) in devices.iter().enumerate() {
            prop_assert!(*d <= GPU_MILLI, "{} GPU {} at {} milli", &ni.name, i, d);
        }
    }
    Ok(())
}

const GPU_MILLI: u32 = crate::model::GPU_MILLI_PER_DEVICE;

fn run(steps: &[(u8, u32, u32)], gpus: &[u32]) -> Result<(), TestCaseError> {
    let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
    let mut algo = Algorithm::new(100, 7);
    let mut cache = Cache::new(Some(TTL));
    let mut cpu_of = [4000u32; NODES];
    let mut generation = [0u32; NODES];
    for i in 0..NODES {
        cache.add_node(node_info(i, gpus[i], cpu_of[i], 0));
    }
    let t0 = Instant::now();
    let mut model: BTreeMap<String, Live> = BTreeMap::new();
    let mut next = 0u32;
    for &(op, a, b) in steps {
        let pick = |model: &BTreeMap<String, Live>, want: &dyn Fn(&Live) -> bool| {
            let keys: Vec<String> = model
                .iter()
                .filter(|(_, l)| want(l))
                .map(|(k, _)| k.clone())
                .collect();
            (!keys.is_empty()).then(|| keys[b as usize % keys.len()].clone())
        };
        match op % 7 {
            // Schedule a new pod on the cache's snapshot and assume it there.
            0 | 1 => {
                next += 1;
                let p = new_pod(next, a);
                if let Ok(r) = algo.schedule(&fwk, cache.snapshot(), &p, false) {
                    let gpu = r.gpu_indexes.clone();
                    let p = Arc::new(p);
                    cache
                        .assume_pod(p.clone(), &r.node, (!gpu.is_empty()).then(|| gpu.clone()))
                        .unwrap();
                    model.insert(
                        p.key(),
                        Live {
                            pod: p,
                            node: r.node,
                            gpu,
                            phase: Phase::Assumed { finished: false },
                        },
                    );
                }
            }
            // The binding failed: forget.
            2 => {
                if let Some(k) = pick(&model, &|l| matches!(l.phase, Phase::Assumed { .. })) {
                    let l = model.remove(&k).unwrap();
                    cache.forget_pod(&l.pod).unwrap();
                }
            }
            // The binding was written; the watch may not have confirmed it yet.
            3 => {
                if let Some(k) = pick(&model, &|l| l.phase == Phase::Assumed { finished: false }) {
                    cache.finish_binding(&k, t0);
                    model.get_mut(&k).unwrap().phase = Phase::Assumed { finished: true };
                }
            }
            // The watch confirms the binding (the pod object now carries its node).
            4 => {
                if let Some(k) = pick(&model, &|l| matches!(l.phase, Phase::Assumed { .. })) {
                    let l = model.get_mut(&k).unwrap();
                    let mut bound = (*l.pod).clone();
                    bound.node_name = l.node.clone();
                    bound.gpu_indexes = (!l.gpu.is_empty() && b % 2 == 0).then(|| l.gpu.clone());
                    cache.finish_binding(&k, t0);
                    cache.add_pod(Arc::new(bound)).unwrap();
                    l.phase = Phase::Added;
                }
            }
            // Time passes: assumed pods whose binding finished and were never confirmed expire;
            // or a bound pod is deleted.
            5 => {
                if a % 2 == 0 {
                    let expired = cache.cleanup_expired(t0 + TTL * 2);
                    let want: Vec<String> = model
                        .iter()
                        .filter(|(_, l)| l.phase == Phase::Assumed { finished: true })
                        .map(|(k, _)| k.clone())
                        .collect();
                    prop_assert_eq!(&expired, &want);
                    for k in expired {
                        model.remove(&k);
                    }
                } else if let Some(k) = pick(&model, &|l| l.phase == Phase::Added) {
                    let l = model.remove(&k).unwrap();
                    cache.remove_pod(&l.pod).unwrap();
                }
            }
            // A node update: new labels (and a taint every third), allocatable kept or grown.
            _ => {
                let i = a as usize % NODES;
                generation[i] += 1;
                if b % 2 == 0 {
                    cpu_of[i] += 500;
                }
                cache.update_node(node_info(i, gpus[i], cpu_of[i], generation[i]));
            }
        }
        check(&cache, &model)?;
    }
    Ok(())
}

#[test]
fn no_sequence_over_commits_a_node_or_a_gpu() {
    let cases = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut runner = TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        proptest::collection::vec((any::<u8>(), any::<u32>(), any::<u32>()), 1..120),
        proptest::collection::vec(0u32..5, NODES),
    );
    runner
        .run(&strategy, |(steps, gpus)| run(&steps, &gpus))
        .unwrap();
}
