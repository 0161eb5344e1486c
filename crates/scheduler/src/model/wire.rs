//! The partial wire form of a pod: what cluster mode decodes each pod of a watch event or a
//! LIST page into, instead of the whole `v1.Pod` (issue 12: the k8s-openapi `Pod` is ~2.5 KB of
//! mostly empty inline fields per pod, and decoding every field of it, then moving and cloning
//! it, was most of a follower's CPU).
//!
//! [`WirePod`] keeps the object's JSON text as it came (one copy of the bytes) and decodes from
//! it only the fields [`PodInfo`](super::PodInfo) reads — metadata, and of the spec the
//! containers' requests and ports, init containers, overhead, affinity, tolerations, volumes,
//! topology spread constraints, priority, schedulerName, nodeName, nodeSelector and
//! preemptionPolicy; of the status startTime and nominatedNodeName. Unknown fields (images,
//! commands, env, probes, most of the status) are skipped by serde without being built.
//!
//! The score-only inputs of the pod being scheduled — its containers' images (ImageLocality)
//! and its preferred node affinity (NodeAffinity's score) — are decoded with the scheduling
//! fields and kept beside the text ([`PodObject::container_images`],
//! [`PodObject::preferred_node_affinity`]), so scheduling a pod does not decode it whole. The
//! whole `v1.Pod` is decoded from the kept text only when something asks for it
//! ([`PodObject::get`]): the extenders' arguments, the queue's `isPodUpdated`, a status patch. A bound pod's text is dropped by
//! the cache unless an extender needs full objects, so a follower never decodes a whole pod.
//!
//! Pure serde + k8s-openapi: cluster mode (`controller/`) gives [`WirePod`] its
//! `kube::Resource` impl, so the pure core does not depend on kube.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// A pod as a watch event or a LIST page delivers it: its JSON text and the fields scheduling
/// reads, decoded from that text (see the module docs).
///
/// One pointer wide (the parts are boxed, [`WirePodParts`], read through `Deref`): a LIST page
/// of 500 pods grows its `Vec` and a watch event moves the pod by a pointer, not by the
/// ~800 bytes of the decoded fields.
#[derive(Debug, Clone)]
pub struct WirePod(Box<WirePodParts>);

/// The parts of a [`WirePod`].
#[derive(Debug, Clone)]
pub struct WirePodParts {
    /// `metadata` (whole: labels, annotations, owner references, identity).
    pub metadata: ObjectMeta,
    /// The scheduling fields of `spec` (`None` when the object has no spec).
    pub spec: Option<WirePodSpec>,
    /// The scheduling fields of `status`.
    pub status: Option<WirePodStatus>,
    /// The object: its JSON text as received, decoded on first use.
    object: PodObject,
}

impl std::ops::Deref for WirePod {
    type Target = WirePodParts;
    fn deref(&self) -> &WirePodParts {
        &self.0
    }
}

impl std::ops::DerefMut for WirePod {
    fn deref_mut(&mut self) -> &mut WirePodParts {
        &mut self.0
    }
}

/// The fields of a `v1.PodSpec` that [`PodInfo`](super::PodInfo) reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WirePodSpec {
    /// `containers`: requests and host ports.
    #[serde(default, deserialize_with = "null_as_default")]
    pub containers: Vec<WireContainer>,
    /// `initContainers`: requests.
    pub init_containers: Option<Vec<WireContainer>>,
    /// `overhead`.
    pub overhead: Option<BTreeMap<String, Quantity>>,
    /// `affinity` (whole).
    pub affinity: Option<core::Affinity>,
    /// `tolerations`.
    pub tolerations: Option<Vec<core::Toleration>>,
    /// `volumes` (whole).
    pub volumes: Option<Vec<core::Volume>>,
    /// `topologySpreadConstraints`.
    pub topology_spread_constraints: Option<Vec<core::TopologySpreadConstraint>>,
    /// `priority`.
    pub priority: Option<i32>,
    /// `schedulerName`.
    pub scheduler_name: Option<String>,
    /// `nodeName`.
    pub node_name: Option<String>,
    /// `nodeSelector`.
    pub node_selector: Option<BTreeMap<String, String>>,
    /// `preemptionPolicy`.
    pub preemption_policy: Option<String>,
}

/// The fields of a `v1.Container` that [`PodInfo`](super::PodInfo) reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireContainer {
    /// `image`, as decoded; a [`WirePod`] moves its containers' images into its object's
    /// score-only inputs ([`PodObject::container_images`]), leaving `None` here.
    pub image: Option<String>,
    /// `resources` (requests only).
    pub resources: Option<WireResources>,
    /// `ports`.
    pub ports: Option<Vec<core::ContainerPort>>,
}

