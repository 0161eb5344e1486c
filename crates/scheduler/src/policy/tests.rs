//! Loader tests: shipped policy, seed sample, fixtures under `config/policies/{pass,fail}`, and
//! cases transcribed from kube-scheduler's own tests (kubernetes/kubernetes
//! `pkg/scheduler/apis/config/testing/compatibility_test.go` @05c351a9037bd79bf88c56171a951c3097b658da
//! and `policy_test.go` @effb98eaa665a33b16634ab968c91644b99d1ba7).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use super::*;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(rel: &str) -> PathBuf {
    repo_root().join("config/policies").join(rel)
}

fn load(rel: &str) -> Result<LoadedPolicy, PolicyError> {
    let path = fixture(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    parse_policy(&format!("config/policies/{rel}"), &text)
}

fn err(rel: &str) -> String {
    load(rel).unwrap_err().to_string()
}

fn filters(r: &ResolvedPolicy) -> Vec<&'static str> {
    r.filters.iter().map(|f| f.plugin).collect()
}

fn scores(r: &ResolvedPolicy) -> Vec<(&'static str, i64)> {
    r.scores.iter().map(|s| (s.plugin, s.weight)).collect()
}

const EQUAL_NOTE: &str = "EqualPriority: skipped (kube-scheduler v1.18+ registers no plugin; every node would score equally)";

/// The sample policy's expected resolution (shipped file, YAML variant, seed sample).
fn assert_sample_resolution(r: &ResolvedPolicy) {
    // predicateOrdering: CheckNodeUnschedulable, HostName, PodFitsHostPorts, MatchNodeSelector,
    // PodFitsResources, NoDiskConflict, PodToleratesNodeTaints (legacy_registry.go v1.22).
    assert_eq!(
        filters(r),
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
    // AppendPriorityConfigs: sorted keys BalancedResourceAllocation, LeastRequestedPriority,
    // SelectorSpreadPriority.
    assert_eq!(
        scores(r),
        [
            ("NodeResourcesBalancedAllocation", 1),
            ("NodeResourcesLeastAllocated", 1),
            ("SelectorSpread", 1)
        ]
    );
    assert_eq!(r.scores[2].legacy_names, ["ServiceSpreadingPriority"]);
    assert_eq!(r.filters[2].legacy_names, ["PodFitsPorts"]);
    assert!(r.notes.iter().any(|n| n == EQUAL_NOTE), "{:?}", r.notes);
    assert!(!r.always_check_all_predicates);
    assert_eq!(r.hard_pod_affinity_symmetric_weight, 1);
}

#[test]
fn shipped_policy_loads() {
    let loaded = load_policy_file(&repo_root().join("config/policy-config-file.json")).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_sample_resolution(&loaded.resolved);
    let shown = loaded.resolved.to_string();
    assert!(shown.contains("NodeResourcesLeastAllocated"), "{shown}");
    assert!(shown.contains(EQUAL_NOTE), "{shown}");
    assert!(
        shown.find("NodeUnschedulable") < shown.find("TaintToleration"),
        "{shown}"
    );
}

#[test]
fn yaml_variant_resolves_like_json() {
    let loaded = load("pass/sample.yaml").unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_sample_resolution(&loaded.resolved);
}

#[test]
fn seed_sample_loads_with_singular_key_warning() {
    let embedded = load("pass/seed-singular-predicate.json").unwrap();
    assert_sample_resolution(&embedded.resolved);
    assert_eq!(embedded.warnings.len(), 1, "{:?}", embedded.warnings);
    assert_eq!(
        embedded.warnings[0],
        "config/policies/pass/seed-singular-predicate.json:4:2: key \"predicate\" is not a Policy \
         field; treating it as \"predicates\" (kube-scheduler v1.18+ rejects this file; rename the key)"
    );
    // The same file read from disk (the product's old sample, kept byte-for-byte as this fixture).
    let loaded = load_policy_file(&fixture("pass/seed-singular-predicate.json")).unwrap();
    assert_sample_resolution(&loaded.resolved);
    assert!(loaded.warnings[0].contains(":4:2: key \"predicate\" is not a Policy field"));
    assert_eq!(loaded.policy, embedded.policy);
}

#[test]
fn both_predicate_keys_is_an_error() {
    assert_eq!(
        err("fail/both-predicate-keys.json"),
        "config/policies/fail/both-predicate-keys.json:5:3: invalid policy: both \"predicates\" and \
         \"predicate\" are set; \"predicate\" is not a Policy field (kube-scheduler v1.18+ rejects \
         it): delete it and keep \"predicates\""
    );
}

#[test]
fn unknown_predicate_names_nearest_and_valid_names() {
    let e = err("fail/unknown-predicate.json");
    assert_eq!(
        e,
        "config/policies/fail/unknown-predicate.json:7:14: unknown predicate \"PodFitsPort\" at \
         predicates[2].name (kube-scheduler v1.22: predicate type not found for \"PodFitsPort\"); \
         did you mean \"PodFitsPorts\"? valid predicates: CheckNodeUnschedulable, \
         GeneralPredicates, HostName, PodFitsHostPorts, PodFitsPorts, MatchNodeSelector, \
         PodFitsResources, NoDiskConflict, PodToleratesNodeTaints, CheckNodeLabelPresence, \
         CheckServiceAffinity, MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxCSIVolumeCountPred, \
         MaxAzureDiskVolumeCount, MaxCinderVolumeCount, CheckVolumeBinding, NoVolumeZoneConflict, \
         EvenPodsSpread, MatchInterPodAffinity"
    );
}

#[test]
fn unknown_priority_in_yaml() {
    let e = err("fail/unknown-priority.yaml");
    assert!(
        e.starts_with(
            "config/policies/fail/unknown-priority.yaml:6:11: unknown priority \"LeastRequestPriority\" at priorities[1].name \
             (kube-scheduler v1.22: priority type not found for \"LeastRequestPriority\"); did you mean \"LeastRequestedPriority\"? valid priorities:"
        ),
        "{e}"
    );
    assert!(
        e.ends_with(
            "? valid priorities: BalancedResourceAllocation, BestFitPriority, DotProductPriority, \
             EvenPodsSpreadPriority, GpuClusteringPriority, GpuFragmentationCpuPackingPriority, \
             GpuFragmentationFinePriority, GpuFragmentationInstancesPriority, \
             GpuFragmentationPriority, \
             GpuFragmentationStrandingPriority, GpuPackingPriority, ImageLocalityPriority, \
             InterPodAffinityPriority, LeastRequestedPriority, \
             MostRequestedPriority, NodeAffinityPriority, NodeLabel, NodePreferAvoidPodsPriority, \
             RequestedToCapacityRatio, SelectorSpreadPriority, ServiceSpreadingPriority, ServiceAffinity, \
             TaintTolerationPriority, EqualPriority"
        ),
        "{e}"
    );
}

#[test]
fn zero_and_negative_weights_use_v1_22_text() {
    assert_eq!(
        err("fail/zero-weight.json"),
        "config/policies/fail/zero-weight.json:5:50: priority LeastRequestedPriority should have a \
         positive weight applied to it or it has overflown"
    );
    assert_eq!(
        err("fail/negative-weight.yaml"),
        "config/policies/fail/negative-weight.yaml:5:13: priority BalancedResourceAllocation should \
         have a positive weight applied to it or it has overflown"
    );
    // weight == MaxWeight (math.MaxInt64 / 10) is rejected; MaxWeight - 1 is accepted.
    assert!(err("fail/weight-overflow.json").ends_with("it has overflown"));
    let ok = parse_policy(
        "p.json",
        &format!(
            r#"{{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[{{"name":"LeastRequestedPriority","weight":{}}}]}}"#,
            MAX_WEIGHT - 1
        ),
    )
    .unwrap();
    assert_eq!(ok.resolved.scores[0].weight, MAX_WEIGHT - 1);
}

#[test]
fn missing_weight_is_zero_and_rejected() {
    let e = parse_policy(
        "p.yaml",
        "kind: Policy\napiVersion: v1\npriorities:\n- name: EqualPriority\n",
    )
    .unwrap_err()
    .to_string();
    // No weight key: located at the entry.
    assert_eq!(
        e,
        "p.yaml:4:3: priority EqualPriority should have a positive weight applied to it or it has overflown"
    );
}

#[test]
fn validation_reports_every_failure() {
    let e = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1",
"priorities":[{"name":"A","weight":0},{"name":"B","weight":-5}],
"hardPodAffinitySymmetricWeight":-1}"#,
    )
    .unwrap_err();
    let PolicyError::Validate { errors } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(errors.len(), 3);
    assert_eq!(
        e.to_string(),
        "p.json:2:36: priority A should have a positive weight applied to it or it has overflown\n\
         p.json:2:60: priority B should have a positive weight applied to it or it has overflown\n\
         p.json:3:34: hardPodAffinitySymmetricWeight: Invalid value: -1: not in valid range [0-100]"
    );
}

