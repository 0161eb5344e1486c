//! `profiles`: each profile's name, its plugins (the version's defaults merged with the
//! profile's, `multiPoint` expanded), the checks against what mini-scheduler implements, and
//! its `pluginConfig` arguments.

use super::*;

/// One enabled plugin at a point, with where the user wrote it (for messages).
#[derive(Debug, Clone)]
struct Enabled {
    plugin: Plugin,
    path: FieldPath,
}

impl Validator<'_, '_> {
    /// One profile: name, merged plugins, checks, arguments.
    pub(super) fn profile(
        &mut self,
        p: &KubeSchedulerProfile,
        i: usize,
        count: usize,
        extenders: &[LegacyExtender],
    ) -> Option<ConfigProfile> {
        let pp = FieldPath::root().key("profiles").index(i);
        let errors_before = self.errors.len();
        let scheduler_name = match p.scheduler_name.as_deref() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ if count == 1 => "default-scheduler".to_string(),
            _ => {
                self.error(&pp.clone().key("schedulerName"), "Required value");
                String::new()
            }
        };
        let profile_pct = p.percentage_of_nodes_to_score;
        if let Some(v) = profile_pct.filter(|v| !(0..=100).contains(v)) {
            self.error(
                &pp.clone().key("percentageOfNodesToScore"),
                format!("Invalid value: {v}: not in valid range [0-100]"),
            );
        }
        let plugins_path = pp.clone().key("plugins");
        let empty = Plugins::default();
        let plugins = p.plugins.as_ref().unwrap_or(&empty);
        let sets = self.expand(plugins, &plugins_path);

        // Names: known, not removed, implemented.
        let mut ok = true;
        for (point, list) in &sets {
            for e in list {
                if !self.check_name(&e.plugin.name, *point, &e.path) {
                    ok = false;
                }
            }
        }
        if !ok {
            return None;
        }
        let at = |point: Point| -> Vec<&Enabled> {
            sets.iter()
                .filter(|(p, _)| *p == point)
                .flat_map(|(_, l)| l.iter())
                .collect()
        };
        let names_at = |point: Point| -> Vec<&str> {
            at(point).iter().map(|e| e.plugin.name.as_str()).collect()
        };
        let point_path = |point: Point| plugins_path.clone().key(point.key());

        // Fixed points.
        let qs = names_at(QueueSort);
        if qs != ["PrioritySort"] {
            self.error(
                &point_path(QueueSort),
                format!(
                    "only one queue sort plugin required for profile with scheduler name {scheduler_name:?}, \
                     but got {} ({}); mini-scheduler sorts with PrioritySort",
                    qs.len(),
                    qs.join(", ")
                ),
            );
        }
        let bind = names_at(Bind);
        if bind.is_empty() && !extenders.iter().any(|e| !e.bind_verb.is_empty()) {
            self.error(
                &point_path(Bind),
                format!("at least one bind plugin is needed for profile with scheduler name {scheduler_name:?}"),
            );
        }

        // Paired points.
        let filters = names_at(Filter);
        let pre_filters = names_at(PreFilter);
        for e in at(PreFilter) {
            if !filters.contains(&e.plugin.name.as_str()) {
                self.error(
                    &e.path,
                    format!(
                        "{} runs at preFilter but not at filter: mini-scheduler runs a plugin's PreFilter \
                         together with its Filter; enable it at both",
                        e.plugin.name
                    ),
                );
            }
        }
        for e in at(Filter) {
            if PRE_FILTER_PLUGINS.contains(&e.plugin.name.as_str())
                && !pre_filters.contains(&e.plugin.name.as_str())
            {
                self.error(
                    &e.path,
                    format!(
                        "{} runs at filter but not at preFilter: its Filter needs its PreFilter's state \
                         (kube-scheduler fails every pod with it); enable it at both",
                        e.plugin.name
                    ),
                );
            }
        }
        let scores = names_at(Score);
        let pre_scores = names_at(PreScore);
        for e in at(PreScore) {
            if !scores.contains(&e.plugin.name.as_str()) {
                self.error(
                    &e.path,
                    format!(
                        "{} runs at preScore but not at score: mini-scheduler runs a plugin's PreScore \
                         together with its Score; enable it at both",
                        e.plugin.name
                    ),
                );
            }
        }
        for e in at(Score) {
            if PRE_SCORE_PLUGINS.contains(&e.plugin.name.as_str())
                && !pre_scores.contains(&e.plugin.name.as_str())
            {
                self.error(
                    &e.path,
                    format!(
                        "{} runs at score but not at preScore: its Score needs its PreScore's state \
                         (kube-scheduler fails every pod with it); enable it at both",
                        e.plugin.name
                    ),
                );
            }
        }
        let vb: Vec<bool> = [PreFilter, Filter, Reserve, PreBind]
            .iter()
            .map(|pt| names_at(*pt).contains(&"VolumeBinding"))
            .collect();
        if vb.iter().any(|b| *b) && !vb.iter().all(|b| *b) {
            self.error(
                &plugins_path,
                "VolumeBinding must run at preFilter, filter, reserve and preBind together \
                 (mini-scheduler binds a pod's volumes with the plugin that checked them)",
            );
        }
        let mut seen: Vec<(Point, &str)> = Vec::new();
        for (point, list) in &sets {
            for e in list {
                if seen.contains(&(*point, e.plugin.name.as_str())) {
                    self.error(
                        &e.path,
                        format!(
                            "plugin {:?} already registered as {:?}",
                            e.plugin.name, e.plugin.name
                        ),
                    );
                }
                seen.push((*point, e.plugin.name.as_str()));
            }
        }

