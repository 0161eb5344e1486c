//! The deployment manifests: every file listed and present, every document strictly typed
//! (unknown fields refused), and the pieces consistent with each other and with the binary's
//! flags — what `kubectl apply -k manifests/ --dry-run=client` would check, without a cluster.
//! When `kubectl` is installed, `kubectl kustomize` must also agree (skipped otherwise).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use tests::manifests::{Kustomization, Manifest, manifests_dir};

fn build(dir: &Path) -> (Kustomization, Vec<Manifest>) {
    let k = Kustomization::load(dir).unwrap();
    assert_eq!(k.api_version, "kustomize.config.k8s.io/v1beta1");
    assert_eq!(k.kind, "Kustomization");
    let objects = k.build().unwrap_or_else(|e| panic!("{e}"));
    (k, objects)
}

/// The kustomization directories: `manifests/` and every subdirectory, except kustomize
/// Components (`manifests/monitoring`: Prometheus Operator kinds that k8s-openapi does not
/// type, checked by `crates/mini-scheduler/tests/monitoring.rs`).
fn kustomization_dirs() -> Vec<std::path::PathBuf> {
    let root = manifests_dir();
    let mut dirs = vec![root.clone()];
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        let component = std::fs::read_to_string(p.join("kustomization.yaml"))
            .is_ok_and(|t| t.lines().any(|l| l.trim() == "kind: Component"));
        if p.is_dir() && !component {
            dirs.push(p);
        }
    }
    dirs
}

#[test]
fn every_manifest_file_is_listed_and_every_listed_file_exists() {
    for dir in kustomization_dirs() {
        assert!(
            dir.join("kustomization.yaml").is_file(),
            "{} has no kustomization.yaml",
            dir.display()
        );
        let k = Kustomization::load(&dir).unwrap();
        let mut listed: BTreeSet<String> = k.resources.iter().cloned().collect();
        assert_eq!(listed.len(), k.resources.len(), "a resource listed twice");
        for g in &k.config_map_generator {
            listed.extend(g.files.iter().cloned());
        }
        for f in &listed {
            assert!(
                dir.join(f).is_file(),
                "{}: listed {f} does not exist",
                dir.display()
            );
        }
        let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .filter(|n| n != "kustomization.yaml")
            .collect();
        let unlisted: Vec<&String> = on_disk.difference(&listed).collect();
        assert!(
            unlisted.is_empty(),
            "{}: files not in kustomization.yaml: {unlisted:?}",
            dir.display()
        );
    }
}

#[test]
fn every_manifest_parses_strictly_and_names_are_unique() {
    for dir in kustomization_dirs() {
        let (k, objects) = build(&dir);
        assert!(!objects.is_empty());
        let ns = k
            .namespace
            .clone()
            .expect("a namespace in every kustomization");
        let mut seen = BTreeSet::new();
        for o in &objects {
            let name = o.meta().name.clone().expect("every object has a name");
            assert!(
                seen.insert((o.kind(), name.clone())),
                "{} twice",
                o.describe()
            );
            if o.namespaced() {
                assert_eq!(o.meta().namespace.as_deref(), Some(ns.as_str()));
            }
        }
        // The files already say the namespace they end up in, so applying one file alone
        // (`kubectl apply -f`) puts it in the same place.
        for r in &k.resources {
            for o in tests::manifests::parse_file(&dir.join(r)).unwrap() {
                if o.namespaced() {
                    assert_eq!(
                        o.meta().namespace.as_deref(),
                        Some(ns.as_str()),
                        "{r}: {}",
                        o.describe()
                    );
                }
            }
        }
        assert!(
            objects
                .iter()
                .any(|o| matches!(o, Manifest::Namespace(n) if n.metadata.name.as_deref() == Some(ns.as_str()))),
            "{} creates its namespace {ns}",
            dir.display()
        );
    }
}

fn flag<'a>(c: &'a Container, name: &str) -> Option<&'a str> {
    let prefix = format!("--{name}=");
    c.args
        .iter()
        .flatten()
        .find_map(|a| a.strip_prefix(prefix.as_str()))
}

