//! Conversion tests: the compatibility corpus (`config/policies/pass`) under every target, the
//! weight rule of two priorities on one score plugin, the plugins each version lacks, the
//! resource scoring strategy, the arguments and the extenders.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use super::*;
use crate::policy::{FeatureGates, LoadedPolicy, parse_policy};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const ON: FeatureGates = FeatureGates {
    default_pod_topology_spread: true,
};
const OFF: FeatureGates = FeatureGates {
    default_pod_topology_spread: false,
};

fn policy(text: &str, gates: &FeatureGates) -> LoadedPolicy {
    let mut l = parse_policy("p.json", text).unwrap();
    l.resolved = l.resolved.with_feature_gates(gates);
    l
}

fn convert(text: &str, gates: &FeatureGates, v: ConfigVersion) -> Conversion {
    convert_policy(&policy(text, gates), "p.json", v, "mini-scheduler").unwrap()
}

fn profile(c: &Conversion) -> &KubeSchedulerProfile {
    &c.config.profiles[0]
}

fn point<'a>(c: &'a Conversion, f: impl Fn(&'a Plugins) -> &'a Option<PluginSet>) -> Vec<String> {
    f(profile(c).plugins.as_ref().unwrap())
        .as_ref()
        .map(|s| {
            s.enabled
                .iter()
                .map(|p| match p.weight {
                    Some(w) => format!("{}:{w}", p.name),
                    None => p.name.clone(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn scores(c: &Conversion) -> Vec<String> {
    point(c, |p| &p.score)
}

fn args(c: &Conversion, plugin: &str) -> Option<serde_yaml::Value> {
    profile(c)
        .plugin_config
        .iter()
        .find(|a| a.name == plugin)
        .and_then(|a| a.args.clone())
}

/// Every Policy of the compatibility corpus that kube-scheduler v1.22 accepts converts to every
/// version, under both values of `DefaultPodTopologySpread`, and the YAML reads back into the
/// same configuration.
#[test]
fn every_accepted_corpus_policy_converts() {
    let dir = repo_root().join("config/policies/pass");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.to_string_lossy().contains(".expected."))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.display().to_string();
        for gates in [ON, OFF] {
            let mut loaded = parse_policy(&name, &text).unwrap();
            loaded.resolved = loaded.resolved.with_feature_gates(&gates);
            for v in ConfigVersion::ALL {
                let c = convert_policy(&loaded, &name, v, "mini-scheduler")
                    .unwrap_or_else(|e| panic!("{name} {v}: {e}"));
                assert_eq!(c.config.api_version, v.api_version());
                let back: KubeSchedulerConfiguration = serde_yaml::from_str(&c.to_yaml())
                    .unwrap_or_else(|e| panic!("{name} {v}: {e}"));
                assert_eq!(back, c.config, "{name} {v}");
                // Nothing the version lacks is written, and every plugin left out is reported.
                let written = c.to_yaml();
                for (plugin, since, _) in REMOVED_PLUGINS {
                    let in_policy = loaded.resolved.has_plugin(plugin);
                    let gone = v >= *since;
                    assert_eq!(
                        written.contains(&format!("name: {plugin}\n")),
                        in_policy && !gone,
                        "{name} {v} {plugin}"
                    );
                    assert_eq!(
                        c.warnings
                            .iter()
                            .any(|w| w.starts_with(&format!("{name}: {plugin} ("))),
                        in_policy && gone,
                        "{name} {v} {plugin}: {:?}",
                        c.warnings
                    );
                }
            }
        }
    }
}

/// kube-scheduler v1.22 keeps the **first** weight (in sorted priority-key order) when two
/// priorities give one score plugin, not the larger one: `appendToPluginSet` assigns the larger
/// weight to the range loop's copy (`legacy_registry.go` @054d429d). With
/// `DefaultPodTopologySpread` on, `EvenPodsSpreadPriority` and `SelectorSpreadPriority` both give
/// `PodTopologySpread`, and the former sorts first.
#[test]
fn two_priorities_on_one_score_plugin_keep_the_first_weight() {
    let p = |even: i64, selector: i64| {
        format!(
            r#"{{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[
                {{"name":"SelectorSpreadPriority","weight":{selector}}},
                {{"name":"EvenPodsSpreadPriority","weight":{even}}}]}}"#
        )
    };
    for v in ConfigVersion::ALL {
        // The larger weight comes second in key order: max would give 5, v1.22 gives 1.
        let c = convert(&p(1, 5), &ON, v);
        assert_eq!(scores(&c), ["PodTopologySpread:1"], "{v}");
        assert_eq!(point(&c, |p| &p.pre_score), ["PodTopologySpread"], "{v}");
        // Both spread priorities: the args end as System.
        assert_eq!(
            args(&c, "PodTopologySpread").unwrap()["defaultingType"],
            "System"
        );
        let c = convert(&p(5, 1), &ON, v);
        assert_eq!(scores(&c), ["PodTopologySpread:5"], "{v}");
    }
    // Gate off: two plugins, each with its own weight.
    let c = convert(&p(1, 5), &OFF, ConfigVersion::V1beta2);
    assert_eq!(scores(&c), ["PodTopologySpread:1", "SelectorSpread:5"]);
    assert_eq!(
        args(&c, "PodTopologySpread").unwrap()["defaultingType"],
        "List"
    );
}

/// The sample policy as v1beta2: every point from `disabled: *`, the plugins in v1.22's order,
/// LeastRequestedPriority as NodeResourcesFit's LeastAllocated strategy.
#[test]
fn sample_policy_to_v1beta2() {
    let text = std::fs::read_to_string(repo_root().join("config/policy-config-file.json")).unwrap();
    let c = convert(&text, &ON, ConfigVersion::V1beta2);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(
        profile(&c).scheduler_name.as_deref(),
        Some("mini-scheduler")
    );
    assert_eq!(point(&c, |p| &p.queue_sort), ["PrioritySort"]);
    assert_eq!(
        point(&c, |p| &p.pre_filter),
        ["NodePorts", "NodeAffinity", "NodeResourcesFit"]
    );
    assert_eq!(
        point(&c, |p| &p.filter),
        [
            "NodeUnschedulable",
            "NodeName",
            "NodePorts",
            "NodeAffinity",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "TaintToleration"
        ]
    );
    assert_eq!(point(&c, |p| &p.post_filter), ["DefaultPreemption"]);
    assert_eq!(point(&c, |p| &p.bind), ["DefaultBinder"]);
    assert_eq!(
        scores(&c),
        [
            "NodeResourcesBalancedAllocation:1",
            "NodeResourcesFit:1",
            "PodTopologySpread:1"
        ]
    );
    let plugins = profile(&c).plugins.as_ref().unwrap();
    for set in [
        &plugins.queue_sort,
        &plugins.pre_filter,
        &plugins.filter,
        &plugins.post_filter,
        &plugins.pre_score,
        &plugins.score,
        &plugins.reserve,
        &plugins.pre_bind,
        &plugins.bind,
    ] {
        assert_eq!(set.as_ref().unwrap().disabled, [Plugin::named("*")]);
    }
    assert!(plugins.multi_point.is_none());
    let fit = args(&c, "NodeResourcesFit").unwrap();
    assert_eq!(fit["scoringStrategy"]["type"], "LeastAllocated");
    assert_eq!(fit["scoringStrategy"]["resources"][0]["name"], "cpu");
    assert_eq!(fit["scoringStrategy"]["resources"][1]["weight"], 1);
    // v1beta3 / v1: the defaults are switched off in multiPoint only.
    for v in [ConfigVersion::V1beta3, ConfigVersion::V1] {
        let c = convert(&text, &ON, v);
        let plugins = profile(&c).plugins.as_ref().unwrap();
        assert_eq!(
            plugins.multi_point.as_ref().unwrap().disabled,
            [Plugin::named("*")]
        );
        assert!(plugins.filter.as_ref().unwrap().disabled.is_empty());
        assert!(plugins.reserve.is_none());
    }
}

/// Plugins a version lacks are left out with one warning each naming the replacement;
/// SelectorSpread lives until v1beta3.
#[test]
fn removed_plugins_are_left_out_with_a_warning() {
    let text = r#"{"kind":"Policy","apiVersion":"v1",
        "predicates":[{"name":"HasZone","argument":{"labelsPresence":{"labels":["zone"],"presence":true}}},
                      {"name":"MaxEBSVolumeCount"}],
        "priorities":[{"name":"SelectorSpreadPriority","weight":1},
                      {"name":"NodePreferAvoidPodsPriority","weight":10000},
                      {"name":"Zone","weight":2,"argument":{"serviceAntiAffinity":{"label":"zone"}}}]}"#;
    let c = convert(text, &OFF, ConfigVersion::V1beta2);
    assert_eq!(c.warnings.len(), 3, "{:#?}", c.warnings);
    assert!(c.warnings[0].starts_with(
        "p.json: NodeLabel (filter from HasZone) is not a plugin of kubescheduler.config.k8s.io/v1beta2 \
         (gone from v1beta2 on): left out; use NodeAffinity"
    ));
    assert!(
        c.warnings[1]
            .starts_with("p.json: NodePreferAvoidPods (score from NodePreferAvoidPodsPriority)")
    );
    assert!(c.warnings[1].contains("PreferNoSchedule taints"));
    assert!(c.warnings[2].starts_with("p.json: ServiceAffinity (score from Zone)"));
    assert!(c.warnings[2].contains("InterPodAffinity"));
    assert_eq!(
        point(&c, |p| &p.filter),
        ["NodeUnschedulable", "TaintToleration", "EBSLimits"]
    );
    assert_eq!(scores(&c), ["SelectorSpread:1"]);
    assert_eq!(point(&c, |p| &p.pre_score), ["SelectorSpread"]);
    assert!(args(&c, "NodeLabel").is_none() && args(&c, "ServiceAffinity").is_none());
    assert_eq!(
        convert(text, &OFF, ConfigVersion::V1beta3).warnings.len(),
        3
    );

    let c = convert(text, &OFF, ConfigVersion::V1);
    assert_eq!(c.warnings.len(), 5, "{:#?}", c.warnings);
    let selector = c
        .warnings
        .iter()
        .find(|w| w.contains("SelectorSpread ("))
        .unwrap();
    assert!(selector.contains("gone from v1 on"), "{selector}");
    assert!(selector.contains("PodTopologySpread with pluginConfig defaultingType: System"));
    assert!(c.warnings.iter().any(|w| {
        w.starts_with("p.json: EBSLimits (filter from MaxEBSVolumeCount)")
            && w.contains("NodeVolumeLimits")
    }));
    assert_eq!(
        point(&c, |p| &p.filter),
        ["NodeUnschedulable", "TaintToleration"]
    );
    assert!(point(&c, |p| &p.score).is_empty());
    assert!(profile(&c).plugins.as_ref().unwrap().score.is_none());
}

