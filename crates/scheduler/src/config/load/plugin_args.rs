//! `pluginConfig`: each plugin's arguments decoded strictly as its `Args` type, defaulted and
//! checked, and what mini-scheduler does not implement refused.

use super::*;

impl Validator<'_, '_> {
    /// `pluginConfig`: each name known, no duplicates, args of the plugin's type with its
    /// defaults.
    pub(super) fn plugin_args(
        &mut self,
        p: &KubeSchedulerProfile,
        pp: &FieldPath,
    ) -> Option<ProfileArgs> {
        let mut out = ProfileArgs {
            plugin_args: PluginArgs {
                pod_topology_spread: Some(PtsArgs {
                    defaulting_type: DefaultingType::System,
                }),
                ..PluginArgs::default()
            },
            fit_strategy: "LeastAllocated".into(),
        };
        let before = self.errors.len();
        let mut seen: Vec<&str> = Vec::new();
        for (j, pc) in p.plugin_config.iter().enumerate() {
            let path = pp.clone().key("pluginConfig").index(j);
            if seen.contains(&pc.name.as_str()) {
                self.error(&path, format!("Duplicate value: {:?}", pc.name));
                continue;
            }
            seen.push(&pc.name);
            let args_path = path.clone().key("args");
            let raw = pc
                .args
                .clone()
                .unwrap_or(serde_yaml::Value::Mapping(Default::default()));
            let raw = strip_type_meta(raw);
            match pc.name.as_str() {
                "NodeResourcesFit" => {
                    if let Some(a) = self.typed::<NodeResourcesFitArgs>(raw, &args_path) {
                        self.fit_args(a, &args_path, &mut out);
                    }
                }
                "InterPodAffinity" => {
                    if let Some(a) = self.typed::<InterPodAffinityArgsV>(raw, &args_path) {
                        let w = a.hard_pod_affinity_weight.unwrap_or(1);
                        if !(0..=100).contains(&w) {
                            self.error(
                                &args_path.clone().key("hardPodAffinityWeight"),
                                format!("Invalid value: {w}: not in valid range [0, 100]"),
                            );
                        }
                        if a.ignore_preferred_terms_of_existing_pods == Some(true) {
                            self.error(
                                &args_path.clone().key("ignorePreferredTermsOfExistingPods"),
                                "true is not supported yet by mini-scheduler",
                            );
                        }
                        out.plugin_args.inter_pod_affinity = IpaArgs {
                            hard_pod_affinity_weight: w,
                        };
                    }
                }
                "PodTopologySpread" => {
                    if let Some(a) = self.typed::<PodTopologySpreadArgs>(raw, &args_path) {
                        let t = match a.defaulting_type.as_deref() {
                            None | Some("System") => DefaultingType::System,
                            Some("List") => DefaultingType::List,
                            Some(other) => {
                                self.error(
                                    &args_path.clone().key("defaultingType"),
                                    format!("Unsupported value: {other:?}: supported values: \"List\", \"System\""),
                                );
                                DefaultingType::System
                            }
                        };
                        if !a.default_constraints.is_empty() {
                            if t == DefaultingType::System {
                                self.error(
                                    &args_path.clone().key("defaultConstraints"),
                                    "Invalid value: when .defaultingType is \"System\", .defaultConstraints must be empty",
                                );
                            } else {
                                self.error(
                                    &args_path.clone().key("defaultConstraints"),
                                    "defaultConstraints are not supported yet by mini-scheduler (only none, or defaultingType: System)",
                                );
                            }
                        }
                        out.plugin_args.pod_topology_spread = Some(PtsArgs { defaulting_type: t });
                    }
                }
                "NodeAffinity" => {
                    if let Some(a) = self.typed::<NodeAffinityArgsV>(raw, &args_path)
                        && a.added_affinity.is_some()
                    {
                        self.error(
                            &args_path.clone().key("addedAffinity"),
                            "addedAffinity is not supported yet by mini-scheduler",
                        );
                    }
                }
                "NodeResourcesBalancedAllocation" => {
                    if let Some(a) = self.typed::<ResourcesArgsV>(raw, &args_path) {
                        let ok = a.resources.is_empty()
                            || (a.resources.len() == 2
                                && a.resources.iter().all(|r| {
                                    (r.name == "cpu" || r.name == "memory") && r.weight == 1
                                })
                                && a.resources[0].name != a.resources[1].name);
                        if !ok {
                            self.error(
                                &args_path.clone().key("resources"),
                                "only cpu and memory (weight 1, the default) are supported by mini-scheduler's \
                                 BalancedAllocation",
                            );
                        }
                    }
                }
                "DefaultPreemption" => {
                    if let Some(a) = self.typed::<DefaultPreemptionArgsV>(raw, &args_path) {
                        let pct = a.min_candidate_nodes_percentage.unwrap_or(10);
                        let abs = a.min_candidate_nodes_absolute.unwrap_or(100);
                        if !(0..=100).contains(&pct) {
                            self.error(
                                &args_path.clone().key("minCandidateNodesPercentage"),
                                format!("Invalid value: {pct}: not in valid range [0, 100]"),
                            );
                        }
                        if abs < 0 {
                            self.error(
                                &args_path.clone().key("minCandidateNodesAbsolute"),
                                format!("Invalid value: {abs}: not in valid range [0, inf)"),
                            );
                        }
                        if pct == 0 && abs == 0 {
                            self.error(
                                &args_path.clone().key("minCandidateNodesPercentage"),
                                "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                            );
                        }
                        let args = crate::policy::DefaultPreemptionArgs {
                            enabled: true,
                            min_candidate_nodes_percentage: pct,
                            min_candidate_nodes_absolute: abs,
                        };
                        // v1.22's defaults stay `None`, as a Policy leaves them.
                        out.plugin_args.default_preemption = (args
                            != crate::policy::DefaultPreemptionArgs::default())
                        .then_some(args);
                    }
                }
                "VolumeBinding" => {
                    if let Some(a) = self.typed::<VolumeBindingArgsV>(raw, &args_path) {
                        if a.bind_timeout_seconds.is_some_and(|s| s != 600) {
                            self.error(
                                &args_path.clone().key("bindTimeoutSeconds"),
                                "only the default 600 is supported by mini-scheduler",
                            );
                        }
                        if a.shape.is_some() {
                            self.error(
                                &args_path.clone().key("shape"),
                                "shape (VolumeCapacityPriority scoring) is not supported yet by mini-scheduler",
                            );
                        }
                    }
                }
                name if removed_in(name, self.version).is_some()
                    || RESOURCE_SCORERS.iter().any(|(n, _)| *n == name) =>
                {
                    let since = removed_in(name, self.version)
                        .map_or(ConfigVersion::V1beta2, |(_, s, _)| *s);
                    self.error(
                        &path,
                        format!(
                            "Invalid value: {name:?}: was removed in version \"{}\" (KubeSchedulerConfiguration is version \"{}\")",
                            since.api_version(),
                            self.version.api_version()
                        ),
                    );
                }
                name if static_name(name).is_some() => {
                    // A plugin without arguments: only an empty object.
                    if !matches!(&raw, serde_yaml::Value::Mapping(m) if m.is_empty())
                        && !raw.is_null()
                    {
                        self.error(&args_path, format!("plugin {name:?} takes no arguments"));
                    }
                }
                name => {
                    let suggestion = nearest(name, PLUGINS.iter().map(|(n, _)| *n))
                        .map(|s| format!("; did you mean {s:?}?"))
                        .unwrap_or_default();
                    self.error(
                        &path.clone().key("name"),
                        format!("plugin {name:?} does not exist{suggestion}"),
                    );
                }
            }
        }
        (self.errors.len() == before).then_some(out)
    }

    pub(super) fn fit_args(
        &mut self,
        a: NodeResourcesFitArgs,
        path: &FieldPath,
        out: &mut ProfileArgs,
    ) {
        if !a.ignored_resource_groups.is_empty() {
            self.error(
                &path.clone().key("ignoredResourceGroups"),
                "ignoredResourceGroups is not supported yet by mini-scheduler (list the resources in ignoredResources)",
            );
        }
        out.plugin_args.node_resources_fit = FitArgs {
            ignored_resources: a.ignored_resources,
        };
        let Some(s) = a.scoring_strategy else {
            return;
        };
        let sp = path.clone().key("scoringStrategy");
        let resources = if s.resources.is_empty() {
            vec![
                ResourceSpec {
                    name: "cpu".into(),
                    weight: 1,
                },
                ResourceSpec {
                    name: "memory".into(),
                    weight: 1,
                },
            ]
        } else {
            s.resources.clone()
        };
        for (k, r) in resources.iter().enumerate() {
            if !(1..=100).contains(&r.weight) {
                self.error(
                    &sp.clone().key("resources").index(k).key("weight"),
                    format!(
                        "Invalid value: {}: resource weight of {} not in valid range (0, 100]",
                        r.weight, r.name
                    ),
                );
            }
        }
        match s.type_.as_str() {
            "" | "LeastAllocated" | "MostAllocated" => {
                let equal_cpu_mem = resources.len() == 2
                    && resources[0].name != resources[1].name
                    && resources.iter().all(|r| r.name == "cpu" || r.name == "memory")
                    && resources[0].weight == resources[1].weight;
                if !equal_cpu_mem {
                    self.error(
                        &sp.clone().key("resources"),
                        "mini-scheduler's LeastAllocated / MostAllocated scoring weighs cpu and memory \
                         equally: list exactly cpu and memory with the same weight (or none)",
                    );
                }
                if s.requested_to_capacity_ratio.is_some() {
                    self.error(
                        &sp.clone().key("requestedToCapacityRatio"),
                        format!("Invalid value: only valid when type is RequestedToCapacityRatio, not {:?}", s.type_),
                    );
                }
                out.fit_strategy = if s.type_.is_empty() {
                    "LeastAllocated".into()
                } else {
                    s.type_.clone()
                };
            }
            "RequestedToCapacityRatio" => {
                let Some(r) = s.requested_to_capacity_ratio else {
                    self.error(
                        &sp.clone().key("requestedToCapacityRatio"),
                        "Required value: must be specified when type is RequestedToCapacityRatio",
                    );
                    return;
                };
                let args = RequestedToCapacityRatioArgs {
                    shape: r.shape,
                    resources,
                };
                if let Err(e) = args.validate() {
                    self.error(&sp.clone().key("requestedToCapacityRatio"), e.to_string());
                }
                out.plugin_args.requested_to_capacity_ratio = Some(args);
                out.fit_strategy = s.type_.clone();
            }
            other => self.error(
                &sp.clone().key("type"),
                format!(
                    "Unsupported value: {other:?}: supported values: \"LeastAllocated\", \"MostAllocated\", \
                     \"RequestedToCapacityRatio\""
                ),
            ),
        }
    }

    /// Decodes plugin arguments strictly into `T`, reporting the error at the arguments.
    pub(super) fn typed<T: DeserializeOwned>(
        &mut self,
        raw: serde_yaml::Value,
        path: &FieldPath,
    ) -> Option<T> {
        match serde_yaml::from_value::<T>(raw) {
            Ok(v) => Some(v),
            Err(e) => {
                let msg = with_suggestion(strip_position(&e.to_string()));
                let at = match msg
                    .strip_prefix("unknown field `")
                    .and_then(|r| r.split('`').next())
                {
                    Some(field) => {
                        let mut p = path.clone();
                        p.0.push(Seg::Key(field.to_string(), 0));
                        p
                    }
                    None => path.clone(),
                };
                let location = self.src.key(&at);
                self.errors.push((location, format!("{path}: {msg}")));
                None
            }
        }
    }
}

/// Drops `apiVersion` / `kind` from plugin arguments (allowed upstream, e.g. `kind:
/// NodeResourcesFitArgs`).
pub(super) fn strip_type_meta(v: serde_yaml::Value) -> serde_yaml::Value {
    match v {
        serde_yaml::Value::Mapping(mut m) => {
            m.remove("apiVersion");
            m.remove("kind");
            serde_yaml::Value::Mapping(m)
        }
        other => other,
    }
}

/// `IsExtendedResourceName`: a qualified name with a domain prefix outside `kubernetes.io`,
/// not `requests.`-prefixed.
pub(super) fn is_extended_resource_name(name: &str) -> bool {
    let Some((domain, rest)) = name.split_once('/') else {
        return false;
    };
    let ok_part = |s: &str, extra: &[char]| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
            && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && s.chars().last().is_some_and(|c| c.is_ascii_alphanumeric())
    };
    ok_part(domain, &['-', '.'])
        && ok_part(rest, &['-', '_', '.'])
        && rest.len() <= 63
        && domain.len() <= 253
        && domain != "kubernetes.io"
        && !domain.ends_with(".kubernetes.io")
        && !name.starts_with("requests.")
}

/// Arguments gathered for one profile.
pub(super) struct ProfileArgs {
    pub(super) plugin_args: PluginArgs,
    /// `NodeResourcesFit`'s scoring strategy type.
    pub(super) fit_strategy: String,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InterPodAffinityArgsV {
    #[serde(default)]
    hard_pod_affinity_weight: Option<i32>,
    #[serde(default)]
    ignore_preferred_terms_of_existing_pods: Option<bool>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeAffinityArgsV {
    #[serde(default)]
    added_affinity: Option<serde_yaml::Value>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResourcesArgsV {
    #[serde(default)]
    resources: Vec<ResourceSpec>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DefaultPreemptionArgsV {
    #[serde(default)]
    min_candidate_nodes_percentage: Option<i32>,
    #[serde(default)]
    min_candidate_nodes_absolute: Option<i32>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VolumeBindingArgsV {
    #[serde(default)]
    bind_timeout_seconds: Option<i64>,
    #[serde(default)]
    shape: Option<serde_yaml::Value>,
}
