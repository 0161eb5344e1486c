//! Resolution: a decoded, validated Policy → Scheduling Framework plugins, weights and plugin
//! arguments, as kube-scheduler v1.22 translates it through its legacy registry
//! ([`super::legacy_registry`]'s tables).
//!
//! Upstream: kubernetes/kubernetes `pkg/scheduler/framework/plugins/legacy_registry.go`
//! @054d429d9f8bc8de4fc82e6cf2281e12a13fe1f2 (v1.21/v1.22) and `pkg/scheduler/factory.go`
//! `createFromPolicy` / `create` (v1.22):
//! - each predicate entry becomes a *key*: a registered name (`PodFitsPorts` is an alias of
//!   `PodFitsHostPorts`), or, for a free name with an argument, `CheckServiceAffinity`
//!   (`serviceAffinity`: labels appended to `ServiceAffinityArgs.affinityLabels`) or
//!   `CheckNodeLabelPresence` (`labelsPresence`: labels appended to `NodeLabelArgs`
//!   present/absent). A registered name ignores its argument. The mandatory
//!   `PodToleratesNodeTaints` and `CheckNodeUnschedulable` are always added, and filter plugins
//!   are appended in `predicateOrdering`; a plugin produced twice keeps its first place
//!   (`GeneralPredicates` = NodeResourcesFit, NodeName, NodePorts, NodeAffinity);
//! - each priority entry becomes a key with a weight (`priorityKeys[key] = weight`: a repeated
//!   key keeps the **last** weight). `EqualPriority` is skipped before anything else is looked
//!   at; `ServiceSpreadingPriority` is an alias of `SelectorSpreadPriority`; a free name with an
//!   argument becomes `ServiceAffinity` (`serviceAntiAffinity`: label appended to
//!   `antiAffinityLabelsPreference`), `NodeLabel` (`labelPreference`: label appended to the
//!   present/absent preferences) or `RequestedToCapacityRatio` (`RequestedToCapacityRatioArgs`
//!   copied as written). Score plugins are appended in **sorted key order**
//!   (`AppendPriorityConfigs`); the `NodeLabel` and `ServiceAffinity` weights are the key's
//!   weight × the number of preferences; a weight of 0 becomes 1 (`NewFramework`);
//! - `predicates: null` / `priorities: null` select `DefaultPredicates` / `DefaultPriorities`;
//!   `[]` selects only the mandatory predicates / no score plugin;
//! - `hardPodAffinitySymmetricWeight` (when non-zero) sets `InterPodAffinityArgs`, extenders'
//!   `ignoredByScheduler` resources set `NodeResourcesFitArgs.ignoredResources`, and the plugins'
//!   `New` checks run on the arguments (`NodeLabel` conflicts, `RequestedToCapacityRatio` shape
//!   and weights, and a plugin configured without the arguments it needs).
//!
//! Resolution gives the translation with the `DefaultPodTopologySpread` feature gate **off**:
//! `SelectorSpreadPriority` → the `SelectorSpread` plugin. v1.22 defaults the gate on, which maps
//! the name to `PodTopologySpread` with system-default constraints instead;
//! [`super::ResolvedPolicy::with_feature_gates`] (`feature_gates.rs`) applies that, and every caller
//! that schedules (the binary, the hot reload) calls it with the process's `--feature-gates`.
//!
//! Resolution knows every v1.22 name, and this build implements every plugin they map to, so a
//! policy that resolves loads.

use std::collections::BTreeMap;

use super::args::{
    InterPodAffinityArgs, NodeLabelArgs, NodeResourcesFitArgs, PluginArgs,
    RequestedToCapacityRatioArgs, ServiceAffinityArgs,
};
use super::error::PolicyError;
use super::legacy_registry::{
    self as registry, DEFAULT_PREDICATES, DEFAULT_PRIORITIES, EQUAL_PRIORITY, MANDATORY_PREDICATES,
    NODE_LABEL_PREDICATE, NODE_LABEL_PRIORITY, PREDICATES, REQUESTED_TO_CAPACITY_RATIO_PRIORITY,
    SERVICE_AFFINITY_PREDICATE, SERVICE_AFFINITY_PRIORITY,
};
use super::locate::{FieldPath, Source};
use super::resolved::{ResolvedFilter, ResolvedPolicy, ResolvedScore};
use super::types::{Policy, PredicateArgument, PriorityArgument};