/// `v1.ResourceRequirements`' requests.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WireResources {
    /// `requests`.
    pub requests: Option<BTreeMap<String, Quantity>>,
}

/// The fields of a `v1.PodStatus` that [`PodInfo`](super::PodInfo) reads.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WirePodStatus {
    /// `startTime`.
    pub start_time: Option<Time>,
    /// `nominatedNodeName`.
    pub nominated_node_name: Option<String>,
}

/// The decoded part of a [`WirePod`].
#[derive(Deserialize)]
struct Fields {
    #[serde(default)]
    metadata: ObjectMeta,
    spec: Option<WirePodSpec>,
    status: Option<WirePodStatus>,
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl WirePod {
    /// Decode a pod's JSON text.
    ///
    /// # Errors
    /// The JSON error when the text is not a JSON object with pod-shaped scheduling fields.
    pub fn from_json(json: &str) -> Result<WirePod, serde_json::Error> {
        WirePod::from_text(Box::from(json))
    }

    /// Decode the scheduling fields of `json`, which the pod keeps (not copied again).
    fn from_text(json: Box<str>) -> Result<WirePod, serde_json::Error> {
        let mut f: Fields = serde_json::from_str(&json)?;
        let score = ScoreInputs::take_from(f.spec.as_mut());
        Ok(WirePod(Box::new(WirePodParts {
            metadata: f.metadata,
            spec: f.spec,
            status: f.status,
            object: PodObject::json(json, score),
        })))
    }

    /// Decode the scheduling fields straight from `d`, keeping no object
    /// ([`PodObject::none`]): one pass over the pod's JSON, where [`WirePod`]'s `Deserialize`
    /// makes two (finding the end of the object to keep its text, then decoding from that
    /// text) and copies the text. For a pod whose object nothing reads, such as a bound pod
    /// the cache keeps without it (issue 12: the scan for the text was ~7,000 instructions
    /// of a ~23,000-instruction decode of a scheduler_perf pod). The fields, and what is an
    /// error, are those of [`WirePod::from_json`].
    ///
    /// # Errors
    /// The deserializer's error when the value is not a JSON object with pod-shaped
    /// scheduling fields.
    pub fn deserialize_without_object<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<WirePod, D::Error> {
        let f = Fields::deserialize(d)?;
        Ok(WirePod(Box::new(WirePodParts {
            metadata: f.metadata,
            spec: f.spec,
            status: f.status,
            object: PodObject::none(),
        })))
    }

    /// The wire form of a decoded `v1.Pod` (its JSON encoding, decoded back): for tests and for
    /// callers that hold the whole object.
    ///
    /// # Errors
    /// As [`WirePod::from_json`].
    pub fn from_pod(pod: &core::Pod) -> Result<WirePod, serde_json::Error> {
        WirePod::from_json(&serde_json::to_string(pod)?)
    }

    /// `namespace/name` (namespace `default` when unset, as [`PodInfo::key`](super::PodInfo::key)).
    pub fn key(&self) -> String {
        format!(
            "{}/{}",
            self.metadata.namespace.as_deref().unwrap_or("default"),
            self.metadata.name.as_deref().unwrap_or_default()
        )
    }

    /// `spec.schedulerName`, if set.
    pub fn scheduler_name(&self) -> Option<&str> {
        self.spec.as_ref()?.scheduler_name.as_deref()
    }

    /// The whole object, decoded lazily from the kept text ([`PodObject::get`]).
    pub fn object(&self) -> PodObject {
        self.object.clone()
    }
}

impl<'de> Deserialize<'de> for WirePod {
    /// Keeps the object's text ([`RawValue`]: the deserializer must be `serde_json`'s, as
    /// kube's list and watch decoding is; one copy of the bytes, kept as they are) and decodes
    /// the scheduling fields from it.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WirePod, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        WirePod::from_text(raw.into()).map_err(serde::de::Error::custom)
    }
}

/// The API object of a pod as the model keeps it ([`PodInfo::object`](super::PodInfo::object)):
/// none, a decoded `v1.Pod`, or the JSON text a watch delivered, decoded on first use (once,
/// shared by clones).
#[derive(Debug, Clone, Default)]
pub struct PodObject(Option<Arc<ObjectCell>>);

#[derive(Debug)]
struct ObjectCell {
    json: Option<Box<str>>,
    /// The score-only inputs decoded with the scheduling fields (kept with the text; a decoded
    /// object is read instead).
    score: ScoreInputs,
    pod: OnceLock<Option<Arc<core::Pod>>>,
}

/// The score-only inputs of a pod kept as text, decoded with its scheduling fields.
#[derive(Debug, Default)]
struct ScoreInputs {
    /// `spec.containers[*].image`, in order.
    images: Box<[Option<String>]>,
    /// `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    preferred_node_affinity: Vec<core::PreferredSchedulingTerm>,
}