#[test]
fn hard_pod_affinity_symmetric_weight_range() {
    assert_eq!(
        err("fail/hard-pod-affinity-out-of-range.json"),
        "config/policies/fail/hard-pod-affinity-out-of-range.json:4:37: \
         hardPodAffinitySymmetricWeight: Invalid value: 101: not in valid range [0-100]"
    );
}

#[test]
fn unknown_top_level_key_is_located() {
    let e = err("fail/unknown-top-level-key.json");
    assert_eq!(
        e,
        "config/policies/fail/unknown-top-level-key.json:5:3: invalid policy: prioritys: unknown \
         field `prioritys`, expected one of `kind`, `apiVersion`, `predicates`, `priorities`, \
         `extenders`, `hardPodAffinitySymmetricWeight`, `alwaysCheckAllPredicates`"
    );
    let y = parse_policy(
        "p.yaml",
        "kind: Policy\napiVersion: v1\npredicates:\n- name: HostName\n  wieght: 3\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        y.starts_with("p.yaml:5:3: invalid policy: predicates[0]: unknown field `wieght`, expected `name` or `argument`"),
        "{y}"
    );
}

#[test]
fn keys_are_case_sensitive() {
    let e = err("fail/case-mismatch.json");
    assert!(
        e.starts_with("config/policies/fail/case-mismatch.json:4:3: invalid policy: Predicates: unknown field `Predicates`"),
        "{e}"
    );
}

#[test]
fn duplicate_keys_are_errors() {
    assert_eq!(
        err("fail/duplicate-key.json"),
        "config/policies/fail/duplicate-key.json:5:53: invalid policy: priorities[0].weight: \
         duplicate field `weight`"
    );
    assert_eq!(
        err("fail/duplicate-key.yaml"),
        "config/policies/fail/duplicate-key.yaml:4:1: invalid policy: duplicate field `priorities`"
    );
    // The singular alias does not hide a duplicate of itself.
    let e = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","predicate":[],"predicate":[]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("duplicate field `predicate`"), "{e}");
}

#[test]
fn type_errors_name_the_field() {
    let e = parse_policy(
        "p.json",
        "{\"kind\":\"Policy\",\"apiVersion\":\"v1\",\n\"priorities\":[{\"name\":\"X\",\"weight\":\"1\"}]}",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "p.json:2:36: invalid policy: priorities[0].weight: invalid type: string \"1\", expected i64"
    );
    let e = parse_policy(
        "p.yaml",
        "kind: Policy\napiVersion: v1\npriorities:\n- name: X\n  weight: 1.5\n",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "p.yaml:5:11: invalid policy: priorities[0].weight: invalid type: floating point `1.5`, expected i64"
    );
}

#[test]
fn syntax_errors_carry_line_and_column() {
    let e = err("fail/syntax-error.json");
    assert!(
        e.starts_with(
            "config/policies/fail/syntax-error.json:4:39: invalid policy: trailing comma"
        ),
        "{e}"
    );
}

#[test]
fn kind_and_api_version_are_checked() {
    let e = err("fail/wrong-kind.json");
    assert!(
        e.starts_with(
            "config/policies/fail/wrong-kind.json:2:11: invalid policy: this is a \
             KubeSchedulerConfiguration, not a Policy: kube-scheduler reads it with --config"
        ),
        "{e}"
    );
    let e = parse_policy("p.json", r#"{"kind": "Policies", "apiVersion": "v1"}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "p.json:1:10: invalid policy: kind: no kind \"Policies\" is registered for version \
         \"v1\" (want \"Policy\")"
    );
    // The type is named before the fields it does not know (v1.22 resolves the kind first).
    let e = parse_policy(
        "p.yaml",
        "kind: Pod\napiVersion: v1\nspec:\n  containers: []\n",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "p.yaml:1:7: invalid policy: kind: no kind \"Pod\" is registered for version \"v1\" \
         (want \"Policy\")"
    );
    // policy_test.go "unknown version throws a parsing error".
    let e = err("fail/wrong-api-version.yaml");
    assert!(
        e.starts_with(
            "config/policies/fail/wrong-api-version.yaml:1:13: invalid policy: apiVersion: no kind \"Policy\" is registered for version \"kubescheduler.config.k8s.io/vunknown\""
        ),
        "{e}"
    );
    let e = parse_policy("p.json", r#"{"kind":"Policy"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("p.json:1:1: invalid policy: Object 'apiVersion' is missing"),
        "{e}"
    );
    let e = parse_policy("p.yaml", "apiVersion: v1\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("Object 'Kind' is missing"), "{e}");
    let e = parse_policy("p.yaml", "").unwrap_err().to_string();
    assert!(e.contains("Object 'apiVersion' is missing"), "{e}");
    let e = parse_policy("p.yaml", "kind: policy\napiVersion: v1\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no kind \"policy\""), "{e}");
}