fn predicate_arg_count(arg: &PredicateArgument) -> usize {
    usize::from(arg.service_affinity.is_some()) + usize::from(arg.labels_presence.is_some())
}

fn priority_arg_count(arg: &PriorityArgument) -> usize {
    usize::from(arg.service_anti_affinity.is_some())
        + usize::from(arg.label_preference.is_some())
        + usize::from(arg.requested_to_capacity_ratio_arguments.is_some())
}

/// Appends a filter plugin unless present (first position wins), recording legacy names.
fn append_filter(filters: &mut Vec<ResolvedFilter>, plugin: &'static str, names: &[String]) {
    let idx = match filters.iter().position(|f| f.plugin == plugin) {
        Some(i) => i,
        None => {
            filters.push(ResolvedFilter {
                plugin,
                legacy_names: Vec::new(),
            });
            filters.len() - 1
        }
    };
    for n in names {
        if !filters[idx].legacy_names.contains(n) {
            filters[idx].legacy_names.push(n.clone());
        }
    }
}

/// `appendToPluginSet` for scores: a plugin already present keeps its place **and its first
/// weight**. Upstream's comment says "Keep the max weight", but the loop assigns to a copy
/// (`for _, e := range set.Enabled { ... e.Weight = *weight }`), so the first weight stays. No two
/// priority keys share a score plugin in the gate-off mapping built here; with
/// `DefaultPodTopologySpread` on, `SelectorSpreadPriority` and `EvenPodsSpreadPriority` do, and
/// [`ResolvedPolicy::with_feature_gates`] applies the same first-weight rule.
fn append_score(
    scores: &mut Vec<ResolvedScore>,
    plugin: &'static str,
    weight: i64,
    names: &[String],
) {
    match scores.iter_mut().find(|s| s.plugin == plugin) {
        Some(s) => {
            for n in names {
                if !s.legacy_names.contains(n) {
                    s.legacy_names.push(n.clone());
                }
            }
        }
        None => scores.push(ResolvedScore {
            plugin,
            weight,
            legacy_names: names.to_vec(),
        }),
    }
}

/// Inputs [`resolve`] needs besides the policy.
pub(super) struct ResolveInput<'s, 'a> {
    /// The file, for locations.
    pub(super) src: &'s Source<'a>,
    /// `"predicates"`, or `"predicate"` when the file used the singular key.
    pub(super) predicates_key: &'static str,
}

/// Where each label of a [`NodeLabelArgs`] list came from (for error locations).
#[derive(Default)]
struct NodeLabelOrigins {
    present: Vec<FieldPath>,
    absent: Vec<FieldPath>,
    present_preference: Vec<FieldPath>,
    absent_preference: Vec<FieldPath>,
}

/// `ConfigProducerArgs` while the entries are processed, with the field paths that set them.
#[derive(Default)]
struct ArgsAcc {
    node_label: Option<NodeLabelArgs>,
    node_label_origins: NodeLabelOrigins,
    service_affinity: Option<ServiceAffinityArgs>,
    requested_to_capacity_ratio: Option<(RequestedToCapacityRatioArgs, FieldPath)>,
    /// First entry that names a plugin needing arguments by its registered key (to locate
    /// "configured without arguments" errors): `CheckNodeLabelPresence`, `NodeLabel`,
    /// `CheckServiceAffinity`, `ServiceAffinity`, `RequestedToCapacityRatio`.
    registered_use: BTreeMap<&'static str, FieldPath>,
}

/// Canonical key, weight and bookkeeping of one priority key.
struct PriorityKey {
    weight: i64,
    names: Vec<String>,
    first: usize,
    last_path: FieldPath,
}