impl ScoreInputs {
    /// Move the images out of `spec`'s containers; copy its preferred node-affinity terms
    /// (the rest of the affinity stays for [`PodInfo`](super::PodInfo)'s build).
    fn take_from(spec: Option<&mut WirePodSpec>) -> ScoreInputs {
        let Some(spec) = spec else {
            return ScoreInputs::default();
        };
        ScoreInputs {
            images: spec.containers.iter_mut().map(|c| c.image.take()).collect(),
            preferred_node_affinity: spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|na| {
                    na.preferred_during_scheduling_ignored_during_execution
                        .clone()
                })
                .unwrap_or_default(),
        }
    }
}

/// The images of a pod's containers, in order ([`PodObject::container_images`]): `""` for a
/// container without one.
#[derive(Debug, Clone)]
pub enum ContainerImages<'a> {
    /// Read from a decoded `v1.Pod`.
    Decoded(std::slice::Iter<'a, core::Container>),
    /// Read from the inputs decoded with the scheduling fields.
    Wire(std::slice::Iter<'a, Option<String>>),
}

impl<'a> Iterator for ContainerImages<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        match self {
            ContainerImages::Decoded(it) => it.next().map(|c| c.image.as_deref().unwrap_or("")),
            ContainerImages::Wire(it) => it.next().map(|i| i.as_deref().unwrap_or("")),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            ContainerImages::Decoded(it) => it.size_hint(),
            ContainerImages::Wire(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for ContainerImages<'_> {}

impl PodObject {
    /// No object.
    pub fn none() -> PodObject {
        PodObject(None)
    }

    /// A decoded object.
    pub fn decoded(pod: Arc<core::Pod>) -> PodObject {
        PodObject(Some(Arc::new(ObjectCell {
            json: None,
            score: ScoreInputs::default(),
            pod: OnceLock::from(Some(pod)),
        })))
    }

    /// An object's JSON text, decoded on first use, with its score-only inputs decoded.
    fn json(json: Box<str>, score: ScoreInputs) -> PodObject {
        PodObject(Some(Arc::new(ObjectCell {
            json: Some(json),
            score,
            pod: OnceLock::new(),
        })))
    }

    /// An object is kept (decoded or not).
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// The decoded object; `None` when none is kept, or when the kept text is not a `v1.Pod`
    /// k8s-openapi decodes (an API server never sends one).
    pub fn get(&self) -> Option<&core::Pod> {
        self.get_arc().map(|p| &**p)
    }

    /// [`PodObject::get`], shared.
    pub fn arc(&self) -> Option<Arc<core::Pod>> {
        self.get_arc().cloned()
    }

    /// `spec.containers[*].image` in order (`""` for a container without one; none when no
    /// object is kept): ImageLocality's input, read without decoding kept text.
    pub fn container_images(&self) -> ContainerImages<'_> {
        match self.0.as_deref() {
            Some(ObjectCell {
                json: None, pod, ..
            }) => {
                let containers = pod
                    .get()
                    .and_then(Option::as_ref)
                    .and_then(|p| p.spec.as_ref())
                    .map_or(&[][..], |s| s.containers.as_slice());
                ContainerImages::Decoded(containers.iter())
            }
            Some(cell) => ContainerImages::Wire(cell.score.images.iter()),
            None => ContainerImages::Wire([].iter()),
        }
    }

    /// `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution` (empty
    /// when unset or no object is kept): NodeAffinity's score input, read without decoding
    /// kept text.
    pub fn preferred_node_affinity(&self) -> &[core::PreferredSchedulingTerm] {
        match self.0.as_deref() {
            Some(ObjectCell {
                json: None, pod, ..
            }) => pod
                .get()
                .and_then(Option::as_ref)
                .and_then(|p| p.spec.as_ref())
                .and_then(|s| s.affinity.as_ref())
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|na| {
                    na.preferred_during_scheduling_ignored_during_execution
                        .as_deref()
                })
                .unwrap_or_default(),
            Some(cell) => &cell.score.preferred_node_affinity,
            None => &[],
        }
    }

    /// The whole object has been decoded (or was given decoded).
    #[cfg(test)]
    pub(crate) fn is_decoded(&self) -> bool {
        self.0.as_ref().is_some_and(|c| c.pod.get().is_some())
    }

    fn get_arc(&self) -> Option<&Arc<core::Pod>> {
        let cell = self.0.as_ref()?;
        cell.pod
            .get_or_init(|| {
                let json = cell.json.as_deref()?;
                serde_json::from_str::<core::Pod>(json).ok().map(Arc::new)
            })
            .as_ref()
    }
}
