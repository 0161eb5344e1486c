//! JSON of the extender protocol (`k8s.io/kube-scheduler/extender/v1`, v1.22).
//!
//! The Go types carry no `json` tags, so `encoding/json` writes the Go field names (`Pod`,
//! `Nodes`, `NodeNames`, `PodName`, ...) and, when decoding an answer, matches keys exactly or
//! else case-insensitively, ignores unknown keys and leaves a `null` at the zero value. This
//! module does the same. A value of the wrong JSON type fails the call, with `encoding/json`'s
//! `cannot unmarshal` wording.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{ExtenderBindingArgs, FailedNodesMap, HostPriority, Victims};
use crate::model::{NodeInfo, PodInfo};

#[derive(Serialize)]
struct EmptyListMeta {}

/// `v1.NodeList` as Go marshals it (empty `TypeMeta` omitted).
#[derive(Serialize)]
struct NodeListRef<'a> {
    metadata: EmptyListMeta,
    items: Vec<&'a core::Node>,
}

/// `extenderv1.ExtenderArgs`: `{"Pod": pod, "Nodes": NodeList|null, "NodeNames": [..]|null}`.
#[derive(Serialize)]
struct ExtenderArgsRef<'a> {
    #[serde(rename = "Pod")]
    pod: &'a core::Pod,
    #[serde(rename = "Nodes")]
    nodes: Option<NodeListRef<'a>>,
    #[serde(rename = "NodeNames")]
    node_names: Option<Vec<&'a str>>,
}

/// The `v1.Pod` of `pod` ([`PodInfo::object`]: kept while it is pending, and for bound pods
/// when an extender that is not `nodeCacheCapable` is configured), or an error naming the pod.
fn object_of(pod: &PodInfo) -> Result<&core::Pod, serde_json::Error> {
    use serde::ser::Error as _;
    pod.object().ok_or_else(|| {
        serde_json::Error::custom(format!(
            "pod {}: its v1.Pod object is not kept (an extender that is not nodeCacheCapable \
             must be configured)",
            pod.key()
        ))
    })
}