#[test]
fn policy_test_go_api_versions_decode() {
    // policy_test.go TestSchedulerPolicy: "legacy v1" and "v1" decode to the same Policy with one
    // extender; "unknown version" fails.
    let template = |v: &str| {
        format!(
            "\napiVersion: {v}\nkind: Policy\nextenders:\n- urlPrefix: http://localhost:8888/\n  filterVerb: filter\n  prioritizeVerb: prioritize\n  weight: 1\n  enableHttps: false\n"
        )
    };
    let expected = LegacyExtender {
        url_prefix: "http://localhost:8888/".into(),
        filter_verb: "filter".into(),
        prioritize_verb: "prioritize".into(),
        weight: 1,
        ..LegacyExtender::default()
    };
    for v in ["v1", "kubescheduler.config.k8s.io/v1"] {
        let (policy, warnings) = decode_policy("p.yaml", &template(v)).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(policy.extenders, std::slice::from_ref(&expected));
        assert_eq!(policy.predicates, None);
        assert_eq!(policy.priorities, None);
    }
    assert!(decode_policy("p.yaml", &template("kubescheduler.config.k8s.io/vunknown")).is_err());
}

#[test]
fn extenders_are_passed_on() {
    // Formerly refused as "not supported yet"; the extenders reach the resolved policy as written.
    let r = load("pass/extenders.yaml").unwrap().resolved;
    assert_eq!(r.extenders.len(), 1);
    assert_eq!(r.extenders[0].url_prefix, "http://localhost:8888/");
    assert_eq!(r.extenders[0].filter_verb, "filter");
    assert_eq!(r.extenders[0].prioritize_verb, "prioritize");
    assert_eq!(r.extenders[0].weight, 1);
    assert!(
        r.to_string()
            .contains("extenders (in policy order; ignorable ones are called last):\n   1. http://localhost:8888/  filter=filter prioritize=prioritize  weight=1"),
        "{r}"
    );
}

/// `preemptVerb` is used (DefaultPreemption calls it): no note, and the summary lists it.
#[test]
fn extender_preempt_verb_is_used() {
    let r = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","extenders":[{"urlPrefix":"http://e","preemptVerb":"preempt"}]}"#,
    )
    .unwrap()
    .resolved;
    assert!(
        !r.notes.iter().any(|n| n.contains("preemptVerb")),
        "{:?}",
        r.notes
    );
    assert!(r.to_string().contains("preempt=preempt"), "{r}");
}

#[test]
fn extender_validation_texts() {
    let e = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","extenders":[
{"urlPrefix":"a","prioritizeVerb":"p","weight":0,"bindVerb":"b","managedResources":[{"name":"cpu"},{"name":"example.com/x"},{"name":"example.com/x"}]},
{"urlPrefix":"b","BindVerb":"b"}]}"#,
    )
    .unwrap_err()
    .to_string();
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            "p.json:2:48: extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
            "p.json:2:93: extenders[0].managedResources[0].name: Invalid value: \"cpu\": is an invalid extended resource name",
            "p.json:2:133: extenders[0].managedResources[2].name: Invalid value: \"example.com/x\": duplicate extender managed resource name",
            "p.json:1:48: extenders: Invalid value: \"found 2 extenders implementing bind\": only one extender can implement bind",
        ]
    );
}

#[test]
fn custom_priority_validation_texts() {
    // validation.go validateCustomPriorities.
    let e = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","priorities":[
{"name":"L1","weight":1,"argument":{"labelPreference":{"label":"a","presence":true}}},
{"name":"L2","weight":2,"argument":{"labelPreference":{"label":"b","presence":true}}},
{"name":"R1","weight":1,"argument":{"requestedToCapacityRatioArguments":{"shape":[]}}},
{"name":"R2","weight":1,"argument":{"requestedToCapacityRatioArguments":{"shape":[]}}},
{"name":"E","weight":1,"argument":{}}]}"#,
    )
    .unwrap_err()
    .to_string();
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            "p.json:3:36: LabelPreference  priority \"L2\" has a different weight with \"L1\"",
            "p.json:5:36: priority \"R2\" redeclares custom priority \"RequestedToCapacityRatio\", from: \"R1\"",
            "p.json:6:35: no priority arguments set for priority E",
        ]
    );
}

#[test]
fn argument_count_must_be_one() {
    assert_eq!(
        err("fail/two-arguments.json"),
        "config/policies/fail/two-arguments.json:5:36: exactly 1 predicate argument is required, numArgs: 2, predicate Custom"
    );
    let e = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","priorities":[{"name":"X","weight":1,"argument":{"labelPreference":{"label":"a"},"serviceAntiAffinity":{"label":"b"}}}]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.ends_with("exactly 1 priority argument is required, numArgs: 2, priority X"),
        "{e}"
    );
}