fn scheduler_deployment(objects: &[Manifest]) -> &Deployment {
    objects
        .iter()
        .find_map(|o| match o {
            Manifest::Deployment(d) => Some(d),
            _ => None,
        })
        .expect("the scheduler Deployment")
}

#[test]
fn the_scheduler_deployment_is_hardened_and_consistent() {
    let (k, objects) = build(&manifests_dir());
    let ns = k.namespace.unwrap();
    let d = scheduler_deployment(&objects);
    let spec = &d.spec;
    assert_eq!(spec.replicas, Some(3));
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(
        pod.scheduler_name, None,
        "the scheduler is scheduled by the default scheduler"
    );
    let selector = spec.selector.match_labels.clone().unwrap();
    let labels = spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    assert!(selector.iter().all(|(k, v)| labels.get(k) == Some(v)));

    // Replicas spread over nodes.
    let spread = pod.topology_spread_constraints.clone().unwrap_or_default();
    let anti = pod
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref());
    assert!(
        spread
            .iter()
            .any(|t| t.topology_key == "kubernetes.io/hostname"
                && t.when_unsatisfiable == "DoNotSchedule"
                && t.label_selector
                    .as_ref()
                    .and_then(|s| s.match_labels.clone())
                    == Some(selector.clone()))
            || anti.is_some(),
        "replicas spread over nodes"
    );

    // Pod and container security.
    let psc = pod.security_context.as_ref().unwrap();
    assert_eq!(psc.run_as_non_root, Some(true));
    assert_eq!(psc.run_as_user, Some(65532));
    assert_eq!(
        psc.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
        Some("RuntimeDefault")
    );
    assert_eq!(pod.containers.len(), 1);
    let c = &pod.containers[0];
    let csc = c.security_context.as_ref().unwrap();
    assert_eq!(csc.allow_privilege_escalation, Some(false));
    assert_eq!(csc.read_only_root_filesystem, Some(true));
    assert_eq!(
        csc.capabilities.as_ref().and_then(|c| c.drop.clone()),
        Some(vec!["ALL".to_string()])
    );
    assert_eq!(csc.privileged, None);
    let res = c.resources.as_ref().unwrap();
    for r in ["cpu", "memory"] {
        assert!(
            res.requests.as_ref().unwrap().contains_key(r),
            "request {r}"
        );
        assert!(res.limits.as_ref().unwrap().contains_key(r), "limit {r}");
    }

    // The binary: `mini-scheduler run`, image replaced by kustomize.
    assert_eq!(c.args.as_ref().unwrap()[0], "run");
    assert_eq!(c.image.as_deref(), Some("mini-scheduler:0.1.0"));
    assert_eq!(c.command, None, "the image's ENTRYPOINT runs");

    // Identity from the pod name, Lease namespace from the pod's namespace (downward API).
    let env: BTreeMap<&str, &str> = c
        .env
        .iter()
        .flatten()
        .filter_map(|e| {
            let f = e.value_from.as_ref()?.field_ref.as_ref()?;
            Some((e.name.as_str(), f.field_path.as_str()))
        })
        .collect();
    assert_eq!(env.get("POD_NAME"), Some(&"metadata.name"));
    assert_eq!(env.get("POD_NAMESPACE"), Some(&"metadata.namespace"));
    assert_eq!(flag(c, "leader-elect-resource-namespace"), None);

    // Probes on the secure port (the binary's default --secure-port 10259), over HTTPS.
    assert_eq!(flag(c, "admin-address"), None);
    assert!(
        !c.args
            .iter()
            .flatten()
            .any(|a| a.starts_with("--insecure-dev-http") || a.starts_with("--secure-port")),
        "HTTPS on the default port: no plain HTTP in a cluster"
    );
    let port = c.ports.as_ref().unwrap();
    assert_eq!(port[0].container_port, 10259);
    let port_name = port[0].name.clone().unwrap();
    let probe = |p: &Option<k8s_openapi::api::core::v1::Probe>| {
        let g = p.as_ref().unwrap().http_get.as_ref().unwrap();
        let port_ok = match &g.port {
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n) => *n == 10259,
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => *s == port_name,
        };
        assert!(port_ok);
        assert_eq!(g.scheme.as_deref(), Some("HTTPS"));
        g.path.clone().unwrap()
    };
    assert_eq!(probe(&c.liveness_probe), "/livez");
    assert_eq!(probe(&c.readiness_probe), "/readyz");

    // The policy: a ConfigMap mounted whole (subPath never updates) at the flag's directory.
    let policy_file = Path::new(flag(c, "policy-config-file").expect("--policy-config-file"));
    let mount = c
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| Path::new(&m.mount_path) == policy_file.parent().unwrap())
        .expect("the policy directory is mounted");
    assert_eq!(mount.sub_path, None);
    assert_eq!(mount.read_only, Some(true));
    let volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount.name)
        .unwrap();
    let cm_name = volume.config_map.as_ref().unwrap().name.clone();
    let cm = objects
        .iter()
        .find_map(|o| match o {
            Manifest::ConfigMap(c) if c.metadata.name == Some(cm_name.clone()) => Some(c),
            _ => None,
        })
        .expect("the ConfigMap the volume names");
    let key = policy_file.file_name().unwrap().to_string_lossy();
    let text = &cm.data.as_ref().unwrap()[key.as_ref()];
    let loaded = scheduler::policy::parse_policy(&format!("manifests/{key}"), text)
        .unwrap_or_else(|e| panic!("{e}"));
    scheduler::framework::Framework::from_policy(&loaded.resolved).unwrap();

    // The ServiceAccount exists and is bound.
    let sa = pod.service_account_name.clone().unwrap();
    assert!(
        objects.iter().any(
            |o| matches!(o, Manifest::ServiceAccount(s) if s.metadata.name == Some(sa.clone()))
        )
    );
    let bound = |subjects: &Option<Vec<k8s_openapi::api::rbac::v1::Subject>>| {
        subjects.iter().flatten().any(|s| {
            s.kind == "ServiceAccount" && s.name == sa && s.namespace.as_deref() == Some(&ns)
        })
    };
    let mut role_refs = Vec::new();
    for o in &objects {
        match o {
            Manifest::ClusterRoleBinding(b) => {
                assert!(bound(&b.subjects), "{}", o.describe());
                role_refs.push(("ClusterRole", b.role_ref.name.clone()));
            }
            Manifest::RoleBinding(b) => {
                assert!(bound(&b.subjects), "{}", o.describe());
                role_refs.push(("Role", b.role_ref.name.clone()));
            }
            _ => {}
        }
    }
    for (kind, name) in role_refs {
        // Bootstrap roles (system:auth-delegator) exist in every cluster.
        if name.starts_with("system:") {
            continue;
        }
        assert!(
            objects
                .iter()
                .any(|o| o.kind() == kind && o.meta().name.as_deref() == Some(&name)),
            "{kind} {name} referenced by a binding exists"
        );
    }
    // The Role names the Lease the flag names.
    let lease = flag(c, "leader-elect-resource-name").unwrap_or("mini-scheduler");
    let role = objects
        .iter()
        .find_map(|o| match o {
            Manifest::Role(r) => Some(r),
            _ => None,
        })
        .unwrap();
    assert!(
        role.rules
            .iter()
            .flatten()
            .any(|r| { r.resource_names.iter().flatten().any(|n| n == lease) })
    );

    // Service and PodDisruptionBudget select the scheduler's pods.
    let selects =
        |sel: &BTreeMap<String, String>| sel.iter().all(|(k, v)| labels.get(k) == Some(v));
    let mut found = (false, false);
    for o in &objects {
        match o {
            Manifest::Service(s) => {
                let spec = s.spec.as_ref().unwrap();
                assert!(selects(spec.selector.as_ref().unwrap()));
                let p = &spec.ports.as_ref().unwrap()[0];
                assert_eq!(
                    p.target_port,
                    Some(
                        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(
                            port_name.clone()
                        )
                    )
                );
                found.0 = true;
            }
            Manifest::PodDisruptionBudget(p) => {
                let spec = p.spec.as_ref().unwrap();
                assert!(selects(
                    spec.selector
                        .as_ref()
                        .unwrap()
                        .match_labels
                        .as_ref()
                        .unwrap()
                ));
                // Two of three stay up through voluntary disruptions.
                assert!(spec.max_unavailable.is_some() || spec.min_available.is_some());
                found.1 = true;
            }
            _ => {}
        }
    }
    assert_eq!(
        found,
        (true, true),
        "a metrics Service and a PodDisruptionBudget"
    );
}

