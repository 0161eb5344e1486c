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

// ---------------------------------------------------------------- reading configurations

fn load_err(text: &str) -> String {
    parse_config("c.yaml", text).unwrap_err().to_string()
}

const V1BETA2: &str =
    "apiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\n";
const V1: &str = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn plugin_names(p: &ConfigProfile) -> (Vec<&str>, Vec<(&str, i64)>) {
    (
        p.resolved.filters.iter().map(|f| f.plugin).collect(),
        p.resolved
            .scores
            .iter()
            .map(|s| (s.plugin, s.weight))
            .collect(),
    )
}

/// An empty v1beta2 file: one default-scheduler profile with v1.22's default plugins.
#[test]
fn defaults_of_an_empty_file() {
    let c = parse_config("c.yaml", V1BETA2).unwrap();
    assert_eq!(c.version, ConfigVersion::V1beta2);
    assert_eq!(c.profiles.len(), 1);
    let p = &c.profiles[0];
    assert_eq!(p.scheduler_name, "default-scheduler");
    let (filters, scores) = plugin_names(p);
    assert_eq!(
        filters,
        [
            "NodeUnschedulable",
            "NodeName",
            "TaintToleration",
            "NodeAffinity",
            "NodePorts",
            "NodeResourcesFit",
            "VolumeRestrictions",
            "EBSLimits",
            "GCEPDLimits",
            "NodeVolumeLimits",
            "AzureDiskLimits",
            "VolumeBinding",
            "VolumeZone",
            "PodTopologySpread",
            "InterPodAffinity"
        ]
    );
    assert_eq!(
        scores,
        [
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
            ("InterPodAffinity", 1),
            ("NodeResourcesLeastAllocated", 1),
            ("NodeAffinity", 1),
            ("PodTopologySpread", 2),
            ("TaintToleration", 1)
        ]
    );
    assert_eq!(
        p.resolved
            .args
            .pod_topology_spread
            .as_ref()
            .map(|a| a.defaulting_type),
        Some(crate::policy::DefaultingType::System)
    );
    assert_eq!(c.percentage_of_nodes_to_score, 0);
    assert_eq!(
        (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds),
        (1, 10)
    );
    assert!(c.leader_election.leader_elect);
    assert_eq!(c.leader_election.lease_duration, 15_000_000_000);
    assert_eq!(c.leader_election.resource_name, "kube-scheduler");
    assert_eq!(c.client_connection.qps, 50.0);
    assert_eq!(c.client_connection.burst, 100);
    // v1: multiPoint defaults with v1beta3's weights, without the cloud volume limits.
    let c = parse_config("c.yaml", V1).unwrap();
    let (filters, scores) = plugin_names(&c.profiles[0]);
    assert!(!filters.contains(&"EBSLimits") && filters.contains(&"NodeVolumeLimits"));
    assert!(scores.contains(&("TaintToleration", 3)));
    assert!(scores.contains(&("NodeAffinity", 2)));
    assert!(scores.contains(&("InterPodAffinity", 2)));
    assert!(
        c.warnings.iter().any(|w| w.contains("SchedulingGates")),
        "{:?}",
        c.warnings
    );
}

/// Merging: a default enabled again is replaced in place with its new weight, other enabled
/// plugins follow; `*` drops every default; multiPoint expansion with an explicit override.
#[test]
fn plugins_merge_like_kube_scheduler() {
    let c = parse_config(
        "c.yaml",
        &format!(
            "{V1BETA2}profiles:\n- schedulerName: s\n  plugins:\n    score:\n      enabled:\n      - {{name: ImageLocality, weight: 5}}\n      - {{name: SelectorSpread, weight: 3}}\n      disabled:\n      - {{name: NodeAffinity}}\n    preScore:\n      enabled: [{{name: SelectorSpread}}]\n      disabled: [{{name: NodeAffinity}}]\n"
        ),
    )
    .unwrap();
    let (_, scores) = plugin_names(&c.profiles[0]);
    assert_eq!(
        scores,
        [
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 5),
            ("InterPodAffinity", 1),
            ("NodeResourcesLeastAllocated", 1),
            ("PodTopologySpread", 2),
            ("TaintToleration", 1),
            ("SelectorSpread", 3)
        ]
    );
    let c = parse_config(
        "c.yaml",
        &format!(
            "{V1}profiles:\n- plugins:\n    multiPoint:\n      disabled: [{{name: SchedulingGates}}]\n    score:\n      enabled: [{{name: ImageLocality, weight: 7}}]\n      disabled: [{{name: NodeResourcesBalancedAllocation}}]\n"
        ),
    )
    .unwrap();
    let (_, scores) = plugin_names(&c.profiles[0]);
    // Overrides first, then multiPoint-only plugins in their order.
    assert_eq!(
        scores,
        [
            ("ImageLocality", 7),
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesLeastAllocated", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2)
        ]
    );
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

