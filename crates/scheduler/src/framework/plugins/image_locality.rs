//! `ImageLocality` (legacy priority `ImageLocalityPriority`): favours nodes that already have the
//! pod's container images, weighing each image by its size and by how widely it is spread.
//!
//! Per node: `sum = Σ over the pod's containers whose image the node has of
//! size × (nodes with the image / all nodes)` (each term truncated to an integer); clamped to
//! `[23 MiB, 1000 MiB × number of containers]`; score `100 × (sum − 23 MiB) / (max − 23 MiB)`.
//! Image names are normalized by appending `:latest` when they carry no tag. Init containers do
//! not count (v1.22).
//!
//! Follows kubernetes/kubernetes `pkg/scheduler/framework/plugins/imagelocality/image_locality.go`
//! as of v1.19–v1.25: the maximum became `maxContainerThreshold × numContainers` with
//! kubernetes/kubernetes#91138 (merged for v1.19); init containers count only from v1.26. The
//! per-image node count and size come from the [`Snapshot`], kept incrementally on node
//! add/update/remove ([`Snapshot::image_state`]). Deviation: v1.22 copies an image's node count
//! into each node's `ImageStates` when that node is added or updated, so a node's copy can lag
//! behind nodes added later; mini-scheduler always uses the current count.
//!
//! PreScore answers `Uniform` when every node must get the same score: the sum of a node lies
//! between that of the images every node has and that of all the images any node has, and
//! `calculatePriority` is monotonic, so equal scores at both ends mean equal scores everywhere.

use crate::framework::{CycleState, MAX_NODE_SCORE, ScoreMode, ScorePlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
/// `minThreshold`: 23 MiB.
pub const MIN_THRESHOLD: i64 = 23 * MB;
/// `maxContainerThreshold`: 1000 MiB per container.
pub const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// CycleState key of the PreScore state.
const PRE_SCORE_STATE_KEY: &str = "PreScoreImageLocality";

/// The ImageLocality score plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct ImageLocality;

/// Per pod: the spread-scaled scores of the containers' images that every node of the snapshot
/// has (summed: the same on every node), each other container's normalized image with its
/// spread-scaled score (images no node has are left out), and the number of containers.
struct PreScoreState {
    everywhere: i64,
    images: Vec<(String, i64)>,
    num_containers: usize,
}

impl PreScoreState {
    /// `calculatePriority(sumImageScores(...))` of `node`.
    fn score(&self, node: &NodeInfo) -> i64 {
        let sum = self
            .images
            .iter()
            .filter(|(name, _)| has_image(node, name))
            .map(|(_, score)| *score)
            .fold(self.everywhere, i64::saturating_add);
        calculate_priority(sum, self.num_containers)
    }
}

/// `normalizedImageName`: append `:latest` when the name has no tag (no `:` after the last `/`).
pub fn normalized_image_name(name: &str) -> String {
    let colon = name.rfind(':').map_or(-1, |i| i as i64);
    let slash = name.rfind('/').map_or(-1, |i| i as i64);
    if colon <= slash {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

/// `scaledImageScore`: `int64(float64(size) × numNodes / totalNodes)`.
fn scaled_image_score(size: i64, num_nodes: usize, total_nodes: usize) -> i64 {
    let spread = num_nodes as f64 / total_nodes as f64;
    (size as f64 * spread) as i64
}

/// `calculatePriority`.
pub fn calculate_priority(sum_scores: i64, num_containers: usize) -> i64 {
    let max_threshold = MAX_CONTAINER_THRESHOLD.saturating_mul(num_containers as i64);
    let sum = if sum_scores < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum_scores > max_threshold {
        max_threshold
    } else {
        sum_scores
    };
    if max_threshold == MIN_THRESHOLD {
        return 0;
    }
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

/// Whether `node` lists image `name` (its names are sorted).
fn has_image(node: &NodeInfo, name: &str) -> bool {
    node.images
        .binary_search_by(|(n, _)| n.as_str().cmp(name))
        .is_ok()
}

impl ScorePlugin for ImageLocality {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        // The pod being scheduled is pending: its images are kept (`PodInfo::container_images`).
        let containers = pod.container_images();
        let num_containers = containers.len();
        let total = snapshot.len();
        let mut images = Vec::new();
        let mut everywhere = 0i64;
        for image in containers {
            let name = normalized_image_name(image);
            if let Some(st) = snapshot.image_state(&name) {
                let score = scaled_image_score(st.size, st.num_nodes, total);
                if st.num_nodes >= total {
                    everywhere = everywhere.saturating_add(score);
                } else {
                    images.push((name, score));
                }
            }
        }
        // Every node's sum lies between the images all nodes have and all the images any node
        // has; `calculatePriority` is monotonic, so when both ends give the same score (nothing
        // any node has, too little to pass the minimum, only images every node has, or more
        // than the maximum anyway) every node gets it.
        let lowest = calculate_priority(everywhere, num_containers);
        let best = images
            .iter()
            .map(|(_, s)| *s)
            .fold(everywhere, i64::saturating_add);
        if calculate_priority(best, num_containers) == lowest {
            return Ok(ScoreMode::Uniform(lowest));
        }
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                everywhere,
                images,
                num_containers,
            },
        );
        Ok(ScoreMode::PerNode)
    }

    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(read_state(state)?.score(node))
    }

    /// [`ScorePlugin::score`] over the feasible nodes, reading the PreScore state once.
    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let s = read_state(state)?;
        super::score_feasible(snapshot, feasible, out, |n| s.score(n));
        Ok(())
    }
}