/// The body of a filter or prioritize call: the nodes' names when the extender caches nodes
/// (`nodeCacheCapable`), else the full Node objects.
///
/// # Errors
/// When the pod's object ([`PodInfo::object`]: kept while it is pending) or, for an extender
/// that is not `nodeCacheCapable`, a node's object ([`NodeInfo::object`]: kept when such an
/// extender is configured) is not held, naming it; or when serializing fails.
pub(crate) fn encode_args(
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    node_cache_capable: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    use serde::ser::Error as _;
    let pod = object_of(pod)?;
    let args = if node_cache_capable {
        ExtenderArgsRef {
            pod,
            nodes: None,
            node_names: Some(nodes.iter().map(|n| n.name.as_str()).collect()),
        }
    } else {
        ExtenderArgsRef {
            pod,
            nodes: Some(NodeListRef {
                metadata: EmptyListMeta {},
                items: nodes
                    .iter()
                    .map(|n| {
                        n.object.as_deref().ok_or_else(|| {
                            serde_json::Error::custom(format!(
                                "node {}: its v1.Node object is not kept (an extender that is \
                                 not nodeCacheCapable must be configured when the scheduler \
                                 starts)",
                                n.name
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?,
            }),
            node_names: None,
        }
    };
    serde_json::to_vec(&args)
}

/// `extenderv1.ExtenderBindingArgs`.
pub(crate) fn encode_binding_args(
    args: &ExtenderBindingArgs,
) -> Result<Vec<u8>, serde_json::Error> {
    #[derive(Serialize)]
    struct Wire<'a> {
        #[serde(rename = "PodName")]
        pod_name: &'a str,
        #[serde(rename = "PodNamespace")]
        pod_namespace: &'a str,
        #[serde(rename = "PodUID")]
        pod_uid: &'a str,
        #[serde(rename = "Node")]
        node: &'a str,
    }
    serde_json::to_vec(&Wire {
        pod_name: &args.pod_name,
        pod_namespace: &args.pod_namespace,
        pod_uid: &args.pod_uid,
        node: &args.node,
    })
}

/// `extenderv1.Victims`: `{"Pods": [pod, ...], "NumPDBViolations": n}`.
#[derive(Serialize)]
struct VictimsRef<'a> {
    #[serde(rename = "Pods")]
    pods: Vec<&'a core::Pod>,
    #[serde(rename = "NumPDBViolations")]
    num_pdb_violations: i64,
}

/// `extenderv1.MetaPod`: `{"UID": uid}`.
#[derive(Serialize)]
struct MetaPodRef<'a> {
    #[serde(rename = "UID")]
    uid: &'a str,
}

/// `extenderv1.MetaVictims`: `{"Pods": [{"UID": uid}, ...], "NumPDBViolations": n}`.
#[derive(Serialize)]
struct MetaVictimsRef<'a> {
    #[serde(rename = "Pods")]
    pods: Vec<MetaPodRef<'a>>,
    #[serde(rename = "NumPDBViolations")]
    num_pdb_violations: i64,
}

/// `extenderv1.ExtenderPreemptionArgs`: `{"Pod": pod, "NodeNameToVictims": {..}|null,
/// "NodeNameToMetaVictims": {..}|null}`. Go writes map keys sorted, as a `BTreeMap` does.
#[derive(Serialize)]
struct PreemptionArgsRef<'a> {
    #[serde(rename = "Pod")]
    pod: &'a core::Pod,
    #[serde(rename = "NodeNameToVictims")]
    node_name_to_victims: Option<BTreeMap<&'a str, VictimsRef<'a>>>,
    #[serde(rename = "NodeNameToMetaVictims")]
    node_name_to_meta_victims: Option<BTreeMap<&'a str, MetaVictimsRef<'a>>>,
}

/// The body of a preempt call (v1.22 `ProcessPreemption`): the victims as full Pod objects, or,
/// when the extender caches nodes (`nodeCacheCapable`), as pod UIDs
/// (`convertToNodeNameToMetaVictims`, which in v1.22 leaves `NumPDBViolations` 0).
///
/// # Errors
/// As [`encode_args`]: the preemptor's or, in full, a victim's object not held; serializing.
pub(crate) fn encode_preemption_args(
    pod: &PodInfo,
    victims: &BTreeMap<String, Victims>,
    node_cache_capable: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    let pod = object_of(pod)?;
    let args = if node_cache_capable {
        PreemptionArgsRef {
            pod,
            node_name_to_victims: None,
            node_name_to_meta_victims: Some(
                victims
                    .iter()
                    .map(|(node, v)| {
                        let pods = v.pods.iter().map(|p| MetaPodRef { uid: &p.uid }).collect();
                        (
                            node.as_str(),
                            MetaVictimsRef {
                                pods,
                                num_pdb_violations: 0,
                            },
                        )
                    })
                    .collect(),
            ),
        }
    } else {
        PreemptionArgsRef {
            pod,
            node_name_to_victims: Some(
                victims
                    .iter()
                    .map(|(node, v)| {
                        let pods = v
                            .pods
                            .iter()
                            .map(|p| object_of(p))
                            .collect::<Result<_, _>>()?;
                        Ok((
                            node.as_str(),
                            VictimsRef {
                                pods,
                                num_pdb_violations: v.num_pdb_violations,
                            },
                        ))
                    })
                    .collect::<Result<_, serde_json::Error>>()?,
            ),
            node_name_to_meta_victims: None,
        }
    };
    serde_json::to_vec(&args)
}

/// One node of a decoded `extenderv1.ExtenderPreemptionResult`: the UIDs of its victims
/// (`None` for a `null` MetaPod) and its `NumPDBViolations`.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct MetaVictimsWire {
    /// `Pods[].UID`.
    pub pods: Vec<Option<String>>,
    /// `NumPDBViolations` (decoded for its type only: v1.22 drops it).
    pub num_pdb_violations: i64,
}