#[test]
fn examples_opt_in_with_the_schedulers_name() {
    let (_, main) = build(&manifests_dir());
    let c = &scheduler_deployment(&main)
        .spec
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0];
    let name = flag(c, "scheduler-name").unwrap_or("mini-scheduler");
    let (_, examples) = build(&manifests_dir().join("examples"));
    let specs: Vec<&PodSpec> = examples
        .iter()
        .filter_map(|o| match o {
            Manifest::Pod(p) => p.spec.as_ref(),
            Manifest::Deployment(d) => d.spec.template.spec.as_ref(),
            _ => None,
        })
        .collect();
    assert!(specs.len() >= 3, "example pods and a Deployment");
    for s in specs {
        assert_eq!(s.scheduler_name.as_deref(), Some(name));
    }
}

/// `kubectl kustomize` (offline) agrees on the objects, when kubectl is installed.
#[test]
fn kubectl_kustomize_agrees_when_available() {
    for dir in kustomization_dirs() {
        let out = match std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(&dir)
            .output()
        {
            Ok(o) => o,
            Err(_) => {
                eprintln!("kubectl not installed: skipping the kustomize cross-check");
                return;
            }
        };
        assert!(
            out.status.success(),
            "kubectl kustomize {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let theirs: Vec<serde_json::Value> = serde_yaml::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        let (_, ours) = build(&dir);
        let ours: Vec<serde_json::Value> = ours.iter().map(to_json).collect();
        let key = |v: &serde_json::Value| {
            (
                v["kind"].as_str().unwrap_or_default().to_string(),
                v["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                v["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        };
        let theirs: BTreeMap<_, _> = theirs.into_iter().map(|v| (key(&v), v)).collect();
        let ours: BTreeMap<_, _> = ours.into_iter().map(|v| (key(&v), v)).collect();
        assert_eq!(
            theirs.keys().collect::<Vec<_>>(),
            ours.keys().collect::<Vec<_>>()
        );
        for (k, v) in &theirs {
            // Each of kustomize's objects is also strictly typed, and equals ours.
            let typed =
                tests::manifests::parse_manifest(v).unwrap_or_else(|e| panic!("{k:?}: {e}"));
            assert_eq!(to_json(&typed), ours[k], "{k:?}");
        }
    }
}

fn to_json(m: &Manifest) -> serde_json::Value {
    match m {
        Manifest::Namespace(o) => serde_json::to_value(o),
        Manifest::ServiceAccount(o) => serde_json::to_value(o),
        Manifest::ClusterRole(o) => serde_json::to_value(o),
        Manifest::ClusterRoleBinding(o) => serde_json::to_value(o),
        Manifest::Role(o) => serde_json::to_value(o),
        Manifest::RoleBinding(o) => serde_json::to_value(o),
        Manifest::ConfigMap(o) => serde_json::to_value(o),
        Manifest::Deployment(o) => serde_json::to_value(o),
        Manifest::Service(o) => serde_json::to_value(o),
        Manifest::PodDisruptionBudget(o) => serde_json::to_value(o),
        Manifest::Pod(o) => serde_json::to_value(o),
    }
    .unwrap()
}
