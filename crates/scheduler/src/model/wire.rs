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
//! A pod of a watch event or a LIST page has its metadata decoded at once (every event's key
//! and resourceVersion are read) and its scheduling fields on first use
//! ([`WirePod::spec_status`]): the pending watch reports each pod it loses to a binding as
//! DELETED, whose spec nothing reads.
//!
//! The score-only inputs of the pod being scheduled — its containers' images (ImageLocality)
//! and its preferred node affinity (NodeAffinity's score) — are taken from the scheduling
//! fields when they are decoded and kept beside the text ([`PodObject::container_images`],
//! [`PodObject::preferred_node_affinity`]), so scheduling a pod does not decode it whole. The
//! whole `v1.Pod` is decoded from the kept text only when something asks for it
//! ([`PodObject::get`]): the extenders' arguments, the queue's `isPodUpdated`, a status
//! patch. A bound pod's text is dropped by the cache unless an extender needs full objects,
//! so a follower never decodes a whole pod.
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
    /// The scheduling fields of `spec` and `status` ([`WirePod::spec`], [`WirePod::status`]):
    /// decoded with the metadata, or, for a pod a watch or a LIST delivered, from the kept text
    /// on first use ([`WirePod`]'s `Deserialize`); the error message when that text's fields
    /// are not pod-shaped.
    fields: OnceLock<Result<SpecStatus, String>>,
    /// The object: its JSON text as received, decoded on first use.
    object: PodObject,
}

/// The scheduling fields of `spec` and `status`, decoded apart from `metadata` (ignored).
#[derive(Debug, Clone, Default, Deserialize)]
struct SpecStatus {
    spec: Option<WirePodSpec>,
    status: Option<WirePodStatus>,
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
    /// `image` (ImageLocality reads it through the object's score-only inputs,
    /// [`PodObject::container_images`]).
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
        let f: Fields = serde_json::from_str(&json)?;
        Ok(WirePod::of_fields(f, PodObject::json(json)))
    }

    fn of_fields(f: Fields, object: PodObject) -> WirePod {
        object.keep_score_inputs(f.spec.as_ref());
        WirePod(Box::new(WirePodParts {
            metadata: f.metadata,
            fields: OnceLock::from(Ok(SpecStatus {
                spec: f.spec,
                status: f.status,
            })),
            object,
        }))
    }

    /// A pod a watch or a LIST delivered: its text kept, its metadata decoded now (the watch
    /// and the handlers read the key and resourceVersion of every event), the scheduling
    /// fields of its spec and status on first use ([`WirePod::spec`]): a pod the pending watch
    /// reports DELETED once bound is never decoded further than its metadata.
    fn from_text_lazily(json: Box<str>) -> Result<WirePod, serde_json::Error> {
        let metadata = metadata_of(&json)?;
        Ok(WirePod(Box::new(WirePodParts {
            metadata,
            fields: OnceLock::new(),
            object: PodObject::json(json),
        })))
    }

    /// The spec's and the status' scheduling fields, decoded from the kept text on first use;
    /// the error message when they are not pod-shaped (an API server never sends such a pod).
    ///
    /// # Errors
    /// The JSON error's message.
    pub fn spec_status(&self) -> Result<(Option<&WirePodSpec>, Option<&WirePodStatus>), &str> {
        spec_status_of(&self.fields, &self.object)
    }

    /// The metadata, to change, beside [`WirePod::spec_status`] (decoded as there).
    pub fn metadata_and_spec_status(&mut self) -> (&mut ObjectMeta, SpecStatusRef<'_>) {
        let WirePodParts {
            metadata,
            fields,
            object,
        } = &mut *self.0;
        (metadata, spec_status_of(fields, object))
    }

    /// The scheduling fields of `spec` (`None` when the object has none, or when they are not
    /// pod-shaped: [`WirePod::spec_status`]).
    pub fn spec(&self) -> Option<&WirePodSpec> {
        self.spec_status().ok()?.0
    }

    /// The scheduling fields of `status` ([`WirePod::spec`]).
    pub fn status(&self) -> Option<&WirePodStatus> {
        self.spec_status().ok()?.1
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
        Ok(WirePod::of_fields(f, PodObject::none()))
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
        namespaced_key(
            self.metadata.namespace.as_deref().unwrap_or("default"),
            self.metadata.name.as_deref().unwrap_or_default(),
        )
    }

    /// `spec.schedulerName`, if set.
    pub fn scheduler_name(&self) -> Option<&str> {
        self.spec()?.scheduler_name.as_deref()
    }

    /// The whole object, decoded lazily from the kept text ([`PodObject::get`]).
    pub fn object(&self) -> PodObject {
        self.object.clone()
    }
}

/// What [`WirePod::spec_status`] returns: the scheduling fields of `spec` and `status`, or the
/// message of the error that decoding them met.
pub type SpecStatusRef<'a> = Result<(Option<&'a WirePodSpec>, Option<&'a WirePodStatus>), &'a str>;

/// [`WirePod::spec_status`] of a pod's parts.
fn spec_status_of<'a>(
    fields: &'a OnceLock<Result<SpecStatus, String>>,
    object: &PodObject,
) -> SpecStatusRef<'a> {
    let fields = fields.get_or_init(|| {
        let json = object.text().unwrap_or("{}");
        let fields = serde_json::from_str::<SpecStatus>(json).map_err(|e| e.to_string());
        if let Ok(f) = &fields {
            object.keep_score_inputs(f.spec.as_ref());
        }
        fields
    });
    match fields {
        Ok(f) => Ok((f.spec.as_ref(), f.status.as_ref())),
        Err(e) => Err(e),
    }
}