/// Decodes a preempt answer (`extenderv1.ExtenderPreemptionResult`): node name → its victims,
/// `None` for a `null` entry. An absent or `null` `NodeNameToMetaVictims` is an empty map.
pub(crate) fn decode_preemption_result(
    body: &[u8],
) -> Result<BTreeMap<String, Option<MetaVictimsWire>>, DecodeError> {
    const FIELD: &str = "ExtenderPreemptionResult.NodeNameToMetaVictims";
    let v = first_value(body)?;
    let obj = match &v {
        Value::Null => return Ok(BTreeMap::new()),
        Value::Object(m) => m,
        other => return Err(type_mismatch(other, "v1.ExtenderPreemptionResult")),
    };
    let map = match get_ci(obj, "NodeNameToMetaVictims") {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m,
        Some(other) => return Err(mismatch(other, FIELD, "map[string]*v1.MetaVictims")),
    };
    map.iter()
        .map(|(node, v)| {
            let mv = match v {
                Value::Null => return Ok((node.clone(), None)),
                Value::Object(m) => m,
                other => return Err(mismatch(other, FIELD, "v1.MetaVictims")),
            };
            let pods = match get_ci(mv, "Pods") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|i| match i {
                        Value::Null => Ok(None),
                        Value::Object(mp) => opt_string(get_ci(mp, "UID"), "MetaPod.UID").map(Some),
                        other => Err(mismatch(other, "MetaVictims.Pods", "v1.MetaPod")),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                Some(other) => return Err(mismatch(other, "MetaVictims.Pods", "[]*v1.MetaPod")),
            };
            let num_pdb_violations = match get_ci(mv, "NumPDBViolations") {
                None | Some(Value::Null) => 0,
                Some(Value::Number(n)) => n.as_i64().ok_or_else(|| DecodeError::NotInt64 {
                    number: n.to_string(),
                    field: "MetaVictims.NumPDBViolations",
                })?,
                Some(other) => {
                    return Err(mismatch(other, "MetaVictims.NumPDBViolations", "int64"));
                }
            };
            Ok((
                node.clone(),
                Some(MetaVictimsWire {
                    pods,
                    num_pdb_violations,
                }),
            ))
        })
        .collect()
}

/// A decoded `extenderv1.ExtenderFilterResult`: `None` for an absent or `null` list.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct FilterResultWire {
    /// `Nodes.items[].metadata.name`.
    pub nodes: Option<Vec<String>>,
    /// `NodeNames`.
    pub node_names: Option<Vec<String>>,
    /// `FailedNodes`.
    pub failed_nodes: FailedNodesMap,
    /// `FailedAndUnresolvableNodes`.
    pub failed_and_unresolvable_nodes: FailedNodesMap,
    /// `Error`.
    pub error: String,
}

/// Why an extender's answer could not be decoded, in the words of Go's `encoding/json` (the
/// text upstream passes on as the call's error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DecodeError {
    /// The body is not JSON (serde's description of where and why).
    #[error("{0}")]
    Syntax(String),
    /// The body is empty.
    #[error("EOF")]
    Eof,
    /// A field holds the wrong JSON type.
    #[error("json: cannot unmarshal {found} into Go struct field {field} of type {go_type}")]
    FieldType {
        /// The JSON type found: `null`, `bool`, `number`, `string`, `array`, `object`.
        found: &'static str,
        /// Go's `Struct.Field`.
        field: &'static str,
        /// The Go type expected.
        go_type: &'static str,
    },
    /// The answer (or an item of it) is the wrong JSON type.
    #[error("json: cannot unmarshal {found} into Go value of type {go_type}")]
    ValueType {
        /// The JSON type found.
        found: &'static str,
        /// The Go type expected.
        go_type: &'static str,
    },
    /// A score that is not an int64.
    #[error(
        "json: cannot unmarshal number {number} into Go struct field HostPriority.Score of type int64"
    )]
    ScoreNotInt64 {
        /// The number as written.
        number: String,
    },
    /// Another int64 field holding a number that is not one.
    #[error("json: cannot unmarshal number {number} into Go struct field {field} of type int64")]
    NotInt64 {
        /// The number as written.
        number: String,
        /// Go's `Struct.Field`.
        field: &'static str,
    },
}