#[test]
fn null_versus_empty_predicates_and_priorities() {
    // compatibility_test.go case "MandatoryFilters": [] → only the mandatory predicates.
    let empty = load("pass/mandatory-filters.json").unwrap();
    assert_eq!(
        filters(&empty.resolved),
        ["NodeUnschedulable", "TaintToleration"]
    );
    assert!(empty.resolved.scores.is_empty());
    assert!(empty.warnings.is_empty(), "{:?}", empty.warnings);
    assert!(
        empty
            .resolved
            .notes
            .iter()
            .any(|n| n.starts_with("CheckNodeUnschedulable: added"))
    );

    // null → DefaultPredicates / DefaultPriorities: the full v1.22 set when resolved
    // (factory_test.go "policy with unspecified predicates or priorities uses default", with
    // SelectorSpreadPriority → SelectorSpread as DefaultPodTopologySpread off gives), ...
    let text = std::fs::read_to_string(fixture("pass/defaults-null.json")).unwrap();
    let full = parse_policy("config/policies/pass/defaults-null.json", &text).unwrap();
    let all_filters = [
        "NodeUnschedulable",
        "NodeResourcesFit",
        "NodeName",
        "NodePorts",
        "NodeAffinity",
        "VolumeRestrictions",
        "TaintToleration",
        "EBSLimits",
        "GCEPDLimits",
        "NodeVolumeLimits",
        "AzureDiskLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ];
    let all_scores = [
        ("NodeResourcesBalancedAllocation", 1),
        ("PodTopologySpread", 2),
        ("ImageLocality", 1),
        ("InterPodAffinity", 1),
        ("NodeResourcesLeastAllocated", 1),
        ("NodeAffinity", 1),
        ("NodePreferAvoidPods", 10000),
        ("SelectorSpread", 1),
        ("TaintToleration", 1),
    ];
    assert_eq!(filters(&full.resolved), all_filters);
    assert_eq!(scores(&full.resolved), all_scores);
    assert!(full.warnings.is_empty(), "{:?}", full.warnings);

    // ... and that is what loading the file gives: every default plugin is implemented.
    let null = load("pass/defaults-null.json").unwrap();
    assert_eq!(null.resolved, full.resolved);
    assert!(null.warnings.is_empty(), "{:?}", null.warnings);

    // Absent keys behave like null.
    let absent = load("pass/defaults-absent.yaml").unwrap();
    assert_eq!(absent.resolved.filters, null.resolved.filters);
    assert_eq!(absent.resolved.scores, null.resolved.scores);
    assert!(absent.warnings.is_empty(), "{:?}", absent.warnings);
    assert_eq!(absent.policy.predicates, None);
}

#[test]
fn general_predicates_expand_in_order() {
    // compatibility_test.go case "GeneralPredicate".
    let loaded = load("pass/general-predicates.json").unwrap();
    assert_eq!(
        filters(&loaded.resolved),
        [
            "NodeUnschedulable",
            "NodeResourcesFit",
            "NodeName",
            "NodePorts",
            "NodeAffinity",
            "TaintToleration"
        ]
    );
    assert!(loaded.resolved.scores.is_empty());
    // A part listed again keeps GeneralPredicates' position and records both names.
    let r = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"HostName"},{"name":"GeneralPredicates"},{"name":"PodFitsHostPorts"},{"name":"PodFitsPorts"}],"priorities":[]}"#,
    )
    .unwrap()
    .resolved;
    assert_eq!(
        filters(&r),
        [
            "NodeUnschedulable",
            "NodeResourcesFit",
            "NodeName",
            "NodePorts",
            "NodeAffinity",
            "TaintToleration"
        ]
    );
    assert_eq!(r.filters[2].legacy_names, ["GeneralPredicates", "HostName"]);
    assert_eq!(
        r.filters[3].legacy_names,
        ["GeneralPredicates", "PodFitsHostPorts", "PodFitsPorts"]
    );
}

#[test]
fn yaml_flow_style_and_other_options() {
    let loaded = load("pass/most-requested.yaml").unwrap();
    let r = &loaded.resolved;
    assert_eq!(
        filters(r),
        [
            "NodeUnschedulable",
            "NodeResourcesFit",
            "NodeName",
            "NodePorts",
            "NodeAffinity",
            "TaintToleration"
        ]
    );
    assert_eq!(
        r.filters[1].legacy_names,
        ["GeneralPredicates", "PodFitsResources"]
    );
    assert_eq!(
        scores(r),
        [("NodeResourcesMostAllocated", 2), ("SelectorSpread", 3)]
    );
    assert!(r.always_check_all_predicates);
    assert_eq!(r.hard_pod_affinity_symmetric_weight, 10);
    // Only InterPodAffinityPriority reads it, and this policy does not configure it: noted.
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("hardPodAffinitySymmetricWeight: 10 sets InterPodAffinityArgs"))
    );
    assert_eq!(r.args.inter_pod_affinity.hard_pod_affinity_weight, 10);
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("CheckNodeUnschedulable: added"))
    );
    assert!(
        !r.notes
            .iter()
            .any(|n| n.starts_with("PodToleratesNodeTaints: added"))
    );
}

#[test]
fn repeated_priority_follows_v1_22() {
    // factory.go createFromPolicy: priorityKeys[name] = weight → the last entry wins (an alias
    // resolves to the same key); the plugin appears once.
    let loaded = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[
{"name":"SelectorSpreadPriority","weight":5},
{"name":"ServiceSpreadingPriority","weight":2}]}"#,
    )
    .unwrap();
    assert_eq!(scores(&loaded.resolved), [("SelectorSpread", 2)]);
    assert_eq!(
        loaded.resolved.scores[0].legacy_names,
        ["SelectorSpreadPriority", "ServiceSpreadingPriority"]
    );
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0]
            .starts_with("p.json:3:45: priority SelectorSpreadPriority is listed twice"),
        "{}",
        loaded.warnings[0]
    );
    // Same weight twice: no warning.
    let same = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[
{"name":"LeastRequestedPriority","weight":3},{"name":"LeastRequestedPriority","weight":3}]}"#,
    )
    .unwrap();
    assert_eq!(scores(&same.resolved), [("NodeResourcesLeastAllocated", 3)]);
    assert!(same.warnings.is_empty());
}

/// The volume predicates resolve to their plugins (legacy_registry.go `predicateOrdering`
/// positions), and each plugin builds.
#[test]
fn volume_predicates_resolve() {
    let loaded = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[
{"name":"NoVolumeZoneConflict"},{"name":"CheckVolumeBinding"},{"name":"MaxCinderVolumeCount"},
{"name":"MaxAzureDiskVolumeCount"},{"name":"MaxCSIVolumeCountPred"},{"name":"MaxGCEPDVolumeCount"},
{"name":"MaxEBSVolumeCount"}],"priorities":[]}"#,
    )
    .unwrap();
    let filters: Vec<&str> = loaded.resolved.filters.iter().map(|f| f.plugin).collect();
    assert_eq!(
        filters,
        [
            "NodeUnschedulable",
            "TaintToleration",
            "EBSLimits",
            "GCEPDLimits",
            "NodeVolumeLimits",
            "AzureDiskLimits",
            "CinderLimits",
            "VolumeBinding",
            "VolumeZone"
        ]
    );
    let fwk = crate::framework::Framework::from_policy(&loaded.resolved).unwrap();
    let names: Vec<&str> = fwk.filters.iter().map(|f| f.name()).collect();
    assert_eq!(&names[..9], filters.as_slice());
}