/// Strict decoding: file:line:column, field path, did-you-mean; fields of another version.
#[test]
fn decoding_is_strict_and_located() {
    assert_eq!(
        load_err(&format!("{V1BETA2}percentageOfNodeToScore: 50\n")),
        "c.yaml:3:1: invalid configuration: unknown field `percentageOfNodeToScore`, expected one of \
         `apiVersion`, `kind`, `parallelism`, `leaderElection`, `clientConnection`, `healthzBindAddress`, \
         `metricsBindAddress`, `enableProfiling`, `enableContentionProfiling`, `percentageOfNodesToScore`, \
         `podInitialBackoffSeconds`, `podMaxBackoffSeconds`, `profiles`, `extenders`, `delayCacheUntilActive`; \
         did you mean `percentageOfNodesToScore`?"
    );
    let e = load_err(&format!(
        "{V1BETA2}profiles:\n- schedulerName: s\n  plugins:\n    filter:\n      enabeld: []\n"
    ));
    assert!(
        e.starts_with(
            "c.yaml:7:7: invalid configuration: profiles[0].plugins.filter: unknown field `enabeld`"
        ),
        "{e}"
    );
    assert!(e.ends_with("did you mean `enabled`?"), "{e}");
    let e = parse_config(
        "c.json",
        r#"{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"KubeSchedulerConfiguration",
            "profiles":[{"schedulerName":"s","pluginConfig":[{"name":"InterPodAffinity","args":{"hardPodAffinityWeigth":3}}]}]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(
            "c.json:2:97: profiles[0].pluginConfig[0].args: unknown field `hardPodAffinityWeigth`"
        ),
        "{e}"
    );
    assert!(e.ends_with("did you mean `hardPodAffinityWeight`?"), "{e}");
    let e = load_err(&format!(
        "{V1BETA2}profiles:\n- schedulerName: s\n  plugins:\n    multiPoint: {{}}\n"
    ));
    assert!(e.contains("profiles[0].plugins.multiPoint: unknown field `multiPoint` in kubescheduler.config.k8s.io/v1beta2 (only in v1beta3 and v1)"), "{e}");
    let e = load_err(&format!("{V1}healthzBindAddress: 0.0.0.0:10251\n"));
    assert!(e.contains("only in v1beta2"), "{e}");
    assert!(
        load_err(
            "apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\n"
        )
        .contains("v1beta1 was removed in kube-scheduler v1.23")
    );
    assert!(load_err("apiVersion: v1\nkind: Policy\n").contains("this is a legacy Policy"));
    let e = load_err(&format!(
        "{V1BETA2}profiles:\n- schedulerName: a\n  schedulerName: b\n"
    ));
    assert!(e.contains("duplicate"), "{e}");
}

/// `ValidateKubeSchedulerConfiguration`'s texts, all errors at once with their locations.
#[test]
fn validation_reports_every_error() {
    let e = load_err(&format!(
        "{V1BETA2}parallelism: 0\npercentageOfNodesToScore: 101\npodInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n\
         profiles:\n- schedulerName: a\n- schedulerName: a\n- {{}}\n\
         extenders:\n- {{urlPrefix: 'http://e', prioritizeVerb: p}}\n- {{urlPrefix: 'http://f', bindVerb: b}}\n- {{urlPrefix: 'http://g', bindVerb: b}}\n"
    ));
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            "c.yaml:3:14: parallelism: Invalid value: 0: should be an integer value greater than zero",
            "c.yaml:4:27: percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
            "c.yaml:6:23: podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds",
            "c.yaml:12:3: extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
            "c.yaml:12:1: extenders: Invalid value: \"found 2 extenders implementing bind\": only one extender can implement bind",
            "c.yaml:9:18: profiles[1].schedulerName: Duplicate value: \"profiles[0].schedulerName\"",
            "c.yaml:10:3: profiles[2].schedulerName: Required value",
        ],
        "{e}"
    );
}