/// The first JSON value of `body` (`json.NewDecoder(resp.Body).Decode` reads one value).
fn first_value(body: &[u8]) -> Result<Value, DecodeError> {
    let mut it = serde_json::Deserializer::from_slice(body).into_iter::<Value>();
    match it.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(DecodeError::Syntax(e.to_string())),
        None => Err(DecodeError::Eof),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn mismatch(v: &Value, field: &'static str, go_type: &'static str) -> DecodeError {
    DecodeError::FieldType {
        found: json_kind(v),
        field,
        go_type,
    }
}

fn type_mismatch(v: &Value, go_type: &'static str) -> DecodeError {
    DecodeError::ValueType {
        found: json_kind(v),
        go_type,
    }
}

/// The value of `key` in `obj`: an exact match, else the first case-insensitive one.
fn get_ci<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).or_else(|| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

fn opt_string(v: Option<&Value>, field: &'static str) -> Result<String, DecodeError> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(mismatch(other, field, "string")),
    }
}

fn string_list(v: Option<&Value>, field: &'static str) -> Result<Option<Vec<String>>, DecodeError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                Value::Null => Ok(String::new()),
                other => Err(mismatch(other, field, "string")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(mismatch(other, field, "[]string")),
    }
}

fn failed_nodes_map(v: Option<&Value>, field: &'static str) -> Result<FailedNodesMap, DecodeError> {
    match v {
        None | Some(Value::Null) => Ok(FailedNodesMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Null => Ok((k.clone(), String::new())),
                other => Err(mismatch(other, field, "string")),
            })
            .collect(),
        Some(other) => Err(mismatch(other, field, "v1.FailedNodesMap")),
    }
}

