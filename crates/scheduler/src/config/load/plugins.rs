//! The plugins a configuration can name: their extension points, each version's defaults, and
//! kube-scheduler's merging of a profile's plugin sets.

use super::*;
use crate::framework::plugins as gpu;

/// Extension points, in `Plugins` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Point {
    PreEnqueue,
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
    PostBind,
}

pub(super) const POINTS: [Point; 12] = [
    Point::PreEnqueue,
    Point::QueueSort,
    Point::PreFilter,
    Point::Filter,
    Point::PostFilter,
    Point::PreScore,
    Point::Score,
    Point::Reserve,
    Point::Permit,
    Point::PreBind,
    Point::Bind,
    Point::PostBind,
];

impl Point {
    pub(super) fn key(self) -> &'static str {
        match self {
            Point::PreEnqueue => "preEnqueue",
            Point::QueueSort => "queueSort",
            Point::PreFilter => "preFilter",
            Point::Filter => "filter",
            Point::PostFilter => "postFilter",
            Point::PreScore => "preScore",
            Point::Score => "score",
            Point::Reserve => "reserve",
            Point::Permit => "permit",
            Point::PreBind => "preBind",
            Point::Bind => "bind",
            Point::PostBind => "postBind",
        }
    }

    pub(super) fn set(self, p: &Plugins) -> Option<&PluginSet> {
        match self {
            Point::PreEnqueue => p.pre_enqueue.as_ref(),
            Point::QueueSort => p.queue_sort.as_ref(),
            Point::PreFilter => p.pre_filter.as_ref(),
            Point::Filter => p.filter.as_ref(),
            Point::PostFilter => p.post_filter.as_ref(),
            Point::PreScore => p.pre_score.as_ref(),
            Point::Score => p.score.as_ref(),
            Point::Reserve => p.reserve.as_ref(),
            Point::Permit => p.permit.as_ref(),
            Point::PreBind => p.pre_bind.as_ref(),
            Point::Bind => p.bind.as_ref(),
            Point::PostBind => p.post_bind.as_ref(),
        }
    }
}

pub(super) use Point::{
    Bind, Filter, PostFilter, PreBind, PreFilter, PreScore, QueueSort, Reserve, Score,
};

/// Plugins mini-scheduler runs from a configuration, with the extension points each has in
/// kube-scheduler (used to expand `multiPoint`).
pub(super) const PLUGINS: &[(&str, &[Point])] = &[
    ("PrioritySort", &[QueueSort]),
    ("NodeUnschedulable", &[Filter]),
    ("NodeName", &[Filter]),
    ("TaintToleration", &[Filter, PreScore, Score]),
    ("NodeAffinity", &[PreFilter, Filter, PreScore, Score]),
    ("NodePorts", &[PreFilter, Filter]),
    ("NodeResourcesFit", &[PreFilter, Filter, Score]),
    ("VolumeRestrictions", &[PreFilter, Filter]),
    ("EBSLimits", &[Filter]),
    ("GCEPDLimits", &[Filter]),
    ("NodeVolumeLimits", &[Filter]),
    ("AzureDiskLimits", &[Filter]),
    ("CinderLimits", &[Filter]),
    ("VolumeBinding", &[PreFilter, Filter, Reserve, PreBind]),
    ("VolumeZone", &[Filter]),
    ("PodTopologySpread", &[PreFilter, Filter, PreScore, Score]),
    ("InterPodAffinity", &[PreFilter, Filter, PreScore, Score]),
    ("DefaultPreemption", &[PostFilter]),
    ("NodeResourcesBalancedAllocation", &[Score]),
    ("ImageLocality", &[Score]),
    ("SelectorSpread", &[PreScore, Score]),
    ("DefaultBinder", &[Bind]),
    // This project's GPU-sharing score plugins (issue 14; no upstream counterpart, so no
    // version removes them). The Policy path registers them as `BestFitPriority`,
    // `GpuFragmentationPriority`, …; `policy convert` writes these names. The `GpuShare`
    // filter is not listed: every framework appends it (`Framework::from_policy`).
    (gpu::gpu_best_fit::NAME, &[Score]),
    (gpu::gpu_clustering::NAME, &[Score]),
    (gpu::gpu_dot_product::NAME, &[Score]),
    (gpu::gpu_packing::NAME, &[Score]),
    (gpu::gpu_fgd::NAME, &[Score]),
    (gpu::gpu_fgd::NAME_STRANDING, &[Score]),
    (gpu::gpu_fgd::NAME_FINE, &[Score]),
    (gpu::gpu_fgd_cpu::NAME, &[Score]),
    (gpu::gpu_fgd_cpu::NAME_INSTANCES, &[Score]),
];