/// Plugins: unknown (did-you-mean), removed in the version, half-configured, args checked.
#[test]
fn plugin_errors_name_the_plugin() {
    let profile =
        |plugins: &str| format!("{V1BETA2}profiles:\n- schedulerName: s\n  plugins:\n{plugins}");
    let e = load_err(&profile("    filter:\n      enabled: [{name: NodePort}]\n"));
    assert!(e.starts_with("c.yaml:7:17: profiles[0].plugins.filter.enabled[0]: plugin \"NodePort\" does not exist; did you mean \"NodePorts\"?"), "{e}");
    let e = load_err(&profile(
        "    filter:\n      enabled: [{name: NodeLabel}]\n",
    ));
    assert!(e.contains("Invalid value: \"NodeLabel\": was removed in version \"kubescheduler.config.k8s.io/v1beta2\" (KubeSchedulerConfiguration is version \"kubescheduler.config.k8s.io/v1beta2\")"), "{e}");
    let e = load_err(&profile(
        "    score:\n      enabled: [{name: NodeResourcesMostAllocated}]\n",
    ));
    assert!(
        e.contains("use NodeResourcesFit with pluginConfig scoringStrategy.type MostAllocated"),
        "{e}"
    );
    let e = load_err(&profile(
        "    preFilter:\n      disabled: [{name: InterPodAffinity}]\n",
    ));
    assert!(
        e.contains(
            "profiles[0].plugins.filter: InterPodAffinity runs at filter but not at preFilter"
        ),
        "{e}"
    );
    let e = load_err(&profile("    reserve:\n      disabled: [{name: '*'}]\n"));
    assert!(
        e.contains("VolumeBinding must run at preFilter, filter, reserve and preBind together"),
        "{e}"
    );
    let e = load_err(&profile(
        "    queueSort:\n      enabled: [{name: PrioritySort}]\n      disabled: [{name: '*'}]\n    bind:\n      disabled: [{name: '*'}]\n",
    ));
    assert!(
        e.contains("at least one bind plugin is needed for profile with scheduler name \"s\""),
        "{e}"
    );
    let e = load_err(&profile("    score:\n      enabled: [{name: NodeName}]\n"));
    assert!(
        e.contains("plugin \"NodeName\" does not extend score plugin"),
        "{e}"
    );
    let e = load_err(&format!(
        "{V1}profiles:\n- schedulerName: s\n  plugins:\n    filter:\n      enabled: [{{name: SelectorSpread}}]\n"
    ));
    assert!(
        e.contains("\"SelectorSpread\": was removed in version \"kubescheduler.config.k8s.io/v1\""),
        "{e}"
    );
    let args = |a: &str| format!("{V1BETA2}profiles:\n- schedulerName: s\n  pluginConfig:\n{a}");
    let e = load_err(&args(
        "  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n",
    ));
    assert!(
        e.contains("must be specified when type is RequestedToCapacityRatio"),
        "{e}"
    );
    let e = load_err(&args(
        "  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 101}]}}\n",
    ));
    assert!(
        e.contains("resource weight of cpu not in valid range (0, 100]"),
        "{e}"
    );
    let e = load_err(&args(
        "  - name: InterPodAffinity\n    args: {hardPodAffinityWeight: 101}\n  - name: InterPodAffinity\n",
    ));
    assert!(
        e.contains("hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"),
        "{e}"
    );
    assert!(
        e.contains("profiles[0].pluginConfig[1]: Duplicate value: \"InterPodAffinity\""),
        "{e}"
    );
    let e = load_err(&args(
        "  - name: NodeAffinity\n    args: {addedAffinity: {}}\n",
    ));
    assert!(e.contains("addedAffinity is not supported yet"), "{e}");
    let e = load_err(&args("  - name: Foo\n    args: {}\n"));
    assert!(e.contains("plugin \"Foo\" does not exist"), "{e}");
    // Arguments that work: RequestedToCapacityRatio with defaulted resources; kind is allowed.
    let c = parse_config("c.yaml", &args(
        "  - name: NodeResourcesFit\n    args:\n      kind: NodeResourcesFitArgs\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n        requestedToCapacityRatio:\n          shape: [{utilization: 0, score: 10}, {utilization: 100, score: 0}]\n  - name: PodTopologySpread\n    args: {defaultingType: List}\n",
    ))
    .unwrap();
    let r = &c.profiles[0].resolved;
    assert!(
        r.scores
            .iter()
            .any(|s| s.plugin == "RequestedToCapacityRatio"
                && s.legacy_names == ["NodeResourcesFit"])
    );
    let rtcr = r.args.requested_to_capacity_ratio.as_ref().unwrap();
    assert_eq!(rtcr.resources.len(), 2);
    assert_eq!(rtcr.shape[0].score, 10);
    assert_eq!(
        r.args
            .pod_topology_spread
            .as_ref()
            .map(|a| a.defaulting_type),
        Some(crate::policy::DefaultingType::List)
    );
}

/// Extenders: case-sensitive keys, duration timeouts.
#[test]
fn extenders_are_read() {
    let c = parse_config(
        "c.yaml",
        &format!("{V1}extenders:\n- urlPrefix: http://e:1/x\n  filterVerb: f\n  enableHTTPS: true\n  httpTimeout: 1m30s\n  managedResources: [{{name: example.com/gpu, ignoredByScheduler: true}}]\n"),
    )
    .unwrap();
    let e = &c.profiles[0].resolved.extenders[0];
    assert_eq!(e.http_timeout, 90_000_000_000);
    assert!(e.enable_https);
    let e = load_err(&format!(
        "{V1}extenders:\n- urlPrefix: http://e\n  enableHttps: true\n"
    ));
    assert!(
        e.contains("unknown field `enableHttps`") && e.contains("did you mean `enableHTTPS`?"),
        "{e}"
    );
    let e = load_err(&format!(
        "{V1}extenders:\n- urlPrefix: http://e\n  httpTimeout: 5\n"
    ));
    assert!(
        e.contains(
            "extenders[0].httpTimeout: Invalid value: \"5\": time: missing unit in duration \"5\""
        ),
        "{e}"
    );
    let e = load_err(&format!(
        "{V1}extenders:\n- urlPrefix: http://e\n  managedResources: [{{name: cpu}}]\n"
    ));
    assert!(
        e.contains("must be a fully-qualified extended resource name"),
        "{e}"
    );
}