impl<'de> Deserialize<'de> for WirePod {
    /// Keeps the object's text ([`RawValue`]: the deserializer must be `serde_json`'s, as
    /// kube's list and watch decoding is; one copy of the bytes, kept as they are) and decodes
    /// its metadata from it; the scheduling fields are decoded from the text on first use
    /// ([`WirePod::spec_status`]).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WirePod, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        WirePod::from_text_lazily(raw.into()).map_err(serde::de::Error::custom)
    }
}

/// `metadata` of a JSON object (default when it has none), read up to the end of that field
/// and no further: an API server writes `apiVersion`, `kind` and `metadata` before `spec` and
/// `status`, so those are not scanned again (an object that puts `metadata` last is read to
/// it).
fn metadata_of(json: &str) -> Result<ObjectMeta, serde_json::Error> {
    let mut found = None;
    let mut de = serde_json::Deserializer::from_str(json);
    match (&mut de).deserialize_map(MetadataSeek(&mut found)) {
        Ok(()) => Ok(found.unwrap_or_default()),
        // Stopped at the end of `metadata` (the map's end is then not where the decoder
        // expects it: its error is discarded), or failed.
        Err(e) => found.ok_or(e),
    }
}

/// The visitor of [`metadata_of`]: stores `metadata` in its slot, then stops reading the map.
/// It stops by returning at once, not with an error of its own: the decoder then finds the
/// next member where it expects the map's end and fails with a plain syntax error (one
/// allocation), where a custom error would also format and copy a message, and be rebuilt
/// with its position.
struct MetadataSeek<'a>(&'a mut Option<ObjectMeta>);

/// A map key: whether it is `metadata` (read without allocating).
struct IsMetadata(bool);

impl<'de> Deserialize<'de> for IsMetadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<IsMetadata, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = IsMetadata;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<IsMetadata, E> {
                Ok(IsMetadata(v == "metadata"))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> serde::de::Visitor<'de> for MetadataSeek<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a pod")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(IsMetadata(is)) = map.next_key()? {
            if is {
                *self.0 = Some(map.next_value()?);
                return Ok(());
            }
            map.next_value::<serde::de::IgnoredAny>()?;
        }
        Ok(())
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
    /// The score-only inputs, copied from the scheduling fields when they are decoded from the
    /// text (unset for a decoded object, which is read instead).
    score: OnceLock<ScoreInputs>,
    pod: OnceLock<Option<Arc<core::Pod>>>,
}

/// The score-only inputs of a pod kept as text, copied from its scheduling fields.
#[derive(Debug)]
struct ScoreInputs {
    /// `spec.containers[*].image`, in order.
    images: Box<[Option<String>]>,
    /// `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    preferred_node_affinity: Vec<core::PreferredSchedulingTerm>,
}

impl ScoreInputs {
    /// Copied from the scheduling fields of `spec` (none without a spec).
    fn of(spec: Option<&WirePodSpec>) -> ScoreInputs {
        let Some(spec) = spec else {
            return ScoreInputs {
                images: Box::default(),
                preferred_node_affinity: Vec::new(),
            };
        };
        ScoreInputs {
            images: spec.containers.iter().map(|c| c.image.clone()).collect(),
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
            score: OnceLock::new(),
            pod: OnceLock::from(Some(pod)),
        })))
    }

    /// An object's JSON text, decoded on first use.
    fn json(json: Box<str>) -> PodObject {
        PodObject(Some(Arc::new(ObjectCell {
            json: Some(json),
            score: OnceLock::new(),
            pod: OnceLock::new(),
        })))
    }

    /// Keep the score-only inputs of kept text, from its scheduling fields just decoded (once;
    /// nothing for a decoded object or none).
    fn keep_score_inputs(&self, spec: Option<&WirePodSpec>) {
        if let Some(cell) = self.0.as_deref().filter(|c| c.json.is_some()) {
            cell.score.get_or_init(|| ScoreInputs::of(spec));
        }
    }

    /// An object is kept (decoded or not).
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }

    /// The kept JSON text, if the object came as text.
    fn text(&self) -> Option<&str> {
        self.0.as_ref()?.json.as_deref()
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
    /// object is kept): ImageLocality's input, read from the inputs kept when the scheduling
    /// fields were decoded (a decoded object, or text whose fields never were, is read whole).
    pub fn container_images(&self) -> ContainerImages<'_> {
        match self.0.as_deref().map(|c| c.score.get()) {
            None => ContainerImages::Wire([].iter()),
            Some(Some(score)) => ContainerImages::Wire(score.images.iter()),
            Some(None) => ContainerImages::Decoded(
                self.get()
                    .and_then(|p| p.spec.as_ref())
                    .map_or(&[][..], |s| s.containers.as_slice())
                    .iter(),
            ),
        }
    }

    /// `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution` (empty
    /// when unset or no object is kept): NodeAffinity's score input, read as
    /// [`PodObject::container_images`] reads the images.
    pub fn preferred_node_affinity(&self) -> &[core::PreferredSchedulingTerm] {
        match self.0.as_deref().map(|c| c.score.get()) {
            None => &[],
            Some(Some(score)) => &score.preferred_node_affinity,
            Some(None) => self
                .get()
                .and_then(|p| p.spec.as_ref())
                .and_then(|s| s.affinity.as_ref())
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|na| {
                    na.preferred_during_scheduling_ignored_during_execution
                        .as_deref()
                })
                .unwrap_or_default(),
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

/// `namespace/name` in one allocation of its length: a pod's key is made on every queue,
/// cache and handler operation, and `format!` cost ~1,000 instructions of each (issue 12).
pub(crate) fn namespaced_key(namespace: &str, name: &str) -> String {
    let mut key = String::with_capacity(namespace.len() + 1 + name.len());
    key.push_str(namespace);
    key.push('/');
    key.push_str(name);
    key
}