        // Arguments.
        let mut args = self.plugin_args(p, &pp)?;

        // Scores.
        let mut resolved_scores = Vec::new();
        let mut total: i64 = 0;
        for e in at(Score) {
            let weight = match e.plugin.weight {
                None | Some(0) => 1,
                Some(w) if w < 0 => {
                    self.error(
                        &e.path.clone().key("weight"),
                        format!("Invalid value: {w}: a score weight must be positive"),
                    );
                    1
                }
                Some(w) => i64::from(w),
            };
            total = total.saturating_add(weight.saturating_mul(crate::framework::MAX_NODE_SCORE));
            let (plugin, shown): (&'static str, Vec<String>) =
                if e.plugin.name == "NodeResourcesFit" {
                    let internal = match args.fit_strategy.as_str() {
                        "MostAllocated" => "NodeResourcesMostAllocated",
                        "RequestedToCapacityRatio" => "RequestedToCapacityRatio",
                        _ => "NodeResourcesLeastAllocated",
                    };
                    (internal, vec!["NodeResourcesFit".to_string()])
                } else {
                    match static_name(&e.plugin.name) {
                        Some(n) => (n, Vec::new()),
                        None => continue,
                    }
                };
            resolved_scores.push(ResolvedScore {
                plugin,
                weight,
                legacy_names: shown,
            });
        }
        if total == i64::MAX {
            self.error(
                &point_path(Score),
                "total score of Score plugins could overflow",
            );
        }
        if !resolved_scores
            .iter()
            .any(|s| s.plugin == "RequestedToCapacityRatio")
        {
            args.plugin_args.requested_to_capacity_ratio = None;
        }
        let resolved_filters = at(Filter)
            .iter()
            .filter_map(|e| static_name(&e.plugin.name))
            .map(|plugin| ResolvedFilter {
                plugin,
                legacy_names: Vec::new(),
            })
            .collect();
        if self.errors.len() > errors_before {
            return None;
        }
        if !names_at(PostFilter).contains(&"DefaultPreemption") {
            let mut a = args.plugin_args.default_preemption.unwrap_or_default();
            a.enabled = false;
            args.plugin_args.default_preemption = Some(a);
        }
        let hard = args.plugin_args.inter_pod_affinity.hard_pod_affinity_weight;
        Some(ConfigProfile {
            scheduler_name,
            percentage_of_nodes_to_score: profile_pct,
            resolved: ResolvedPolicy {
                filters: resolved_filters,
                scores: resolved_scores,
                args: args.plugin_args,
                extenders: extenders.to_vec(),
                always_check_all_predicates: false,
                hard_pod_affinity_symmetric_weight: hard,
                notes: Vec::new(),
            },
        })
    }

