//! Test filters and frameworks shared by the cycle's tests.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use super::CycleTimings;
use crate::framework::{Code, CycleState, Framework, Status};
use crate::model::{NodeInfo, PodInfo};

/// Filters that fail by node name, for the Error-status tests below.
pub(super) struct ByName {
    name: &'static str,
    code: Code,
    nodes: &'static [&'static str],
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

impl ByName {
    pub(super) fn boxed(
        name: &'static str,
        code: Code,
        nodes: &'static [&'static str],
    ) -> Box<dyn crate::framework::FilterPlugin> {
        ByName::counted(name, code, nodes, Default::default())
    }

    pub(super) fn counted(
        name: &'static str,
        code: Code,
        nodes: &'static [&'static str],
        calls: Arc<std::sync::atomic::AtomicUsize>,
    ) -> Box<dyn crate::framework::FilterPlugin> {
        Box::new(ByName {
            name,
            code,
            nodes,
            calls,
        })
    }
}

impl crate::framework::FilterPlugin for ByName {
    fn name(&self) -> &'static str {
        self.name
    }

    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.nodes.contains(&node.name.as_str()) {
            Status::new(self.code, format!("{} says no", self.name))
        } else {
            Status::success()
        }
    }
}

pub(super) fn framework_of(
    filters: Vec<Box<dyn crate::framework::FilterPlugin>>,
    run_all_filters: bool,
) -> Framework {
    Framework {
        filters,
        scores: Vec::new(),
        run_all_filters,
    }
}

/// The status code of each extension point of [`CycleTimings`]: PreFilter, Filter, PreScore,
/// Score.
pub(super) fn codes(t: &CycleTimings) -> [Option<Code>; 4] {
    [t.pre_filter, t.filter, t.pre_score, t.score].map(|x| x.map(|(_, c)| c))
}