/// Every v1.22 predicate and priority name loads, to its plugins. Names that need plugin
/// arguments fail, as in v1.22, when nothing in the policy gives them.
#[test]
fn every_v1_22_name_loads_with_its_plugins() {
    let predicates: &[(&str, &[&str])] = &[
        ("CheckNodeUnschedulable", &["NodeUnschedulable"]),
        (
            "GeneralPredicates",
            &["NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity"],
        ),
        ("HostName", &["NodeName"]),
        ("PodFitsHostPorts", &["NodePorts"]),
        ("PodFitsPorts", &["NodePorts"]),
        ("MatchNodeSelector", &["NodeAffinity"]),
        ("PodFitsResources", &["NodeResourcesFit"]),
        ("NoDiskConflict", &["VolumeRestrictions"]),
        ("PodToleratesNodeTaints", &["TaintToleration"]),
        ("CheckNodeLabelPresence", &["NodeLabel"]),
        ("CheckServiceAffinity", &["ServiceAffinity"]),
        ("MaxEBSVolumeCount", &["EBSLimits"]),
        ("MaxGCEPDVolumeCount", &["GCEPDLimits"]),
        ("MaxCSIVolumeCountPred", &["NodeVolumeLimits"]),
        ("MaxAzureDiskVolumeCount", &["AzureDiskLimits"]),
        ("MaxCinderVolumeCount", &["CinderLimits"]),
        ("CheckVolumeBinding", &["VolumeBinding"]),
        ("NoVolumeZoneConflict", &["VolumeZone"]),
        ("EvenPodsSpread", &["PodTopologySpread"]),
        ("MatchInterPodAffinity", &["InterPodAffinity"]),
    ];
    for (name, plugins) in predicates {
        let text = format!(
            r#"{{"kind":"Policy","apiVersion":"v1","predicates":[{{"name":"{name}"}}],"priorities":[]}}"#
        );
        let resolved = parse_policy("p.json", &text);
        match *name {
            // NodeLabel / ServiceAffinity without a labelsPresence / serviceAffinity argument
            // anywhere: v1.22's plugin New gets nil args.
            "CheckNodeLabelPresence" | "CheckServiceAffinity" => {
                let e = resolved.unwrap_err().to_string();
                assert!(
                    e.contains(&format!(
                        "want args to be of type {}Args, got <nil>",
                        plugins[0]
                    )),
                    "{e}"
                );
            }
            _ => {
                let r = resolved.unwrap_or_else(|e| panic!("{name}: {e}"));
                for p in *plugins {
                    assert!(r.resolved.filters.iter().any(|f| f.plugin == *p), "{name}");
                }
                crate::framework::Framework::from_policy(&r.resolved)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
    }
    let priorities: &[(&str, &str)] = &[
        (
            "BalancedResourceAllocation",
            "NodeResourcesBalancedAllocation",
        ),
        ("EvenPodsSpreadPriority", "PodTopologySpread"),
        ("ImageLocalityPriority", "ImageLocality"),
        ("InterPodAffinityPriority", "InterPodAffinity"),
        ("LeastRequestedPriority", "NodeResourcesLeastAllocated"),
        ("MostRequestedPriority", "NodeResourcesMostAllocated"),
        ("NodeAffinityPriority", "NodeAffinity"),
        ("NodePreferAvoidPodsPriority", "NodePreferAvoidPods"),
        ("SelectorSpreadPriority", "SelectorSpread"),
        ("ServiceSpreadingPriority", "SelectorSpread"),
        ("TaintTolerationPriority", "TaintToleration"),
        ("NodeLabel", "NodeLabel"),
        ("ServiceAffinity", "ServiceAffinity"),
        ("RequestedToCapacityRatio", "RequestedToCapacityRatio"),
    ];
    for (name, plugin) in priorities {
        let text = format!(
            r#"{{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[{{"name":"{name}","weight":3}}]}}"#
        );
        let resolved = parse_policy("p.json", &text);
        match *name {
            // v1.22 dereferences nil NodeLabelArgs / ServiceAffinityArgs in the producer.
            "NodeLabel" | "ServiceAffinity" => {
                let e = resolved.unwrap_err().to_string();
                assert!(
                    e.contains("kube-scheduler v1.22 crashes on this policy"),
                    "{e}"
                );
            }
            "RequestedToCapacityRatio" => {
                let e = resolved.unwrap_err().to_string();
                assert_eq!(
                    e,
                    "p.json:1:74: initializing plugin \"RequestedToCapacityRatio\": want args to be of type \
                     RequestedToCapacityRatioArgs, got <nil> (kube-scheduler v1.22 runs \
                     RequestedToCapacityRatio only with arguments from a custom predicate or priority)"
                );
            }
            _ => {
                let r = resolved.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(scores(&r.resolved), [(*plugin, 3)], "{name}");
                crate::framework::Framework::from_policy(&r.resolved)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
    }
    // Custom priorities with arguments resolve to their fixed plugins and load.
    for (arg, plugin) in [
        (
            r#"{"labelPreference":{"label":"a","presence":true}}"#,
            "NodeLabel",
        ),
        (
            r#"{"serviceAntiAffinity":{"label":"zone"}}"#,
            "ServiceAffinity",
        ),
        (
            r#"{"requestedToCapacityRatioArguments":{"shape":[{"utilization":0,"score":0},{"utilization":50,"score":7}],"resources":[{"name":"cpu","weight":1}]}}"#,
            "RequestedToCapacityRatio",
        ),
    ] {
        let loaded = parse_policy(
            "p.json",
            &format!(
                r#"{{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[{{"name":"Custom","weight":2,"argument":{arg}}}]}}"#
            ),
        )
        .unwrap();
        assert_eq!(scores(&loaded.resolved), [(plugin, 2)]);
        assert_eq!(loaded.resolved.scores[0].legacy_names, ["Custom"]);
    }
}

#[test]
fn removed_names_explain_why() {
    let e = err("fail/removed-predicate.json");
    assert!(
        e.starts_with(
            "config/policies/fail/removed-predicate.json:5:14: predicate \"CheckNodeMemoryPressure\" at predicates[0].name was removed from kube-scheduler: with TaintNodesByCondition"
        ),
        "{e}"
    );
    assert!(e.contains("PodToleratesNodeTaints"), "{e}");
    for name in [
        "CheckNodeCondition",
        "CheckNodeDiskPressure",
        "CheckNodePIDPressure",
        "PodToleratesNodeNoExecuteTaints",
    ] {
        let e = parse_policy(
            "p.yaml",
            &format!("kind: Policy\napiVersion: v1\npredicates:\n- name: {name}\n"),
        )
        .unwrap_err();
        assert!(matches!(e, PolicyError::RemovedName { .. }), "{e}");
    }
    let e = parse_policy(
        "p.yaml",
        "kind: Policy\napiVersion: v1\npriorities:\n- name: ResourceLimitsPriority\n  weight: 1\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("ResourceLimitsPriorityFunction"), "{e}");
}

#[test]
fn registered_name_with_argument_warns() {
    let loaded = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"HostName","argument":{"labelsPresence":{"labels":["a"]}}}],"priorities":[]}"#,
    )
    .unwrap();
    assert_eq!(
        filters(&loaded.resolved),
        ["NodeUnschedulable", "NodeName", "TaintToleration"]
    );
    assert!(
        loaded.warnings[0].contains("its argument is ignored"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn equal_priority_is_skipped_before_argument_checks() {
    // createFromPolicy skips EqualPriority before ProcessPriorityPolicy (which validates the
    // argument count).
    let loaded = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[{"name":"EqualPriority","weight":2}]}"#,
    )
    .unwrap();
    assert!(loaded.resolved.scores.is_empty());
    assert!(loaded.resolved.notes.iter().any(|n| n == EQUAL_NOTE));
}

#[test]
fn missing_and_unreadable_files() {
    let missing = repo_root().join("config/policies/does-not-exist.json");
    let e = load_policy_file(&missing).unwrap_err();
    assert!(matches!(e, PolicyError::MissingFile { .. }));
    assert_eq!(
        e.to_string(),
        format!("missing policy config file {}", missing.display())
    );
    let dir = repo_root().join("config/policies");
    let e = load_policy_file(&dir).unwrap_err();
    assert!(
        e.to_string().starts_with("couldn't read policy config"),
        "{e}"
    );
}

/// The policy files of a fixture directory (`*.expected.*` files hold expectations).
fn policy_fixtures(dir: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixture(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".expected."))
        })
        .collect();
    out.sort();
    out
}