/// `predicates` → set of predicate keys with the names as written (`ProcessPredicatePolicy`).
fn resolve_predicates(
    policy: &Policy,
    input: &ResolveInput<'_, '_>,
    acc: &mut ArgsAcc,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<&'static str, Vec<String>>, PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    let mut pred_keys: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let Some(list) = &policy.predicates else {
        for name in DEFAULT_PREDICATES {
            pred_keys.insert(name, vec![(*name).to_string()]);
        }
        notes.push("predicates not set: kube-scheduler v1.22 default predicates".to_string());
        return Ok(pred_keys);
    };
    for (i, pred) in list.iter().enumerate() {
        let path = root.clone().key(input.predicates_key).index(i);
        if let Some(arg) = &pred.argument {
            let n = predicate_arg_count(arg);
            if n != 1 {
                return Err(PolicyError::Argument {
                    location: src.value(&path.clone().key("argument")),
                    message: format!(
                        "exactly 1 predicate argument is required, numArgs: {n}, predicate {}",
                        pred.name
                    ),
                });
            }
        }
        let canonical = registry::canonical_predicate(&pred.name);
        let key = if let Some((key, _)) = registry::predicate_plugins(canonical) {
            if pred.argument.is_some() {
                warnings.push(format!(
                    "{}: predicate \"{}\" is a registered name: its argument is ignored, as in kube-scheduler v1.22",
                    src.value(&path.clone().key("argument")),
                    pred.name
                ));
            }
            if key == NODE_LABEL_PREDICATE || key == SERVICE_AFFINITY_PREDICATE {
                acc.registered_use
                    .entry(key)
                    .or_insert_with(|| path.clone().key("name"));
            }
            key
        } else if let Some(arg) = &pred.argument {
            let arg_path = path.clone().key("argument");
            if let Some(sa) = &arg.service_affinity {
                acc.service_affinity
                    .get_or_insert_with(Default::default)
                    .affinity_labels
                    .extend(sa.labels.iter().cloned());
                SERVICE_AFFINITY_PREDICATE
            } else if let Some(lp) = &arg.labels_presence {
                let a = acc.node_label.get_or_insert_with(Default::default);
                let o = &mut acc.node_label_origins;
                let lp_path = arg_path.key("labelsPresence");
                let (labels, origins) = if lp.presence {
                    (&mut a.present_labels, &mut o.present)
                } else {
                    (&mut a.absent_labels, &mut o.absent)
                };
                labels.extend(lp.labels.iter().cloned());
                origins.extend(lp.labels.iter().map(|_| lp_path.clone()));
                NODE_LABEL_PREDICATE
            } else {
                // Unreachable: an argument has exactly one member here.
                return Err(unknown_predicate(src, &path, &pred.name));
            }
        } else {
            return Err(unknown_predicate(src, &path, &pred.name));
        };
        let names = pred_keys.entry(key).or_default();
        if !names.contains(&pred.name) {
            names.push(pred.name.clone());
        }
    }
    Ok(pred_keys)
}

fn unknown_predicate(src: &Source<'_>, path: &FieldPath, name: &str) -> PolicyError {
    let location = src.value(&path.clone().key("name"));
    if let Some(reason) = registry::removed_predicate(name) {
        return PolicyError::RemovedName {
            location,
            kind: "predicate",
            name: name.to_string(),
            field: format!("{path}.name"),
            reason,
        };
    }
    PolicyError::UnknownName {
        location,
        kind: "predicate",
        name: name.to_string(),
        field: format!("{path}.name"),
        suggestion: registry::suggest_predicate(name),
    }
}

fn unknown_priority(src: &Source<'_>, path: &FieldPath, name: &str) -> PolicyError {
    let location = src.value(&path.clone().key("name"));
    if let Some(reason) = registry::removed_priority(name) {
        return PolicyError::RemovedName {
            location,
            kind: "priority",
            name: name.to_string(),
            field: format!("{path}.name"),
            reason,
        };
    }
    PolicyError::UnknownName {
        location,
        kind: "priority",
        name: name.to_string(),
        field: format!("{path}.name"),
        suggestion: registry::suggest_priority(name),
    }
}