/// Least/Most/RequestedToCapacityRatio become NodeResourcesFit's strategy; a profile has one, so
/// the first in score order stays and the others are reported.
#[test]
fn resource_scoring_becomes_the_fit_strategy() {
    let rtcr = r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"PodFitsResources"}],
        "priorities":[{"name":"Bin","weight":3,"argument":{"requestedToCapacityRatioArguments":{
            "shape":[{"utilization":0,"score":0},{"utilization":100,"score":10}],
            "resources":[{"name":"cpu","weight":2},{"name":"nvidia.com/gpu","weight":5}]}}}]}"#;
    let c = convert(rtcr, &ON, ConfigVersion::V1);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(scores(&c), ["NodeResourcesFit:3"]);
    let s = &args(&c, "NodeResourcesFit").unwrap()["scoringStrategy"];
    assert_eq!(s["type"], "RequestedToCapacityRatio");
    // Shape scores stay on the 0..=10 scale; resources as written.
    assert_eq!(s["requestedToCapacityRatio"]["shape"][1]["score"], 10);
    assert_eq!(s["resources"][1]["name"], "nvidia.com/gpu");
    assert_eq!(s["resources"][1]["weight"], 5);

    let both = r#"{"kind":"Policy","apiVersion":"v1","priorities":[
        {"name":"MostRequestedPriority","weight":2},{"name":"LeastRequestedPriority","weight":1}]}"#;
    let c = convert(both, &ON, ConfigVersion::V1beta2);
    assert_eq!(scores(&c), ["NodeResourcesFit:1"]);
    assert_eq!(
        args(&c, "NodeResourcesFit").unwrap()["scoringStrategy"]["type"],
        "LeastAllocated"
    );
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(c.warnings[0].starts_with(
        "p.json: NodeResourcesMostAllocated (score from MostRequestedPriority) is NodeResourcesFit's \
         scoringStrategy MostAllocated"
    ));

    let heavy = rtcr.replace(r#""weight":5"#, r#""weight":101"#);
    let e =
        convert_policy(&policy(&heavy, &ON), "p.json", ConfigVersion::V1beta2, "s").unwrap_err();
    assert!(e.to_string().starts_with("p.json: cannot convert to v1beta2: requestedToCapacityRatioArguments resource nvidia.com/gpu has weight 101"), "{e}");

    let empty = r#"{"kind":"Policy","apiVersion":"v1","priorities":[{"name":"Bin","weight":1,
        "argument":{"requestedToCapacityRatioArguments":{"shape":[{"utilization":0,"score":0}]}}}]}"#;
    let c = convert(empty, &ON, ConfigVersion::V1beta2);
    assert!(
        c.warnings.iter().any(|w| w.contains("has no resources")),
        "{:?}",
        c.warnings
    );
}