/// `pass/`: kube-scheduler v1.22 accepts these: each loads.
/// `fail/`: v1.22 (or mini-scheduler's strict loader) refuses these; when `<name>.expected.txt`
/// exists the error text must equal it.
#[test]
fn every_pass_fixture_resolves_and_every_fail_fixture_fails() {
    let pass = policy_fixtures("pass");
    assert!(pass.len() >= 20, "{} pass fixtures", pass.len());
    for path in &pass {
        let text = std::fs::read_to_string(path).unwrap();
        let name = path.display().to_string();
        if let Err(e) = parse_policy(&name, &text) {
            panic!("{name}: {e}");
        }
        if let Err(e) = load_policy_file(path) {
            panic!("{name}: {e}");
        }
    }
    let fail = policy_fixtures("fail");
    assert!(fail.len() >= 20, "{} fail fixtures", fail.len());
    for path in &fail {
        let name = path.display().to_string();
        let e = match load_policy_file(path) {
            Ok(l) => panic!("{name} loaded: {:?}", l.resolved),
            Err(e) => e,
        };
        assert!(e.to_string().starts_with(&name), "{e}");
        assert!(e.location().is_some_and(|l| l.line > 0), "{e}");
        let expected = path.with_extension("expected.txt");
        if expected.exists() {
            let rel = path
                .strip_prefix(repo_root())
                .unwrap()
                .display()
                .to_string();
            let text = std::fs::read_to_string(path).unwrap();
            let got = parse_policy(&rel, &text).unwrap_err().to_string();
            let want = std::fs::read_to_string(&expected).unwrap();
            assert_eq!(got, want.trim_end(), "{}", expected.display());
        }
    }
}

#[test]
fn loaded_plugins_are_all_implemented() {
    for path in policy_fixtures("pass") {
        let loaded = load_policy_file(&path).unwrap();
        assert!(loaded.resolved.scores.iter().all(|s| s.weight > 0));
        // The plugins build into a framework.
        crate::framework::Framework::from_policy(&loaded.resolved).unwrap();
    }
}

/// Why loading needs no "is this plugin implemented" check: every framework plugin name the
/// legacy registry's tables (and the default provider) can produce is one this build
/// constructs, with the plugin arguments left at their defaults. A name added to a table
/// without its plugin fails here.
#[test]
fn every_plugin_the_tables_name_is_built() {
    use crate::framework::{new_filter, new_score};
    let args = PluginArgs::default();
    let mut n = 0;
    for (name, plugins) in legacy_registry::PREDICATES {
        for plugin in *plugins {
            assert!(new_filter(plugin, &args).is_some(), "{name}: {plugin}");
            n += 1;
        }
    }
    for (name, plugin) in legacy_registry::PRIORITIES {
        assert!(new_score(plugin, &args).is_some(), "{name}: {plugin}");
        n += 1;
    }
    for (plugin, _) in DEFAULT_PROVIDER_FILTERS {
        assert!(new_filter(plugin, &args).is_some(), "{plugin}");
    }
    for (plugin, _, _) in DEFAULT_PROVIDER_SCORES {
        assert!(new_score(plugin, &args).is_some(), "{plugin}");
    }
    // 22 predicate pairs, 13 v1.22 priorities and the 9 GPU placement priorities.
    assert_eq!(n, 22 + 13 + 9, "every (name, plugin) pair of the tables");
    // And the gate-on translation's plugin (SelectorSpreadPriority → PodTopologySpread).
    let gated = default_provider().with_feature_gates(&FeatureGates::default());
    crate::framework::Framework::from_policy(&gated).unwrap();
}

#[test]
fn display_lists_filters_scores_and_notes() {
    let loaded = load("pass/seed-singular-predicate.json").unwrap();
    let shown = loaded.resolved.to_string();
    let expected = "\
filter plugins (in order):
   1. NodeUnschedulable   <- CheckNodeUnschedulable
   2. NodeName            <- HostName
   3. NodePorts           <- PodFitsPorts
   4. NodeAffinity        <- MatchNodeSelector
   5. NodeResourcesFit    <- PodFitsResources
   6. VolumeRestrictions  <- NoDiskConflict
   7. TaintToleration     <- PodToleratesNodeTaints
score plugins (weight):
  NodeResourcesBalancedAllocation      1  <- BalancedResourceAllocation
  NodeResourcesLeastAllocated          1  <- LeastRequestedPriority
  SelectorSpread                       1  <- ServiceSpreadingPriority
alwaysCheckAllPredicates: false
hardPodAffinitySymmetricWeight: 1
notes:
  - CheckNodeUnschedulable: added (mandatory predicate: kube-scheduler v1.18+ always configures it)
  - PodToleratesNodeTaints: added (mandatory predicate: kube-scheduler v1.18+ always configures it)
  - EqualPriority: skipped (kube-scheduler v1.18+ registers no plugin; every node would score equally)";
    assert_eq!(shown, expected);
}

#[test]
fn compatibility_test_json_verbatim_with_tabs() {
    // compatibility_test.go case "GeneralPredicate", JSON copied with its tab indentation.
    let json = "{\n\t\t  \"kind\": \"Policy\",\n\t\t  \"apiVersion\": \"v1\",\n\t\t  \"predicates\": [\n\t\t\t{\"name\": \"GeneralPredicates\"}\n                  ],\n\t\t  \"priorities\": [\n                  ]\n\t\t}";
    let loaded = parse_policy("ct.json", json).unwrap();
    assert_eq!(
        filters(&loaded.resolved),
        [
            "NodeUnschedulable",
            "NodeResourcesFit",
            "NodeName",
            "NodePorts",
            "NodeAffinity",
            "TaintToleration"
        ]
    );
    // Positions count a tab as one column.
    let bad = json.replace("GeneralPredicates", "GeneralPredicate");
    let e = parse_policy("ct.json", &bad).unwrap_err().to_string();
    assert!(
        e.starts_with("ct.json:5:13: unknown predicate \"GeneralPredicate\""),
        "{e}"
    );
    assert!(e.contains("did you mean \"GeneralPredicates\"?"), "{e}");
}