/// `priorities` → map priority key → weight (`ProcessPriorityPolicy`, `EqualPriority` skipped).
fn resolve_priorities(
    policy: &Policy,
    input: &ResolveInput<'_, '_>,
    acc: &mut ArgsAcc,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<&'static str, PriorityKey>, PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    let mut keys: BTreeMap<&'static str, PriorityKey> = BTreeMap::new();
    let Some(list) = &policy.priorities else {
        for (name, weight) in DEFAULT_PRIORITIES {
            keys.insert(
                name,
                PriorityKey {
                    weight: *weight,
                    names: vec![(*name).to_string()],
                    first: 0,
                    last_path: root.clone(),
                },
            );
        }
        notes.push("priorities not set: kube-scheduler v1.22 default priorities".to_string());
        return Ok(keys);
    };
    for (i, prio) in list.iter().enumerate() {
        let path = root.clone().key("priorities").index(i);
        if prio.name == EQUAL_PRIORITY {
            let note = "EqualPriority: skipped (kube-scheduler v1.18+ registers no plugin; every node would score equally)";
            if !notes.iter().any(|n| n == note) {
                notes.push(note.to_string());
            }
            continue;
        }
        if let Some(arg) = &prio.argument {
            let n = priority_arg_count(arg);
            if n != 1 {
                return Err(PolicyError::Argument {
                    location: src.value(&path.clone().key("argument")),
                    message: format!(
                        "exactly 1 priority argument is required, numArgs: {n}, priority {}",
                        prio.name
                    ),
                });
            }
        }
        let canonical = registry::canonical_priority(&prio.name);
        let key = if let Some((key, _)) = registry::priority_plugin(canonical) {
            if prio.argument.is_some() {
                warnings.push(format!(
                    "{}: priority \"{}\" is a registered name: its argument is ignored, as in kube-scheduler v1.22",
                    src.value(&path.clone().key("argument")),
                    prio.name
                ));
            }
            if matches!(
                key,
                NODE_LABEL_PRIORITY
                    | SERVICE_AFFINITY_PRIORITY
                    | REQUESTED_TO_CAPACITY_RATIO_PRIORITY
            ) {
                acc.registered_use
                    .entry(key)
                    .or_insert_with(|| path.clone().key("name"));
            }
            key
        } else if let Some(arg) = &prio.argument {
            let arg_path = path.clone().key("argument");
            if let Some(saa) = &arg.service_anti_affinity {
                acc.service_affinity
                    .get_or_insert_with(Default::default)
                    .anti_affinity_labels_preference
                    .push(saa.label.clone());
                SERVICE_AFFINITY_PRIORITY
            } else if let Some(lp) = &arg.label_preference {
                let a = acc.node_label.get_or_insert_with(Default::default);
                let o = &mut acc.node_label_origins;
                let (labels, origins) = if lp.presence {
                    (&mut a.present_labels_preference, &mut o.present_preference)
                } else {
                    (&mut a.absent_labels_preference, &mut o.absent_preference)
                };
                labels.push(lp.label.clone());
                origins.push(arg_path.key("labelPreference"));
                NODE_LABEL_PRIORITY
            } else if let Some(r) = &arg.requested_to_capacity_ratio_arguments {
                acc.requested_to_capacity_ratio = Some((
                    RequestedToCapacityRatioArgs {
                        shape: r.shape.clone(),
                        resources: r.resources.clone(),
                    },
                    arg_path.key("requestedToCapacityRatioArguments"),
                ));
                REQUESTED_TO_CAPACITY_RATIO_PRIORITY
            } else {
                return Err(unknown_priority(src, &path, &prio.name));
            }
        } else {
            return Err(unknown_priority(src, &path, &prio.name));
        };
        match keys.get_mut(key) {
            Some(k) => {
                if k.weight != prio.weight {
                    warnings.push(format!(
                        "{}: priority {key} is listed twice ({} and {path}) with weights {} and {}; \
                         kube-scheduler v1.22 keeps the last one: weight {}",
                        src.value(&path.clone().key("weight")),
                        root.clone().key("priorities").index(k.first),
                        k.weight,
                        prio.weight,
                        prio.weight
                    ));
                }
                k.weight = prio.weight;
                k.last_path = path.clone();
                if !k.names.contains(&prio.name) {
                    k.names.push(prio.name.clone());
                }
            }
            None => {
                keys.insert(
                    key,
                    PriorityKey {
                        weight: prio.weight,
                        names: vec![prio.name.clone()],
                        first: i,
                        last_path: path.clone(),
                    },
                );
            }
        }
    }
    if list.is_empty() {
        notes.push(
            "priorities is []: no score plugins; every feasible node scores the same and the pick is random"
                .to_string(),
        );
    }
    Ok(keys)
}