/// hardPodAffinitySymmetricWeight, ignoredByScheduler resources and the extenders.
#[test]
fn arguments_and_extenders() {
    let text = r#"{"kind":"Policy","apiVersion":"v1","hardPodAffinitySymmetricWeight":7,
        "alwaysCheckAllPredicates":true,
        "predicates":[{"name":"PodFitsResources"},{"name":"MatchInterPodAffinity"}],
        "priorities":[{"name":"InterPodAffinityPriority","weight":1}],
        "extenders":[{"urlPrefix":"https://ext:8443/s","filterVerb":"filter","prioritizeVerb":"prio",
            "weight":3,"enableHttps":true,"httpTimeout":30000000000,"ignorable":true,
            "tlsConfig":{"insecure":true},
            "managedResources":[{"name":"example.com/foo","ignoredByScheduler":true}]}]}"#;
    let c = convert(text, &ON, ConfigVersion::V1beta2);
    assert_eq!(
        args(&c, "InterPodAffinity").unwrap()["hardPodAffinityWeight"],
        7
    );
    let fit = args(&c, "NodeResourcesFit").unwrap();
    assert_eq!(fit["ignoredResources"][0], "example.com/foo");
    assert!(fit.get("scoringStrategy").is_none());
    assert_eq!(
        point(&c, |p| &p.pre_filter),
        ["NodeResourcesFit", "InterPodAffinity"]
    );
    assert_eq!(c.warnings.len(), 1);
    assert!(
        c.warnings[0].contains(
            "alwaysCheckAllPredicates: true has no KubeSchedulerConfiguration equivalent"
        )
    );
    let e = &c.config.extenders[0];
    assert_eq!(e.http_timeout.as_deref(), Some("30s"));
    assert!(e.enable_https && e.ignorable && e.tls_config.as_ref().unwrap().insecure);
    let yaml = c.to_yaml();
    assert!(yaml.contains("enableHTTPS: true"), "{yaml}");
    assert!(!yaml.contains("enableHttps"), "{yaml}");
    // Without the priority, the weight has nothing to configure (v1.22 sets it through the
    // InterPodAffinityPriority producer only).
    let no_score = text.replace(r#"{"name":"InterPodAffinityPriority","weight":1}"#, "");
    assert!(no_score.contains(r#""priorities":[]"#));
    let c = convert(&no_score, &ON, ConfigVersion::V1beta2);
    assert!(args(&c, "InterPodAffinity").is_none());
}

#[test]
fn version_names() {
    assert_eq!(
        "v1beta3".parse::<ConfigVersion>(),
        Ok(ConfigVersion::V1beta3)
    );
    assert_eq!(
        "kubescheduler.config.k8s.io/v1".parse::<ConfigVersion>(),
        Ok(ConfigVersion::V1)
    );
    assert!(
        "v1beta1"
            .parse::<ConfigVersion>()
            .unwrap_err()
            .contains("want v1beta2, v1beta3 or v1")
    );
    assert!(ConfigVersion::V1beta2 < ConfigVersion::V1);
}