fn read_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state
        .read::<PreScoreState>(PRE_SCORE_STATE_KEY)
        .ok_or_else(|| {
            Status::error(format!(
                "error reading {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
            ))
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{NodeB, PodB, node, pod};

    /// `makeImageNode(name, status)` with `images` given as `(names, size in MiB)`.
    fn image_node(name: &str, images: &[(&[&str], i64)]) -> NodeB {
        let mut n = node(name);
        for (names, mb) in images {
            n = n.image(names, mb * MB);
        }
        n
    }

    fn pod_with(images: &[&str]) -> PodB {
        let mut p = pod("p");
        for i in images {
            p = p.image(i);
        }
        p
    }

    /// Scores of `pod` on `nodes` (upstream harness: snapshot of the nodes, `Score` per node),
    /// through PreScore (a `Uniform` result stands for every node) and `score_nodes`.
    fn scores(pod: PodB, nodes: Vec<NodeB>) -> Vec<i64> {
        let mut snap = Snapshot::new();
        let names: Vec<String> = nodes
            .iter()
            .map(|n| n.0.metadata.name.clone().unwrap())
            .collect();
        for n in nodes {
            snap.add_node(n.info()).unwrap();
        }
        let feasible: Vec<u32> = names.iter().map(|n| snap.node_index(n).unwrap()).collect();
        let pi = pod.info();
        let mut state = CycleState::new();
        let mut out = vec![0; feasible.len()];
        match ImageLocality
            .pre_score(&mut state, &pi, &snap, &feasible)
            .unwrap()
        {
            ScoreMode::Uniform(v) => out.fill(v),
            ScoreMode::PerNode => ImageLocality
                .score_nodes(&state, &pi, &snap, &feasible, &mut out)
                .unwrap(),
        }
        out
    }

    /// Upstream `imagelocality/image_locality_test.go` `TestImageLocalityPriority`, read from a
    /// post-1.26 copy (index id 299972038) whose expectations carry the
    /// `maxContainerThreshold × numContainers` rule v1.22 already has; its init-container row
    /// (v1.26+: init containers count) is not ported.
    #[test]
    fn test_image_locality_priority() {
        const NODE_40_300_2000: &[(&[&str], i64)] = &[
            (&["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
            (&["gcr.io/300:latest", "gcr.io/300:v1"], 300),
            (&["gcr.io/2000:latest"], 2000),
        ];
        const NODE_250_10: &[(&[&str], i64)] = &[
            (&["gcr.io/250:latest"], 250),
            (&["gcr.io/10:latest", "gcr.io/10:v1"], 10),
        ];
        const NODE_600_40_900: &[(&[&str], i64)] = &[
            (&["gcr.io/600:latest"], 600),
            (&["gcr.io/40:latest"], 40),
            (&["gcr.io/900:latest"], 900),
        ];
        const NODE_300_600_900: &[(&[&str], i64)] = &[
            (&["gcr.io/300:latest"], 300),
            (&["gcr.io/600:latest"], 600),
            (&["gcr.io/900:latest"], 900),
        ];
        const NODE_4000_30: &[(&[&str], i64)] =
            &[(&["gcr.io/4000:latest"], 4000), (&["gcr.io/30:latest"], 30)];
        const NODE_20_30_40: &[(&[&str], i64)] = &[
            (&["gcr.io/20:latest"], 20),
            (&["gcr.io/30:latest"], 30),
            (&["gcr.io/40:latest"], 40),
        ];
        const NO_IMAGES: &[(&[&str], i64)] = &[];
        let cases: Vec<(&str, PodB, Vec<NodeB>, Vec<i64>)> = vec![
            (
                "two images spread on two nodes, prefer the larger image one",
                pod_with(&["gcr.io/40", "gcr.io/250"]),
                vec![
                    image_node("node1", NODE_40_300_2000),
                    image_node("node2", NODE_250_10),
                ],
                vec![0, 5],
            ),
            (
                "two images on one node, prefer this node",
                pod_with(&["gcr.io/40", "gcr.io/300"]),
                vec![
                    image_node("node1", NODE_40_300_2000),
                    image_node("node2", NODE_250_10),
                ],
                vec![7, 0],
            ),
            (
                "if exceed limit, use limit",
                pod_with(&["gcr.io/4000", "gcr.io/10"]),
                vec![
                    image_node("node1", NODE_4000_30),
                    image_node("node2", NODE_250_10),
                ],
                vec![MAX_NODE_SCORE, 0],
            ),
            (
                "if exceed limit, use limit (with node which has no images present)",
                pod_with(&["gcr.io/4000", "gcr.io/10"]),
                vec![
                    image_node("node1", NODE_4000_30),
                    image_node("node2", NODE_250_10),
                    image_node("node3", NO_IMAGES),
                ],
                vec![66, 0, 0],
            ),
            (
                "pod with multiple large images, node2 is preferred",
                pod_with(&["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
                vec![
                    image_node("node1", NODE_600_40_900),
                    image_node("node2", NODE_300_600_900),
                    image_node("node3", NO_IMAGES),
                ],
                vec![32, 36, 0],
            ),
            (
                "pod with multiple small images",
                pod_with(&["gcr.io/30", "gcr.io/40"]),
                vec![
                    image_node("node1", NODE_20_30_40),
                    image_node("node2", NODE_4000_30),
                ],
                vec![1, 0],
            ),
        ];
        for (name, p, nodes, want) in cases {
            assert_eq!(scores(p, nodes), want, "{name}");
        }
    }

    /// Images every node has add the same amount on every node: a pod whose images all are
    /// everywhere scores the same on every node (PreScore `Uniform`, no per-node work), and in
    /// a mix they still count on every node.
    #[test]
    fn images_on_every_node_score_uniformly() {
        let nodes = || {
            vec![
                image_node("node1", &[(&["gcr.io/300:latest"], 300)]),
                image_node(
                    "node2",
                    &[(&["gcr.io/300:latest"], 300), (&["gcr.io/250:latest"], 250)],
                ),
            ]
        };
        let mut snap = Snapshot::new();
        for n in nodes() {
            snap.add_node(n.info()).unwrap();
        }
        // 300 MiB on 2 of 2 nodes: 100 × (300 − 23) / (1000 − 23) = 28 everywhere.
        let pi = pod_with(&["gcr.io/300"]).info();
        let mode = ImageLocality
            .pre_score(&mut CycleState::new(), &pi, &snap, &[0, 1])
            .unwrap();
        assert_eq!(mode, ScoreMode::Uniform(28));
        assert_eq!(scores(pod_with(&["gcr.io/300"]), nodes()), [28, 28]);
        // With 250 MiB on 1 of 2 nodes (125 MiB scaled), max 2000 MiB:
        // node1 100 × (300 − 23) / 1977 = 14, node2 100 × (425 − 23) / 1977 = 20.
        assert_eq!(
            scores(pod_with(&["gcr.io/300", "gcr.io/250"]), nodes()),
            [14, 20]
        );
    }

    /// Upstream `TestNormalizedImageName`.
    #[test]
    fn test_normalized_image_name() {
        let digest = "sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2";
        for (name, input, output) in [
            ("add :latest postfix 1", "root", "root:latest".to_string()),
            (
                "add :latest postfix 2",
                "gcr.io:5000/root",
                "gcr.io:5000/root:latest".to_string(),
            ),
            ("keep it as is 1", "root:tag", "root:tag".to_string()),
            (
                "keep it as is 2",
                &*format!("root@{digest}"),
                format!("root@{digest}"),
            ),
        ] {
            assert_eq!(normalized_image_name(input), output, "{name}");
        }
    }

    /// The snapshot keeps the per-image node count and first-reported size across node
    /// add / update / remove, as the scheduler cache's `imageStates`.
    #[test]
    fn image_states_follow_node_changes() {
        let mut snap = Snapshot::new();
        snap.add_node(image_node("a", &[(&["img:1"], 10)]).info())
            .unwrap();
        snap.add_node(image_node("b", &[(&["img:1", "img:latest"], 20)]).info())
            .unwrap();
        let st = snap.image_state("img:1").unwrap();
        assert_eq!((st.size, st.num_nodes), (10 * MB, 2));
        assert_eq!(snap.image_state("img:latest").unwrap().num_nodes, 1);
        // b drops img:1.
        snap.update_node(image_node("b", &[(&["img:latest"], 20)]).info());
        assert_eq!(snap.image_state("img:1").unwrap().num_nodes, 1);
        snap.remove_node("a").unwrap();
        assert!(snap.image_state("img:1").is_none());
        assert_eq!(snap.image_state("img:latest").unwrap().num_nodes, 1);
    }
}