/// `int32(w)` as Go converts it.
fn go_int32(w: i64) -> i32 {
    w as i32
}

/// Translates a decoded, validated policy into plugins, weights and arguments, for every v1.22
/// name. Warnings go to `warnings`.
///
/// # Errors
/// In document order: [`PolicyError::Argument`] (argument with ≠ 1 member), then
/// [`PolicyError::RemovedName`] / [`PolicyError::UnknownName`]; then the failures v1.22 hits
/// when it builds the profile: a `NodeLabel`/`ServiceAffinity` priority without arguments (v1.22
/// crashes), extenders ignoring resources without `NodeResourcesFit`, and the plugins' `New`
/// checks ([`PolicyError::Argument`] with upstream's `initializing plugin "X": ...` text).
pub(super) fn resolve(
    policy: &Policy,
    input: &ResolveInput<'_, '_>,
    warnings: &mut Vec<String>,
) -> Result<ResolvedPolicy, PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    let mut notes = Vec::new();
    let mut acc = ArgsAcc::default();
    let mut pred_keys = resolve_predicates(policy, input, &mut acc, warnings, &mut notes)?;
    for m in MANDATORY_PREDICATES {
        if !pred_keys.contains_key(m) {
            pred_keys.insert(m, vec![(*m).to_string()]);
            notes.push(format!(
                "{m}: added (mandatory predicate: kube-scheduler v1.18+ always configures it)"
            ));
        }
    }
    let prio_keys = resolve_priorities(policy, input, &mut acc, warnings, &mut notes)?;

    // ---- filters in predicateOrdering (it lists every key).
    let mut filters = Vec::new();
    for (key, plugins) in PREDICATES {
        if let Some(names) = pred_keys.get(key) {
            for plugin in *plugins {
                append_filter(&mut filters, plugin, names);
            }
        }
    }

    // ---- scores: sorted keys (AppendPriorityConfigs).
    let mut scores = Vec::new();
    for (key, k) in &prio_keys {
        let Some((_, plugin)) = registry::priority_plugin(key) else {
            continue;
        };
        let count = match *key {
            NODE_LABEL_PRIORITY | SERVICE_AFFINITY_PRIORITY => {
                let n = if *key == NODE_LABEL_PRIORITY {
                    acc.node_label.as_ref().map(|a| {
                        a.present_labels_preference.len() + a.absent_labels_preference.len()
                    })
                } else {
                    acc.service_affinity
                        .as_ref()
                        .map(|a| a.anti_affinity_labels_preference.len())
                };
                let Some(n) = n else {
                    let (arg, plugin_args) = if *key == NODE_LABEL_PRIORITY {
                        ("labelPreference", "NodeLabelArgs")
                    } else {
                        ("serviceAntiAffinity", "ServiceAffinityArgs")
                    };
                    return Err(PolicyError::Argument {
                        location: src.value(&k.last_path.clone().key("name")),
                        message: format!(
                            "priority \"{key}\" has no {arg} argument and no entry of the policy gives {key} \
                             arguments: kube-scheduler v1.22 crashes on this policy (its {key} config producer \
                             reads {plugin_args} through a nil pointer); use a custom priority with a {arg} \
                             argument instead"
                        ),
                    });
                };
                Some(n)
            }
            _ => None,
        };
        let mut weight = match count {
            Some(n) => {
                let n = i64::try_from(n).unwrap_or(i64::MAX);
                k.weight.checked_mul(n).ok_or_else(|| PolicyError::Argument {
                    location: src.value(&k.last_path.clone().key("weight")),
                    message: format!(
                        "priority {key}: weight {} × {n} entries overflows a 64-bit score weight",
                        k.weight
                    ),
                })?
            }
            None => k.weight,
        };
        let go_weight = match count {
            Some(n) => go_int32(k.weight).wrapping_mul(n as i32),
            None => go_int32(k.weight),
        };
        if i64::from(go_weight) != weight {
            warnings.push(format!(
                "{}: score plugin {plugin} gets weight {weight}; kube-scheduler v1.22 stores plugin weights as \
                 int32 and would use {go_weight}",
                src.value(&k.last_path.clone().key("weight"))
            ));
        }
        if weight == 0 {
            // `NewFramework`: "a weight of zero is not permitted" → 1.
            notes.push(format!(
                "{plugin}: configured by priority \"{key}\" without any preference, so its weight (weight × 0 \
                 entries) is 0, which kube-scheduler v1.22 raises to 1; every node scores 0 with it"
            ));
            weight = 1;
        }
        append_score(&mut scores, plugin, weight, &k.names);
    }

    // ---- arguments.
    let hard = policy.hard_pod_affinity_symmetric_weight;
    let mut args = PluginArgs {
        node_label: acc.node_label.clone(),
        service_affinity: acc.service_affinity.clone(),
        requested_to_capacity_ratio: acc
            .requested_to_capacity_ratio
            .as_ref()
            .map(|(a, _)| a.clone()),
        inter_pod_affinity: InterPodAffinityArgs {
            hard_pod_affinity_weight: if hard == 0 { 1 } else { hard },
        },
        node_resources_fit: NodeResourcesFitArgs::default(),
        // Set by `ResolvedPolicy::with_feature_gates` (gate-off translation here).
        pod_topology_spread: None,
        // Every Policy-based profile runs DefaultPreemption with its defaults.
        default_preemption: None,
    };
    let has = |plugin: &str| {
        filters.iter().any(|f: &ResolvedFilter| f.plugin == plugin)
            || scores.iter().any(|s: &ResolvedScore| s.plugin == plugin)
    };
    if hard != 0 && !scores.iter().any(|s| s.plugin == "InterPodAffinity") {
        notes.push(format!(
            "hardPodAffinitySymmetricWeight: {hard} sets InterPodAffinityArgs.hardPodAffinityWeight, which only \
             the InterPodAffinity score plugin (InterPodAffinityPriority) uses; this policy does not configure it"
        ));
    }

    // ---- extenders (`Configurator.create`): ignoredByScheduler resources → NodeResourcesFit.
    let ext_path = root.clone().key("extenders");
    let mut first_ignored: Option<FieldPath> = None;
    for (i, e) in policy.extenders.iter().enumerate() {
        for (j, r) in e.managed_resources.iter().enumerate() {
            if r.ignored_by_scheduler {
                args.node_resources_fit
                    .ignored_resources
                    .push(r.name.clone());
                first_ignored.get_or_insert_with(|| {
                    ext_path.clone().index(i).key("managedResources").index(j)
                });
            }
        }
    }
    if let Some(p) = first_ignored.filter(|_| !has("NodeResourcesFit")) {
        return Err(PolicyError::Argument {
            location: src.value(&p),
            message: "can't find NodeResourcesFitArgs in plugin config (kube-scheduler v1.22: an extender's \
                      ignoredByScheduler resources configure the NodeResourcesFit filter, which this policy does \
                      not run; add PodFitsResources or GeneralPredicates)"
                .to_string(),
        });
    }

    // ---- the plugins' `New` checks on their arguments.
    let init_error = |plugin: &str, path: &FieldPath, detail: String| PolicyError::Argument {
        location: src.value(path),
        message: format!("initializing plugin \"{plugin}\": {detail}"),
    };
    let missing = |key: &str, plugin: &str, kind: &str| {
        let path = acc
            .registered_use
            .get(key)
            .cloned()
            .unwrap_or_else(FieldPath::root);
        init_error(
            plugin,
            &path,
            format!(
                "want args to be of type {kind}, got <nil> (kube-scheduler v1.22 runs {plugin} only with \
                 arguments from a custom predicate or priority)"
            ),
        )
    };
    if has("NodeLabel") {
        match &args.node_label {
            None => {
                let key = if acc.registered_use.contains_key(NODE_LABEL_PREDICATE) {
                    NODE_LABEL_PREDICATE
                } else {
                    NODE_LABEL_PRIORITY
                };
                return Err(missing(key, "NodeLabel", "NodeLabelArgs"));
            }
            Some(a) => {
                if let Err(detail) = a.validate() {
                    let o = &acc.node_label_origins;
                    let path = first_conflict(&a.present_labels, &a.absent_labels, &o.absent)
                        .or_else(|| {
                            first_conflict(
                                &a.present_labels_preference,
                                &a.absent_labels_preference,
                                &o.absent_preference,
                            )
                        })
                        .unwrap_or_else(FieldPath::root);
                    return Err(init_error("NodeLabel", &path, detail.to_string()));
                }
            }
        }
    }
    if has("ServiceAffinity") && args.service_affinity.is_none() {
        return Err(missing(
            SERVICE_AFFINITY_PREDICATE,
            "ServiceAffinity",
            "ServiceAffinityArgs",
        ));
    }
    if has("RequestedToCapacityRatio") {
        match &acc.requested_to_capacity_ratio {
            None => {
                return Err(missing(
                    REQUESTED_TO_CAPACITY_RATIO_PRIORITY,
                    "RequestedToCapacityRatio",
                    "RequestedToCapacityRatioArgs",
                ));
            }
            Some((a, path)) => {
                a.validate().map_err(|detail| {
                    init_error("RequestedToCapacityRatio", path, detail.to_string())
                })?;
                if a.resources.is_empty() {
                    warnings.push(format!(
                        "{}: requestedToCapacityRatioArguments has no resources: kube-scheduler v1.22 applies no \
                         default on the Policy path, so RequestedToCapacityRatio scores every node 0; list the \
                         resources to score, e.g. [{{\"name\":\"cpu\",\"weight\":1}},{{\"name\":\"memory\",\"weight\":1}}]",
                        src.value(path)
                    ));
                }
            }
        }
    }

    Ok(ResolvedPolicy {
        filters,
        scores,
        args,
        extenders: policy.extenders.clone(),
        always_check_all_predicates: policy.always_check_all_predicates,
        hard_pod_affinity_symmetric_weight: if hard == 0 { 1 } else { hard },
        notes,
    })
}

/// Where the first absent label that conflicts with a present one came from.
fn first_conflict(
    present: &[String],
    absent: &[String],
    origins: &[FieldPath],
) -> Option<FieldPath> {
    absent
        .iter()
        .position(|l| present.contains(l))
        .and_then(|i| origins.get(i).cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_score_keeps_first_place_and_first_weight() {
        // legacy_registry.go appendToPluginSet: the weight is assigned to a range copy, so the
        // first weight stays although the comment says "Keep the max weight".
        let mut scores = Vec::new();
        append_score(&mut scores, "SelectorSpread", 2, &["A".to_string()]);
        append_score(
            &mut scores,
            "NodeResourcesLeastAllocated",
            1,
            &["L".to_string()],
        );
        append_score(&mut scores, "SelectorSpread", 5, &["B".to_string()]);
        append_score(&mut scores, "SelectorSpread", 3, &["A".to_string()]);
        assert_eq!(scores[0].plugin, "SelectorSpread");
        assert_eq!(scores[0].weight, 2);
        assert_eq!(scores[0].legacy_names, ["A", "B"]);
        assert_eq!(scores[1].weight, 1);
    }
}