/// Plugins of later kube-scheduler releases that mini-scheduler does not implement.
pub(super) const NOT_IMPLEMENTED: &[&str] = &[
    "SchedulingGates",
    "DynamicResources",
    "NodeDeclaredFeatures",
    "GangScheduling",
];

/// kube-scheduler v1.22's v1beta2 default plugins per point (score weights in `Score`).
pub(super) fn v1beta2_defaults(point: Point) -> Vec<Plugin> {
    let names: &[&str] = match point {
        QueueSort => &["PrioritySort"],
        PreFilter => &[
            "NodeResourcesFit",
            "NodePorts",
            "VolumeRestrictions",
            "PodTopologySpread",
            "InterPodAffinity",
            "VolumeBinding",
            "NodeAffinity",
        ],
        Filter => &[
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
            "InterPodAffinity",
        ],
        PostFilter => &["DefaultPreemption"],
        PreScore => &[
            "InterPodAffinity",
            "PodTopologySpread",
            "TaintToleration",
            "NodeAffinity",
        ],
        Score => {
            return [
                ("NodeResourcesBalancedAllocation", 1),
                ("ImageLocality", 1),
                ("InterPodAffinity", 1),
                ("NodeResourcesFit", 1),
                ("NodeAffinity", 1),
                ("PodTopologySpread", 2),
                ("TaintToleration", 1),
            ]
            .into_iter()
            .map(|(n, w)| Plugin {
                name: n.into(),
                weight: Some(w),
            })
            .collect();
        }
        Reserve | PreBind => &["VolumeBinding"],
        Bind => &["DefaultBinder"],
        _ => &[],
    };
    names.iter().map(|n| Plugin::named(n)).collect()
}

/// The `multiPoint` defaults of v1beta3 (kube-scheduler v1.23) and v1. For v1 the list is that
/// of kube-scheduler v1.31 and later without the cloud volume limit plugins (v1 refuses them)
/// and without `SchedulingGates` (PreEnqueue), which mini-scheduler does not implement (a
/// warning says so).
pub(super) fn multi_point_defaults(v: ConfigVersion) -> Vec<Plugin> {
    let mut list: Vec<(&str, i32)> = vec![
        ("PrioritySort", 0),
        ("NodeUnschedulable", 0),
        ("NodeName", 0),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodePorts", 0),
        ("NodeResourcesFit", 1),
        ("VolumeRestrictions", 0),
        ("EBSLimits", 0),
        ("GCEPDLimits", 0),
        ("NodeVolumeLimits", 0),
        ("AzureDiskLimits", 0),
        ("VolumeBinding", 0),
        ("VolumeZone", 0),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DefaultPreemption", 0),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("DefaultBinder", 0),
    ];
    if v == ConfigVersion::V1 {
        list.retain(|(n, _)| removed_in(n, v).is_none());
    }
    list.into_iter()
        .map(|(n, w)| Plugin {
            name: n.into(),
            weight: (w > 0).then_some(w),
        })
        .collect()
}

/// `mergePluginSet`: defaults minus the disabled (`*` = all), an enabled default replaced in
/// place, the other enabled plugins appended in order.
pub(super) fn merge(defaults: Vec<Plugin>, custom: Option<&PluginSet>) -> Vec<Plugin> {
    let Some(custom) = custom else {
        return defaults;
    };
    let all = custom.disabled.iter().any(|p| p.name == "*");
    let mut out: Vec<Plugin> = if all {
        Vec::new()
    } else {
        defaults
            .into_iter()
            .filter(|d| !custom.disabled.iter().any(|x| x.name == d.name))
            .collect()
    };
    let kept = out.len();
    for e in &custom.enabled {
        match out[..kept].iter_mut().find(|d| d.name == e.name) {
            Some(d) => *d = e.clone(),
            None => out.push(e.clone()),
        }
    }
    out
}

pub(super) fn implements(name: &str, point: Point) -> bool {
    PLUGINS
        .iter()
        .any(|(n, points)| *n == name && points.contains(&point))
}

pub(super) fn static_name(name: &str) -> Option<&'static str> {
    PLUGINS.iter().map(|(n, _)| *n).find(|n| *n == name)
}