    /// The enabled plugins per point: v1beta2 defaults merged per point; v1beta3 / v1
    /// `multiPoint` expanded (`expandMultiPointPlugins`): per point, plugins also listed
    /// explicitly first (explicit settings win), then multiPoint-only plugins, then the other
    /// explicit ones.
    fn expand(&mut self, plugins: &Plugins, path: &FieldPath) -> Vec<(Point, Vec<Enabled>)> {
        let with_paths = |point_key: &str, list: Vec<Plugin>, custom: Option<&PluginSet>| {
            list.into_iter()
                .map(|plugin| {
                    let idx =
                        custom.and_then(|c| c.enabled.iter().position(|e| e.name == plugin.name));
                    let p = match idx {
                        Some(j) => path.clone().key(point_key).key("enabled").index(j),
                        None => path.clone().key(point_key),
                    };
                    Enabled { plugin, path: p }
                })
                .collect::<Vec<_>>()
        };
        let mut out = Vec::new();
        if self.version == ConfigVersion::V1beta2 {
            for point in POINTS {
                let custom = point.set(plugins);
                let merged = merge(v1beta2_defaults(point), custom);
                out.push((point, with_paths(point.key(), merged, custom)));
            }
            return out;
        }
        let mp_custom = plugins.multi_point.as_ref();
        let gates_kept = !mp_custom.is_some_and(|c| {
            c.disabled
                .iter()
                .any(|d| d.name == "*" || d.name == "SchedulingGates")
        });
        if self.version == ConfigVersion::V1 && gates_kept {
            self.warn(
                &path.clone().key("multiPoint"),
                "kube-scheduler's v1 default SchedulingGates (PreEnqueue) is not implemented by \
                 mini-scheduler: pods with spec.schedulingGates are scheduled anyway; disable it \
                 in multiPoint to silence this",
            );
        }
        let multi = merge(multi_point_defaults(self.version), mp_custom);
        let mut mp_seen: Vec<&str> = Vec::new();
        for p in &multi {
            if mp_seen.contains(&p.name.as_str()) {
                let at = mp_custom
                    .and_then(|c| c.enabled.iter().position(|e| e.name == p.name))
                    .map_or(path.clone().key("multiPoint"), |k| {
                        path.clone().key("multiPoint").key("enabled").index(k)
                    });
                self.error(
                    &at,
                    format!("plugin {:?} already registered as {:?}", p.name, p.name),
                );
            }
            mp_seen.push(p.name.as_str());
        }
        for point in POINTS {
            let custom = point.set(plugins);
            let explicit = custom.map(|c| c.enabled.clone()).unwrap_or_default();
            let disabled_all = custom.is_some_and(|c| c.disabled.iter().any(|d| d.name == "*"));
            let mut overrides = Vec::new();
            let mut multi_only = Vec::new();
            if !disabled_all {
                for m in &multi {
                    if !implements(&m.name, point) && static_name(&m.name).is_some() {
                        continue;
                    }
                    if static_name(&m.name).is_none() {
                        // Unknown multiPoint names are reported once, at Filter.
                        if point == Filter {
                            let at = mp_custom
                                .and_then(|c| c.enabled.iter().position(|e| e.name == m.name))
                                .map_or(path.clone().key("multiPoint"), |k| {
                                    path.clone().key("multiPoint").key("enabled").index(k)
                                });
                            multi_only.push(Enabled {
                                plugin: m.clone(),
                                path: at,
                            });
                        }
                        continue;
                    }
                    if custom.is_some_and(|c| c.disabled.iter().any(|d| d.name == m.name)) {
                        continue;
                    }
                    if explicit.iter().any(|e| e.name == m.name) {
                        overrides.push(m.name.clone());
                        continue;
                    }
                    let k = mp_custom.and_then(|c| c.enabled.iter().position(|e| e.name == m.name));
                    let p = match k {
                        Some(k) => path.clone().key("multiPoint").key("enabled").index(k),
                        None => path.clone().key("multiPoint"),
                    };
                    let mut plugin = m.clone();
                    if point != Score {
                        plugin.weight = None;
                    }
                    multi_only.push(Enabled { plugin, path: p });
                }
            }
            let explicit_enabled = with_paths(point.key(), explicit, custom);
            let mut list: Vec<Enabled> = explicit_enabled
                .iter()
                .filter(|e| overrides.contains(&e.plugin.name))
                .cloned()
                .collect();
            list.extend(multi_only);
            list.extend(
                explicit_enabled
                    .into_iter()
                    .filter(|e| !overrides.contains(&e.plugin.name)),
            );
            out.push((point, list));
        }
        out
    }

    /// Whether `name` may run at `point`; reports why not.
    fn check_name(&mut self, name: &str, point: Point, path: &FieldPath) -> bool {
        let v = self.version;
        if let Some((_, since, advice)) = removed_in(name, v) {
            self.error(
                path,
                format!(
                    "Invalid value: {name:?}: was removed in version \"{}\" (KubeSchedulerConfiguration is version \"{}\"); {advice}",
                    since.api_version(),
                    v.api_version()
                ),
            );
            return false;
        }
        if let Some((_, kind)) = RESOURCE_SCORERS.iter().find(|(n, _)| *n == name) {
            self.error(
                path,
                format!(
                    "Invalid value: {name:?}: was removed in version \"{}\" (KubeSchedulerConfiguration is version \"{}\"); \
                     use NodeResourcesFit with pluginConfig scoringStrategy.type {kind}",
                    ConfigVersion::V1beta2.api_version(),
                    v.api_version()
                ),
            );
            return false;
        }
        if NOT_IMPLEMENTED.contains(&name) {
            self.error(
                path,
                format!("plugin {name:?} is not supported yet by mini-scheduler"),
            );
            return false;
        }
        if static_name(name).is_none() {
            let suggestion = nearest(name, PLUGINS.iter().map(|(n, _)| *n))
                .map(|s| format!("did you mean {s:?}? "))
                .unwrap_or_default();
            let known: Vec<&str> = PLUGINS
                .iter()
                .filter(|(n, _)| removed_in(n, v).is_none())
                .map(|(n, _)| *n)
                .collect();
            self.error(
                path,
                format!(
                    "plugin {name:?} does not exist; {suggestion}mini-scheduler implements: {}",
                    known.join(", ")
                ),
            );
            return false;
        }
        if !implements(name, point) {
            self.error(
                path,
                format!("plugin {name:?} does not extend {} plugin", point.key()),
            );
            return false;
        }
        true
    }
}