#[test]
fn columns_count_characters_not_bytes() {
    let json = "{\"kind\":\"Policy\",\"apiVersion\":\"v1\",\"predicates\":[{\"name\":\"Pödfits\"},{\"name\":\"Ünknown\"}]}";
    let e = parse_policy("u.json", json).unwrap_err().to_string();
    let col = json.split("\"Pödfits\"").next().unwrap().chars().count() + 1;
    assert!(
        e.starts_with(&format!("u.json:1:{col}: unknown predicate \"Pödfits\"")),
        "{e}"
    );
    // A decode error after non-ASCII text on the same line.
    let json = "{\"kind\":\"Policy\",\"apiVersion\":\"v1\",\"predicates\":[{\"name\":\"é\",\"argument\":{\"labelsPresence\":{\"presence\":\"yes\"}}}]}";
    let e = parse_policy("u.json", json).unwrap_err().to_string();
    let col = json.split("\"yes\"").next().unwrap().chars().count() + 1;
    assert_eq!(
        e,
        format!(
            "u.json:1:{col}: invalid policy: predicates[0].argument.labelsPresence.presence: invalid type: string \"yes\", expected a boolean"
        )
    );
    // YAML.
    let e = parse_policy(
        "u.yaml",
        "kind: Policy\napiVersion: v1\npredicates:\n- {name: é, argument: {}}\n- name: Ünknown\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(
            "u.yaml:4:23: exactly 1 predicate argument is required, numArgs: 0, predicate é"
        ),
        "{e}"
    );
}

#[test]
fn yaml_empty_value_is_null_and_bom_is_ignored() {
    let loaded = parse_policy(
        "p.yaml",
        "\u{feff}kind: Policy\napiVersion: v1\npredicates:\npriorities: []\n",
    )
    .unwrap();
    assert_eq!(loaded.policy.predicates, None);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert!(
        loaded
            .resolved
            .notes
            .iter()
            .any(|n| n.starts_with("predicates not set")),
        "{:?}",
        loaded.resolved.notes
    );
    assert!(loaded.resolved.scores.is_empty());
    let singular_null = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","predicate":null,"priorities":[]}"#,
    )
    .unwrap();
    assert_eq!(
        singular_null.warnings.len(),
        1,
        "{:?}",
        singular_null.warnings
    );
    assert!(singular_null.warnings[0].contains("treating it as \"predicates\""));
    // `predicate: null` is `predicates: null`: all of v1.22's default predicates.
    assert_eq!(filters(&singular_null.resolved).len(), 15);
}

/// One `*.expected.json` beside a fixture: the resolution kube-scheduler v1.22 gives the policy
/// with its default feature gates (`DefaultPodTopologySpread` on).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Expected {
    /// Upstream table and case the expectation is transcribed from.
    source: String,
    /// How the expectation relates to the upstream table.
    #[allow(dead_code)]
    note: String,
    filters: Vec<String>,
    scores: Vec<ExpectedScore>,
    #[serde(default)]
    args: PluginArgs,
    #[serde(default)]
    extenders: Vec<LegacyExtender>,
    #[serde(default)]
    always_check_all_predicates: bool,
    #[serde(default = "one")]
    hard_pod_affinity_symmetric_weight: i32,
}

fn one() -> i32 {
    1
}

#[derive(serde::Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct ExpectedScore {
    plugin: String,
    weight: i64,
}

/// The corpus transcribed from kube-scheduler's own tables: every `pass/*.expected.json`
/// (`compat-*`: `compatibility_test.go` @05c351a9037bd79bf88c56171a951c3097b658da
/// `TestCompatibility_v1_Scheduler`, every case, and v1.22's `TestPolicyCompatibility` case
/// "all predicates and priorities"; `factory-*`: `factory_test.go` `TestCreateFromConfig`) is
/// compared with the resolution of the policy beside it: filter order, score plugins and
/// weights, plugin args, extenders. Loading the same file gives the same; its plugins and
/// extenders build as `policy check` and `run` build them (v1.22 accepts every one of these
/// files).
#[test]
fn upstream_policy_corpus_resolves_as_v1_22() {
    let mut n = 0;
    for entry in std::fs::read_dir(fixture("pass")).unwrap() {
        let exp_path = entry.unwrap().path();
        let Some(stem) = exp_path
            .file_name()
            .and_then(|f| f.to_str())
            .and_then(|f| f.strip_suffix(".expected.json"))
        else {
            continue;
        };
        let policy_path = exp_path.with_file_name(format!("{stem}.json"));
        let exp: Expected =
            serde_json::from_str(&std::fs::read_to_string(&exp_path).unwrap()).unwrap();
        assert!(exp.source.contains("kubernetes/kubernetes"), "{stem}");
        let text = std::fs::read_to_string(&policy_path).unwrap();
        let loaded = parse_policy(&policy_path.display().to_string(), &text)
            .unwrap_or_else(|e| panic!("{stem}: {e}"));
        let gated = loaded
            .resolved
            .clone()
            .with_feature_gates(&FeatureGates::default());
        let r = &gated;
        let got_filters: Vec<String> = r.filters.iter().map(|f| f.plugin.to_string()).collect();
        assert_eq!(got_filters, exp.filters, "{stem}: filters");
        let got_scores: Vec<ExpectedScore> = r
            .scores
            .iter()
            .map(|s| ExpectedScore {
                plugin: s.plugin.to_string(),
                weight: s.weight,
            })
            .collect();
        assert_eq!(got_scores, exp.scores, "{stem}: scores");
        assert_eq!(r.args, exp.args, "{stem}: args");
        assert_eq!(r.extenders, exp.extenders, "{stem}: extenders");
        #[cfg(feature = "http-extender")]
        if let Err(e) = crate::extender::build_extenders(&r.extenders) {
            panic!("{stem}: {e}");
        }
        assert_eq!(
            r.always_check_all_predicates, exp.always_check_all_predicates,
            "{stem}"
        );
        assert_eq!(
            r.hard_pod_affinity_symmetric_weight, exp.hard_pod_affinity_symmetric_weight,
            "{stem}"
        );
        // Loading the file gives the same, and it builds into a framework.
        let from_file = load_policy_file(&policy_path)
            .unwrap_or_else(|e| panic!("{stem}: {e}"))
            .resolved
            .with_feature_gates(&FeatureGates::default());
        assert_eq!(&from_file, r, "{stem}");
        if let Err(e) = crate::framework::Framework::from_policy(r) {
            panic!("{stem}: {e}");
        }
        n += 1;
    }
    assert_eq!(
        n,
        15 + 1 + 3,
        "compatibility_test.go has 15 cases (v1.22's table one more), factory_test.go 3"
    );
}