/// Names of the items of a `v1.NodeList`.
fn node_list_names(v: Option<&Value>) -> Result<Option<Vec<String>>, DecodeError> {
    let field = "ExtenderFilterResult.Nodes";
    let list = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(m)) => m,
        Some(other) => return Err(mismatch(other, field, "v1.NodeList")),
    };
    let items = match get_ci(list, "items") {
        None | Some(Value::Null) => return Ok(Some(Vec::new())),
        Some(Value::Array(a)) => a,
        Some(other) => return Err(mismatch(other, "NodeList.items", "[]v1.Node")),
    };
    items
        .iter()
        .map(|item| {
            let node = match item {
                Value::Object(m) => m,
                Value::Null => return Ok(String::new()),
                other => return Err(mismatch(other, "NodeList.items", "v1.Node")),
            };
            let meta = match get_ci(node, "metadata") {
                None | Some(Value::Null) => return Ok(String::new()),
                Some(Value::Object(m)) => m,
                Some(other) => return Err(mismatch(other, "Node.metadata", "v1.ObjectMeta")),
            };
            opt_string(get_ci(meta, "name"), "ObjectMeta.name")
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Decodes a filter answer.
pub(crate) fn decode_filter_result(body: &[u8]) -> Result<FilterResultWire, DecodeError> {
    let v = first_value(body)?;
    let obj = match &v {
        Value::Null => return Ok(FilterResultWire::default()),
        Value::Object(m) => m,
        other => return Err(type_mismatch(other, "v1.ExtenderFilterResult")),
    };
    Ok(FilterResultWire {
        nodes: node_list_names(get_ci(obj, "Nodes"))?,
        node_names: string_list(get_ci(obj, "NodeNames"), "ExtenderFilterResult.NodeNames")?,
        failed_nodes: failed_nodes_map(
            get_ci(obj, "FailedNodes"),
            "ExtenderFilterResult.FailedNodes",
        )?,
        failed_and_unresolvable_nodes: failed_nodes_map(
            get_ci(obj, "FailedAndUnresolvableNodes"),
            "ExtenderFilterResult.FailedAndUnresolvableNodes",
        )?,
        error: opt_string(get_ci(obj, "Error"), "ExtenderFilterResult.Error")?,
    })
}

/// Decodes a prioritize answer (`extenderv1.HostPriorityList`).
pub(crate) fn decode_host_priority_list(body: &[u8]) -> Result<Vec<HostPriority>, DecodeError> {
    let v = first_value(body)?;
    let items = match &v {
        Value::Null => return Ok(Vec::new()),
        Value::Array(a) => a,
        other => return Err(type_mismatch(other, "v1.HostPriorityList")),
    };
    items
        .iter()
        .map(|item| {
            let obj = match item {
                Value::Null => {
                    return Ok(HostPriority {
                        host: String::new(),
                        score: 0,
                    });
                }
                Value::Object(m) => m,
                other => return Err(type_mismatch(other, "v1.HostPriority")),
            };
            let host = opt_string(get_ci(obj, "Host"), "HostPriority.Host")?;
            let score = match get_ci(obj, "Score") {
                None | Some(Value::Null) => 0,
                Some(Value::Number(n)) => n.as_i64().ok_or_else(|| DecodeError::ScoreNotInt64 {
                    number: n.to_string(),
                })?,
                Some(other) => return Err(mismatch(other, "HostPriority.Score", "int64")),
            };
            Ok(HostPriority { host, score })
        })
        .collect()
}

/// Decodes a bind answer (`extenderv1.ExtenderBindingResult`): its `Error` text.
pub(crate) fn decode_binding_result(body: &[u8]) -> Result<String, DecodeError> {
    let v = first_value(body)?;
    match &v {
        Value::Null => Ok(String::new()),
        Value::Object(m) => opt_string(get_ci(m, "Error"), "ExtenderBindingResult.Error"),
        other => Err(type_mismatch(other, "v1.ExtenderBindingResult")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{node, pod};

    #[test]
    fn args_carry_go_field_names_and_nodes_or_names() {
        let n1 = node("n1").allocatable(&[("cpu", "1")]).info();
        let n2 = node("n2").info();
        let p = pod("p").container(&[("cpu", "100m")]).info();
        let full: Value =
            serde_json::from_slice(&encode_args(&p, &[&n1, &n2], false).unwrap()).unwrap();
        assert_eq!(full["Pod"]["metadata"]["name"], "p");
        assert_eq!(full["NodeNames"], Value::Null);
        assert_eq!(full["Nodes"]["metadata"], serde_json::json!({}));
        let items = full["Nodes"]["items"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["metadata"]["name"], "n1");
        assert_eq!(items[0]["status"]["allocatable"]["cpu"], "1");
        let names: Value =
            serde_json::from_slice(&encode_args(&p, &[&n1, &n2], true).unwrap()).unwrap();
        assert_eq!(names["Nodes"], Value::Null);
        assert_eq!(names["NodeNames"], serde_json::json!(["n1", "n2"]));
        let b: Value = serde_json::from_slice(
            &encode_binding_args(&ExtenderBindingArgs {
                pod_name: "p".into(),
                pod_namespace: "ns".into(),
                pod_uid: "u1".into(),
                node: "n1".into(),
            })
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            b,
            serde_json::json!({"PodName":"p","PodNamespace":"ns","PodUID":"u1","Node":"n1"})
        );
    }

    /// `encoding/json` matches keys case-insensitively (exact match first), ignores unknown keys
    /// and leaves `null` at the zero value.
    #[test]
    fn answers_decode_like_encoding_json() {
        let r = decode_filter_result(
            br#"{"nodenames":["a"],"failedNodes":{"b":"no"},"FAILEDANDUNRESOLVABLENODES":{"c":"never"},
                "error":null,"extra":1}"#,
        )
        .unwrap();
        assert_eq!(r.node_names, Some(vec!["a".to_string()]));
        assert_eq!(r.nodes, None);
        assert_eq!(r.failed_nodes["b"], "no");
        assert_eq!(r.failed_and_unresolvable_nodes["c"], "never");
        assert_eq!(r.error, "");
        let r = decode_filter_result(
            br#"{"Nodes":{"items":[{"metadata":{"name":"x"}},{"Metadata":{"Name":"y"}}]},"Error":"boom"}"#,
        )
        .unwrap();
        assert_eq!(r.nodes, Some(vec!["x".to_string(), "y".to_string()]));
        assert_eq!(r.error, "boom");
        assert_eq!(
            decode_filter_result(b"null").unwrap(),
            FilterResultWire::default()
        );
        // One value is read; what follows is not looked at.
        assert_eq!(
            decode_filter_result(br#"{"Error":"e"} trailing"#)
                .unwrap()
                .error,
            "e"
        );

        let l = decode_host_priority_list(br#"[{"Host":"a","Score":3},{"host":"b","score":10}]"#)
            .unwrap();
        assert_eq!(
            l,
            [
                HostPriority {
                    host: "a".into(),
                    score: 3
                },
                HostPriority {
                    host: "b".into(),
                    score: 10
                }
            ]
        );
        assert!(decode_host_priority_list(b"null").unwrap().is_empty());
        assert_eq!(
            decode_binding_result(br#"{"Error":"taken"}"#).unwrap(),
            "taken"
        );
        assert_eq!(decode_binding_result(b"{}").unwrap(), "");
    }

    /// `ExtenderPreemptionArgs` with Go's field names: full victims, or UIDs when the extender
    /// caches nodes (with `NumPDBViolations` 0, as v1.22's `convertToNodeNameToMetaVictims`).
    #[test]
    fn preemption_args_carry_victims_or_their_uids() {
        let p = pod("p").info();
        let mut v1 = pod("v1").info();
        v1.uid = "uid-1".into();
        let mut victims = BTreeMap::new();
        victims.insert(
            "n1".to_string(),
            Victims {
                pods: vec![std::sync::Arc::new(v1)],
                num_pdb_violations: 1,
            },
        );
        let full: Value =
            serde_json::from_slice(&encode_preemption_args(&p, &victims, false).unwrap()).unwrap();
        assert_eq!(full["Pod"]["metadata"]["name"], "p");
        assert_eq!(full["NodeNameToMetaVictims"], Value::Null);
        assert_eq!(full["NodeNameToVictims"]["n1"]["NumPDBViolations"], 1);
        assert_eq!(
            full["NodeNameToVictims"]["n1"]["Pods"][0]["metadata"]["name"],
            "v1"
        );
        let meta: Value =
            serde_json::from_slice(&encode_preemption_args(&p, &victims, true).unwrap()).unwrap();
        assert_eq!(meta["NodeNameToVictims"], Value::Null);
        assert_eq!(
            meta["NodeNameToMetaVictims"],
            serde_json::json!({"n1": {"Pods": [{"UID": "uid-1"}], "NumPDBViolations": 0}})
        );
    }

    #[test]
    fn preemption_results_decode_like_encoding_json() {
        let r = decode_preemption_result(
            br#"{"nodeNameToMetaVictims":{"n1":{"pods":[{"uid":"a"},null],"numPDBViolations":2},"n2":null,"n3":{}}}"#,
        )
        .unwrap();
        assert_eq!(
            r["n1"],
            Some(MetaVictimsWire {
                pods: vec![Some("a".into()), None],
                num_pdb_violations: 2
            })
        );
        assert_eq!(r["n2"], None);
        assert_eq!(r["n3"], Some(MetaVictimsWire::default()));
        assert!(decode_preemption_result(b"null").unwrap().is_empty());
        assert!(decode_preemption_result(b"{}").unwrap().is_empty());
        assert!(
            decode_preemption_result(br#"{"NodeNameToMetaVictims":null}"#)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            decode_preemption_result(br#"{"NodeNameToMetaVictims":[]}"#)
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal array into Go struct field ExtenderPreemptionResult.NodeNameToMetaVictims of type map[string]*v1.MetaVictims"
        );
        assert_eq!(
            decode_preemption_result(br#"{"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":1}]}}}"#)
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal number into Go struct field MetaPod.UID of type string"
        );
        assert_eq!(
            decode_preemption_result(
                br#"{"NodeNameToMetaVictims":{"n":{"NumPDBViolations":0.5}}}"#
            )
            .unwrap_err()
            .to_string(),
            "json: cannot unmarshal number 0.5 into Go struct field MetaVictims.NumPDBViolations of type int64"
        );
    }

    #[test]
    fn wrong_types_fail_with_encoding_json_wording() {
        assert_eq!(
            decode_filter_result(br#"{"FailedNodes":{"a":1}}"#)
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal number into Go struct field ExtenderFilterResult.FailedNodes of type string"
        );
        assert_eq!(
            decode_host_priority_list(br#"[{"Host":"a","Score":1.5}]"#)
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal number 1.5 into Go struct field HostPriority.Score of type int64"
        );
        assert_eq!(
            decode_host_priority_list(br#"{"Host":"a"}"#)
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal object into Go value of type v1.HostPriorityList"
        );
        assert!(decode_filter_result(b"not json").is_err());
        assert_eq!(decode_filter_result(b"").unwrap_err().to_string(), "EOF");
    }
}