/// v1.22's `compatibility_test.go` case "all predicates and priorities": its extender's
/// `"urlPrefix": "/prefix"` is accepted with a warning naming the field, the value and the
/// error every call gets in Go.
#[test]
fn url_prefix_without_a_scheme_is_accepted_with_a_warning() {
    let rel = "pass/compat-all-predicates-and-priorities.json";
    let loaded = parse_policy(
        &format!("config/policies/{rel}"),
        &std::fs::read_to_string(fixture(rel)).unwrap(),
    )
    .unwrap();
    assert_eq!(loaded.resolved.extenders[0].url_prefix, "/prefix");
    assert_eq!(
        loaded.warnings,
        [
            "config/policies/pass/compat-all-predicates-and-priorities.json:48:24: \
             extenders[0].urlPrefix \"/prefix\" is not an http:// or https:// URL with a host: \
             kube-scheduler v1.22 accepts it, and every call to this extender fails \
             (Post \"/prefix/filter\": unsupported protocol scheme \"\"); the extender is \
             ignorable, so it is skipped"
        ]
    );
    // Not ignorable: the pods fail; no verb: never called, no warning; a URL Go sends: none.
    let yaml = |prefix: &str, extra: &str| {
        format!("kind: Policy\napiVersion: v1\nextenders:\n- urlPrefix: {prefix:?}\n{extra}")
    };
    let w = parse_policy("p.yaml", &yaml("localhost:8888", "  bindVerb: bind\n"))
        .unwrap()
        .warnings;
    assert_eq!(
        w,
        [
            "p.yaml:4:14: extenders[0].urlPrefix \"localhost:8888\" is not an http:// or https:// \
             URL with a host: kube-scheduler v1.22 accepts it, and every call to this extender \
             fails (Post \"localhost:8888/bind\": unsupported protocol scheme \"localhost\"); the \
             extender is not ignorable, so every pod it is asked about fails with that error"
        ]
    );
    assert!(
        parse_policy("p.yaml", &yaml("/prefix", "  preemptVerb: preempt\n"))
            .unwrap()
            .warnings
            .is_empty()
    );
    assert!(
        parse_policy(
            "p.yaml",
            &yaml("http://ext:8888/x", "  filterVerb: filter\n")
        )
        .unwrap()
        .warnings
        .is_empty()
    );
}

/// Merging rules of `ProcessPredicatePolicy` / `ProcessPriorityPolicy` and the profile build:
/// labels appended across entries in policy order, registered names sharing the custom keys,
/// weight × entries, a zero weight raised to 1, v1.22's int32 weights, empty R2C resources.
#[test]
fn plugin_args_merge_rules() {
    let l = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1",
"predicates":[
 {"name":"CheckNodeLabelPresence"},
 {"name":"A","argument":{"labelsPresence":{"labels":["a","b"],"presence":true}}},
 {"name":"B","argument":{"labelsPresence":{"labels":["c"],"presence":false}}},
 {"name":"A","argument":{"labelsPresence":{"labels":["d"],"presence":true}}},
 {"name":"S","argument":{"serviceAffinity":{"labels":["zone"]}}}],
"priorities":[
 {"name":"P1","weight":5,"argument":{"labelPreference":{"label":"x","presence":false}}},
 {"name":"P2","weight":5,"argument":{"labelPreference":{"label":"y","presence":true}}},
 {"name":"ServiceAffinity","weight":7},
 {"name":"Bin","weight":3,"argument":{"requestedToCapacityRatioArguments":{"shape":[{"utilization":0,"score":0},{"utilization":100,"score":10}]}}}]}"#,
    )
    .unwrap();
    let r = &l.resolved;
    // One NodeLabel filter for the registered name and the custom entries, named by both.
    let nl = r.filters.iter().find(|f| f.plugin == "NodeLabel").unwrap();
    assert_eq!(nl.legacy_names, ["CheckNodeLabelPresence", "A", "B"]);
    assert_eq!(
        r.args.node_label,
        Some(NodeLabelArgs {
            present_labels: vec!["a".into(), "b".into(), "d".into()],
            absent_labels: vec!["c".into()],
            present_labels_preference: vec!["y".into()],
            absent_labels_preference: vec!["x".into()],
        })
    );
    // NodeLabel: weight 5 × 2 preferences; ServiceAffinity registered without anti-affinity
    // labels: 7 × 0 = 0, raised to 1 by the framework.
    assert_eq!(
        scores(r),
        [
            ("NodeLabel", 10),
            ("RequestedToCapacityRatio", 3),
            ("ServiceAffinity", 1)
        ]
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("ServiceAffinity: configured by priority \"ServiceAffinity\"")),
        "{:?}",
        r.notes
    );
    assert_eq!(
        r.args.service_affinity,
        Some(ServiceAffinityArgs {
            affinity_labels: vec!["zone".into()],
            anti_affinity_labels_preference: vec![],
        })
    );
    // Empty resources stay empty (no default on the Policy path): warned.
    assert_eq!(
        r.args
            .requested_to_capacity_ratio
            .as_ref()
            .map(|a| a.resources.len()),
        Some(0)
    );
    assert!(
        l.warnings
            .iter()
            .any(|w| w.contains("requestedToCapacityRatioArguments has no resources")),
        "{:?}",
        l.warnings
    );
    let shown = r.to_string();
    assert!(
        shown.contains("NodeLabel                 presentLabels=[a, b, d] absentLabels=[c] presentLabelsPreference=[y] absentLabelsPreference=[x]"),
        "{shown}"
    );
    assert!(
        shown.contains("RequestedToCapacityRatio  shape=[0%→0 (0), 100%→10 (100)] resources=[] (no resources: every node scores 0, as in kube-scheduler v1.22)"),
        "{shown}"
    );

    // v1.22 stores weights as int32 (`int32(weight)`); a larger weight is kept but warned.
    let big = parse_policy(
        "p.json",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[{"name":"LeastRequestedPriority","weight":4294967297}]}"#,
    )
    .unwrap();
    assert_eq!(
        scores(&big.resolved),
        [("NodeResourcesLeastAllocated", 4294967297)]
    );
    assert!(
        big.warnings[0].ends_with(
            "score plugin NodeResourcesLeastAllocated gets weight 4294967297; kube-scheduler v1.22 stores plugin \
             weights as int32 and would use 1"
        ),
        "{:?}",
        big.warnings
    );
}
