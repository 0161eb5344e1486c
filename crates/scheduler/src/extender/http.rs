//! [`HttpExtender`]: an extender reached over HTTP(S), configured by a Policy `extenders` entry.
//!
//! Follows kube-scheduler v1.22 `pkg/scheduler/core/extender.go` (`HTTPExtender`,
//! `NewHTTPExtender`, `makeTransport`, `send`, `Filter`, `Prioritize`, `Bind`, `IsInterested`,
//! `ProcessPreemption` with `convertToNodeNameToVictims`, `convertPodUIDToPod`,
//! `convertToNodeNameToMetaVictims` (index id 473244, the framework-era file, same in v1.22
//! but for the framework import path; `NumPDBViolations` is not carried either way until PR
//! #105853, after v1.22);
//! read from kubernetes/kubernetes @b61894a0be597cdb74d7ab97dedd7d7b173267f8, the
//! framework-era file, plus v1.22's `FailedAndUnresolvableNodes` as used by
//! `findNodesThatPassExtenders`) and client-go `transport.TLSConfigFor` / `loadTLSFiles`:
//! - every call is `POST <urlPrefix without trailing "/">/<verb>` with `Content-Type:
//!   application/json`; an answer other than 200 fails with `failed <verb> with extender at URL
//!   <url>, code <code>` (lower-case since the v1.21 error-string cleanup; the capitalised
//!   `Failed ...` / `Unexpected empty bindVerb ...` texts of the file @b61894a0 are older, v1.19/v1.20 era);
//! - `httpTimeout` (nanoseconds) bounds each whole call; 0 means 5 s (`DefaultExtenderTimeout`),
//!   a negative value means no timeout (Go's `http.Client` ignores `Timeout <= 0`);
//! - TLS: `tlsConfig` fields as client-go reads them (`*Data` wins over `*File`); with
//!   `enableHTTPS` and no CA the server certificate is not verified (`makeTransport` sets
//!   `Insecure`); a CA together with `insecure` is refused ("specifying a root certificates file
//!   with the insecure flag is not allowed"); a client certificate is used only when both the
//!   certificate and the key are given (`HasCertAuth`). Whether a call uses TLS is decided by
//!   the URL scheme, as in Go;
//! - `urlPrefix` is not validated (v1.22 does not): a prefix Go's HTTP client cannot send to,
//!   such as the `"/prefix"` of v1.22's `compatibility_test.go`, is accepted (the Policy loader
//!   warns), and each call fails with the error Go's client gives ([`super::gourl`]), e.g.
//!   `Post "/prefix/filter": unsupported protocol scheme ""`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1 as core;

use super::client::{BlockingClient, TlsSettings};
use super::{
    DEFAULT_EXTENDER_TIMEOUT, Extender, ExtenderBindingArgs, ExtenderConfigError, ExtenderError,
    ExtenderFilterResult, FailedNodesMap, HostPriority, Victims, wire,
};
use crate::model::{NodeInfo, PodInfo};
use crate::policy::LegacyExtender;
use crate::snapshot::Snapshot;

/// An HTTP extender (`HTTPExtender`).
pub struct HttpExtender {
    extender_url: String,
    preempt_verb: String,
    filter_verb: String,
    prioritize_verb: String,
    bind_verb: String,
    weight: i64,
    client: BlockingClient,
    node_cache_capable: bool,
    managed_resources: HashSet<String>,
    ignorable: bool,
}

impl std::fmt::Debug for HttpExtender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpExtender")
            .field("url_prefix", &self.extender_url)
            .field("filter_verb", &self.filter_verb)
            .field("preempt_verb", &self.preempt_verb)
            .field("prioritize_verb", &self.prioritize_verb)
            .field("bind_verb", &self.bind_verb)
            .field("weight", &self.weight)
            .field("node_cache_capable", &self.node_cache_capable)
            .field("ignorable", &self.ignorable)
            .finish_non_exhaustive()
    }
}

/// Base64 as Go's `encoding/json` decodes a `[]byte` (standard alphabet, padded; line breaks
/// ignored).
fn decode_base64(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let cleaned: String = s.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    base64::engine::general_purpose::STANDARD.decode(cleaned.as_bytes())
}

impl HttpExtender {
    /// The extender of Policy entry `index` (`NewHTTPExtender`). Files named in `tlsConfig` are
    /// read now.
    ///
    /// A `urlPrefix` that Go's HTTP client cannot send to (no `http`/`https` scheme, no host) is
    /// accepted as v1.22 accepts it; every call then fails with Go's error (see [`super::gourl`]).
    ///
    /// # Errors
    /// [`ExtenderConfigError`]: while a verb is set, `urlPrefix` is an `http(s)` URL with a host
    /// that this crate's HTTP client cannot parse (checked here rather than on every call), a
    /// `*Data` field is not base64, a file cannot be read, CA and `insecure` together, TLS
    /// material that does not parse, an invalid `serverName`.
    pub fn new(index: usize, config: &LegacyExtender) -> Result<HttpExtender, ExtenderConfigError> {
        let err = |field: &str, message: String| ExtenderConfigError {
            index,
            url_prefix: config.url_prefix.clone(),
            field: field.to_string(),
            message,
        };
        for verb in [
            &config.filter_verb,
            &config.prioritize_verb,
            &config.bind_verb,
            &config.preempt_verb,
        ] {
            if verb.is_empty() {
                continue;
            }
            // Go fails such a call on its own (see `send`); a URL Go would send must be one
            // this client can send too.
            let url = call_url(&config.url_prefix, verb);
            if super::gourl::go_post_error(&url).is_some() {
                continue;
            }
            if let Err(e) = url.parse::<http::Uri>() {
                return Err(err(
                    "urlPrefix",
                    format!(
                        "{:?} is not a URL this scheduler can send to: {e}",
                        config.url_prefix
                    ),
                ));
            }
        }

        // makeTransport + restclient.TLSConfigFor.
        let t = config.tls_config.clone().unwrap_or_default();
        let data = |field: &str, v: &str| -> Result<Option<Vec<u8>>, ExtenderConfigError> {
            if v.is_empty() {
                Ok(None)
            } else {
                decode_base64(v)
                    .map(|b| (!b.is_empty()).then_some(b))
                    .map_err(|e| err(field, format!("illegal base64 data: {e}")))
            }
        };
        let ca_data = data("tlsConfig.caData", &t.ca_data)?;
        let cert_data = data("tlsConfig.certData", &t.cert_data)?;
        let key_data = data("tlsConfig.keyData", &t.key_data)?;
        let has_ca = ca_data.is_some() || !t.ca_file.is_empty();
        let mut insecure = t.insecure;
        if config.enable_https && !has_ca {
            insecure = true;
        }
        if has_ca && insecure {
            return Err(err(
                "tlsConfig",
                "specifying a root certificates file with the insecure flag is not allowed".into(),
            ));
        }
        // dataFromSliceOrFile: the data wins over the file.
        let read = |field: &str,
                    data: Option<Vec<u8>>,
                    file: &str|
         -> Result<Option<Vec<u8>>, ExtenderConfigError> {
            match data {
                Some(d) => Ok(Some(d)),
                None if file.is_empty() => Ok(None),
                None => std::fs::read(file)
                    .map(Some)
                    .map_err(|e| err(field, format!("reading {file:?}: {e}"))),
            }
        };
        let ca = read("tlsConfig.caFile", ca_data, &t.ca_file)?;
        let cert = read("tlsConfig.certFile", cert_data, &t.cert_file)?;
        let key = read("tlsConfig.keyFile", key_data, &t.key_file)?;
        let client_cert = match (cert, key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => {
                tracing::warn!(
                    extender = %config.url_prefix,
                    "tlsConfig has a client certificate without a key or a key without a \
                     certificate; no client certificate is sent (as client-go does)"
                );
                None
            }
        };
        let tls = TlsSettings {
            insecure,
            server_name: t.server_name.clone(),
            ca,
            client_cert,
        };
        let timeout = match config.http_timeout {
            0 => Some(DEFAULT_EXTENDER_TIMEOUT),
            n if n < 0 => None,
            n => Some(Duration::from_nanos(n as u64)),
        };
        let client =
            BlockingClient::new(&tls, timeout).map_err(|e| err("tlsConfig", e.to_string()))?;
        Ok(HttpExtender {
            extender_url: config.url_prefix.clone(),
            preempt_verb: config.preempt_verb.clone(),
            filter_verb: config.filter_verb.clone(),
            prioritize_verb: config.prioritize_verb.clone(),
            bind_verb: config.bind_verb.clone(),
            weight: config.weight,
            client,
            node_cache_capable: config.node_cache_capable,
            managed_resources: config
                .managed_resources
                .iter()
                .map(|r| r.name.clone())
                .collect(),
            ignorable: config.ignorable,
        })
    }

    /// `send`: POST the body to `<urlPrefix>/<action>`, require 200, return the answer body. A
    /// URL Go's client cannot send to fails as it does there, before any I/O.
    fn send(&self, action: &str, body: Vec<u8>) -> Result<bytes::Bytes, ExtenderError> {
        let url = call_url(&self.extender_url, action);
        if let Some(e) = super::gourl::go_post_error(&url) {
            return Err(ExtenderError::new(e));
        }
        let (code, answer) = self
            .client
            .post_json(&url, body)
            .map_err(|e| ExtenderError::new(e.to_string()))?;
        if code != 200 {
            return Err(ExtenderError::new(format!(
                "failed {action} with extender at URL {url}, code {code}"
            )));
        }
        Ok(answer)
    }

    fn args(&self, pod: &PodInfo, nodes: &[&NodeInfo]) -> Result<Vec<u8>, ExtenderError> {
        wire::encode_args(pod, nodes, self.node_cache_capable)
            .map_err(|e| ExtenderError::new(e.to_string()))
    }
}

/// The URL of one call: `strings.TrimRight(urlPrefix, "/") + "/" + verb`.
fn call_url(url_prefix: &str, verb: &str) -> String {
    format!("{}/{}", url_prefix.trim_end_matches('/'), verb)
}

/// Whether a container requests or limits one of `managed`.
fn has_managed_resources(containers: &[core::Container], managed: &HashSet<String>) -> bool {
    containers.iter().any(|c| {
        c.resources.as_ref().is_some_and(|r| {
            r.requests
                .iter()
                .chain(r.limits.iter())
                .flat_map(|m| m.keys())
                .any(|k| managed.contains(k))
        })
    })
}

impl Extender for HttpExtender {
    fn name(&self) -> &str {
        &self.extender_url
    }

    fn filter(
        &self,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Result<ExtenderFilterResult, ExtenderError> {
        if self.filter_verb.is_empty() {
            return Ok(ExtenderFilterResult {
                nodes: nodes.iter().map(|n| n.name.clone()).collect(),
                failed_nodes: FailedNodesMap::new(),
                failed_and_unresolvable_nodes: FailedNodesMap::new(),
            });
        }
        let body = self.args(pod, nodes)?;
        let answer = self.send(&self.filter_verb, body)?;
        let r =
            wire::decode_filter_result(&answer).map_err(|e| ExtenderError::new(e.to_string()))?;
        if !r.error.is_empty() {
            return Err(ExtenderError::new(r.error));
        }
        let names = if self.node_cache_capable && r.node_names.is_some() {
            r.node_names.unwrap_or_default()
        } else {
            r.nodes.unwrap_or_default()
        };
        Ok(ExtenderFilterResult {
            nodes: names,
            failed_nodes: r.failed_nodes,
            failed_and_unresolvable_nodes: r.failed_and_unresolvable_nodes,
        })
    }

    fn prioritize(
        &self,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        if self.prioritize_verb.is_empty() {
            let zeros = nodes
                .iter()
                .map(|n| HostPriority {
                    host: n.name.clone(),
                    score: 0,
                })
                .collect();
            return Ok((zeros, 0));
        }
        let body = self.args(pod, nodes)?;
        let answer = self.send(&self.prioritize_verb, body)?;
        let list = wire::decode_host_priority_list(&answer)
            .map_err(|e| ExtenderError::new(e.to_string()))?;
        Ok((list, self.weight))
    }

    fn bind(&self, binding: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
        if !self.is_binder() {
            // This shouldn't happen as this extender wouldn't have become a Binder.
            return Err(ExtenderError::new("unexpected empty bindVerb in extender"));
        }
        let body =
            wire::encode_binding_args(binding).map_err(|e| ExtenderError::new(e.to_string()))?;
        let answer = self.send(&self.bind_verb, body)?;
        let error =
            wire::decode_binding_result(&answer).map_err(|e| ExtenderError::new(e.to_string()))?;
        if !error.is_empty() {
            return Err(ExtenderError::new(error));
        }
        Ok(())
    }

    fn is_binder(&self) -> bool {
        !self.bind_verb.is_empty()
    }

    /// True when no resource is managed, or when a container or init container requests or
    /// limits a managed resource (any quantity, zero included).
    fn is_interested(&self, pod: &PodInfo) -> bool {
        if self.managed_resources.is_empty() {
            return true;
        }
        // The pod being scheduled is pending: its object is kept (`PodInfo::object`).
        let Some(spec) = pod.object().and_then(|p| p.spec.as_ref()) else {
            return false;
        };
        has_managed_resources(&spec.containers, &self.managed_resources)
            || spec
                .init_containers
                .as_deref()
                .is_some_and(|c| has_managed_resources(c, &self.managed_resources))
    }

    fn is_ignorable(&self) -> bool {
        self.ignorable
    }

    fn supports_preemption(&self) -> bool {
        !self.preempt_verb.is_empty()
    }

    /// `POST <urlPrefix>/<preemptVerb>` with `ExtenderPreemptionArgs` (full victim pods, or
    /// their UIDs when `nodeCacheCapable`); the answer's `NodeNameToMetaVictims` are resolved
    /// on `snapshot`: each node must be there (`nodeinfo not found for node name "<node>"`) and
    /// each UID must be a pod on that node (`extender: <url> claims to preempt pod (UID:
    /// &{<uid>}) on node: <node>, but the pod is not found on that node`). The victims keep the
    /// extender's order; their `num_pdb_violations` is 0, as v1.22 leaves it. A `null` node
    /// entry or MetaPod, on which v1.22 dereferences a nil pointer, is an error here.
    fn process_preemption(
        &self,
        pod: &PodInfo,
        victims: &BTreeMap<String, Victims>,
        snapshot: &Snapshot,
    ) -> Result<BTreeMap<String, Victims>, ExtenderError> {
        if !self.supports_preemption() {
            return Err(ExtenderError::new(format!(
                "preempt verb is not defined for extender {} but run into ProcessPreemption",
                self.extender_url
            )));
        }
        let body = wire::encode_preemption_args(pod, victims, self.node_cache_capable)
            .map_err(|e| ExtenderError::new(e.to_string()))?;
        let answer = self.send(&self.preempt_verb, body)?;
        let result = wire::decode_preemption_result(&answer)
            .map_err(|e| ExtenderError::new(e.to_string()))?;
        // convertToNodeNameToVictims.
        let mut out = BTreeMap::new();
        for (node, meta) in result {
            let info = snapshot.node(&node).ok_or_else(|| {
                ExtenderError::new(format!("nodeinfo not found for node name {node:?}"))
            })?;
            let meta = meta.ok_or_else(|| {
                ExtenderError::new(format!(
                    "extender: {} returned null victims for node: {node}",
                    self.extender_url
                ))
            })?;
            let mut pods: Vec<Arc<PodInfo>> = Vec::with_capacity(meta.pods.len());
            for uid in meta.pods {
                let Some(uid) = uid else {
                    return Err(ExtenderError::new(format!(
                        "extender: {} claims to preempt a null pod on node: {node}",
                        self.extender_url
                    )));
                };
                // convertPodUIDToPod.
                let p = info.pods.iter().find(|p| p.uid == uid).ok_or_else(|| {
                    ExtenderError::new(format!(
                        "extender: {} claims to preempt pod (UID: &{{{uid}}}) on node: {}, but \
                         the pod is not found on that node",
                        self.extender_url, info.name
                    ))
                })?;
                pods.push(p.clone());
            }
            out.insert(
                node,
                Victims {
                    pods,
                    num_pdb_violations: 0,
                },
            );
        }
        Ok(out)
    }

    fn is_filter(&self) -> bool {
        !self.filter_verb.is_empty()
    }

    fn node_cache_capable(&self) -> bool {
        self.node_cache_capable
    }

    fn is_prioritizer(&self) -> bool {
        !self.prioritize_verb.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::pod;
    use crate::policy::{ExtenderManagedResource, ExtenderTlsConfig};

    fn extender(managed: &[&str]) -> HttpExtender {
        HttpExtender::new(
            0,
            &LegacyExtender {
                url_prefix: "http://127.0.0.1:1/".into(),
                filter_verb: "filter".into(),
                managed_resources: managed
                    .iter()
                    .map(|n| ExtenderManagedResource {
                        name: n.to_string(),
                        ignored_by_scheduler: false,
                    })
                    .collect(),
                ..LegacyExtender::default()
            },
        )
        .unwrap()
    }

    /// Upstream `pkg/scheduler/core/extender_test.go` `TestIsInterested` (kubernetes/kubernetes
    /// @013f1ae12049b9f51053cd3fa16ae2c1af60057d, v1.21/v1.22): the extender manages `memory`.
    #[test]
    fn test_is_interested() {
        let mem = extender(&["memory"]);
        let none = extender(&[]);
        let cases: Vec<(&str, &HttpExtender, PodInfo, bool)> = vec![
            ("Empty managed resources", &none, pod("p").info(), true),
            (
                "Managed memory, empty resources",
                &mem,
                pod("p").container(&[]).info(),
                false,
            ),
            (
                "Managed memory, container memory",
                &mem,
                pod("p").container(&[("memory", "0")]).info(),
                true,
            ),
            (
                "Managed memory, init container memory",
                &mem,
                pod("p")
                    .container(&[])
                    .init_container(&[("memory", "0")])
                    .info(),
                true,
            ),
        ];
        for (label, e, p, want) in cases {
            assert_eq!(e.is_interested(&p), want, "{label}");
        }
        // Limits count too (hasManagedResources reads Requests and Limits).
        let mut p = pod("p").container(&[]).info();
        let mut raw = p.object().unwrap().clone();
        raw.spec.as_mut().unwrap().containers[0].resources = Some(core::ResourceRequirements {
            limits: Some(
                [(
                    "memory".to_string(),
                    k8s_openapi::apimachinery::pkg::api::resource::Quantity("1Gi".into()),
                )]
                .into_iter()
                .collect(),
            ),
            ..Default::default()
        });
        p.object = crate::model::PodObject::decoded(std::sync::Arc::new(raw));
        assert!(mem.is_interested(&p));
    }

    fn config_error(c: LegacyExtender) -> String {
        HttpExtender::new(2, &c).unwrap_err().to_string()
    }

    #[test]
    fn unusable_configurations_are_refused_at_construction() {
        let base = LegacyExtender {
            url_prefix: "https://ext.example:8443/scheduler".into(),
            filter_verb: "filter".into(),
            ..LegacyExtender::default()
        };
        let e = config_error(LegacyExtender {
            url_prefix: "http://ext ample:8888".into(),
            ..base.clone()
        });
        assert!(
            e.starts_with(
                "policy extenders[2] (\"http://ext ample:8888\"): urlPrefix: \"http://ext ample:8888\" is not a URL this scheduler can send to: "
            ),
            "{e}"
        );
        // No verb: never called, so any prefix is accepted.
        assert!(
            HttpExtender::new(
                0,
                &LegacyExtender {
                    url_prefix: String::new(),
                    ..LegacyExtender::default()
                }
            )
            .is_ok()
        );
        let tls = |t: ExtenderTlsConfig| LegacyExtender {
            tls_config: Some(t),
            ..base.clone()
        };
        assert_eq!(
            config_error(tls(ExtenderTlsConfig {
                insecure: true,
                ca_file: "/etc/ca.pem".into(),
                ..Default::default()
            })),
            "policy extenders[2] (\"https://ext.example:8443/scheduler\"): tlsConfig: specifying a root certificates file with the insecure flag is not allowed"
        );
        let e = config_error(tls(ExtenderTlsConfig {
            ca_data: "not base64!".into(),
            ..Default::default()
        }));
        assert!(e.contains("tlsConfig.caData: illegal base64 data"), "{e}");
        let e = config_error(tls(ExtenderTlsConfig {
            ca_file: "/nonexistent/ca.pem".into(),
            ..Default::default()
        }));
        assert!(
            e.contains("tlsConfig.caFile: reading \"/nonexistent/ca.pem\""),
            "{e}"
        );
        let e = config_error(tls(ExtenderTlsConfig {
            ca_data: base64::engine::general_purpose::STANDARD.encode("no pem here"),
            ..Default::default()
        }));
        assert!(e.contains("unable to load root certificates"), "{e}");
        // enableHttps without a CA does not verify: accepted with no TLS material at all.
        assert!(
            HttpExtender::new(
                0,
                &LegacyExtender {
                    enable_https: true,
                    ..base.clone()
                }
            )
            .is_ok()
        );
    }

    /// v1.22's `compatibility_test.go` extender (`"urlPrefix": "/prefix"`, HTTPS, every verb):
    /// accepted, and each call fails as Go's client fails on a URL without a scheme.
    #[test]
    fn a_prefix_go_cannot_send_to_is_accepted_and_every_call_fails_as_in_go() {
        let e = HttpExtender::new(
            0,
            &LegacyExtender {
                url_prefix: "/prefix".into(),
                filter_verb: "filter".into(),
                prioritize_verb: "prioritize".into(),
                bind_verb: "bind".into(),
                weight: 1,
                enable_https: true,
                tls_config: Some(ExtenderTlsConfig {
                    insecure: true,
                    ..Default::default()
                }),
                http_timeout: 1,
                node_cache_capable: true,
                ignorable: true,
                ..LegacyExtender::default()
            },
        )
        .unwrap();
        let n1 = crate::framework::plugins::testutil::node("n1").info();
        let p = pod("p").info();
        let go = |verb: &str| format!(r#"Post "/prefix/{verb}": unsupported protocol scheme """#);
        assert_eq!(e.filter(&p, &[&n1]).unwrap_err().to_string(), go("filter"));
        assert_eq!(
            e.prioritize(&p, &[&n1]).unwrap_err().to_string(),
            go("prioritize")
        );
        assert_eq!(
            e.bind(&ExtenderBindingArgs::new(&p, "n1"))
                .unwrap_err()
                .to_string(),
            go("bind")
        );
        // `host:port` without a scheme: Go reads `localhost` as the scheme.
        let e = HttpExtender::new(
            0,
            &LegacyExtender {
                url_prefix: "localhost:8888/".into(),
                filter_verb: "filter".into(),
                ..LegacyExtender::default()
            },
        )
        .unwrap();
        assert_eq!(
            e.filter(&p, &[&n1]).unwrap_err().to_string(),
            r#"Post "localhost:8888/filter": unsupported protocol scheme "localhost""#
        );
    }

    /// Empty verbs answer without a call, as upstream: filter passes its input, prioritize gives
    /// 0 with weight 0, bind refuses.
    #[test]
    fn empty_verbs_do_not_call() {
        let e = HttpExtender::new(
            0,
            &LegacyExtender {
                // Nothing listens on port 1: a call would fail.
                url_prefix: "http://127.0.0.1:1".into(),
                weight: 3,
                ..LegacyExtender::default()
            },
        )
        .unwrap();
        let n1 = crate::framework::plugins::testutil::node("n1").info();
        let p = pod("p").info();
        assert!(!e.is_filter() && !e.is_prioritizer() && !e.is_binder());
        assert_eq!(e.filter(&p, &[&n1]).unwrap().nodes, ["n1"]);
        let (list, w) = e.prioritize(&p, &[&n1]).unwrap();
        assert_eq!((list[0].score, w), (0, 0));
        assert_eq!(
            e.bind(&ExtenderBindingArgs::new(&p, "n1"))
                .unwrap_err()
                .to_string(),
            "unexpected empty bindVerb in extender"
        );
    }

    /// A one-connection HTTP server on loopback: reads one request, writes `head` (status line,
    /// headers and perhaps part of a body) and then holds the connection open, silent, until
    /// the returned sender is dropped.
    fn stalling_server(head: &'static str) -> (String, std::sync::mpsc::Sender<()>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (release, released) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 4096];
            // The whole request: headers, then Content-Length bytes of body.
            loop {
                let n = conn.read(&mut buf).unwrap();
                req.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&req).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if req.len() >= end + 4 + len {
                        break;
                    }
                }
                assert!(n > 0, "client closed early");
            }
            conn.write_all(head.as_bytes()).unwrap();
            conn.flush().unwrap();
            let _ = released.recv();
        });
        (url, release)
    }

    fn filter_extender(url: &str, http_timeout: Duration) -> HttpExtender {
        HttpExtender::new(
            0,
            &LegacyExtender {
                url_prefix: url.into(),
                filter_verb: "filter".into(),
                http_timeout: http_timeout.as_nanos() as i64,
                ..LegacyExtender::default()
            },
        )
        .unwrap()
    }

    /// Upstream's `send` checks the status code before reading the body: a non-200 answer fails
    /// with its code at once, even if its body never comes.
    #[test]
    fn non_200_fails_with_its_code_without_reading_the_body() {
        let (url, _release) =
            stalling_server("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100\r\n\r\n");
        let e = filter_extender(&url, Duration::from_secs(30));
        let p = pod("p").info();
        let n1 = crate::framework::plugins::testutil::node("n1").info();
        assert_eq!(
            e.filter(&p, &[&n1]).unwrap_err().to_string(),
            format!("failed filter with extender at URL {url}/filter, code 503")
        );
    }

    /// `http.Client.Timeout` striking while the body is read: `json.Decoder` returns the body
    /// read error as is, without the `Post "<url>":` prefix of a timeout before the headers.
    #[test]
    fn timeout_while_reading_the_body_has_go_text() {
        let (url, _release) = stalling_server(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"Node",
        );
        let e = filter_extender(&url, Duration::from_millis(200));
        let p = pod("p").info();
        let n1 = crate::framework::plugins::testutil::node("n1").info();
        assert_eq!(
            e.filter(&p, &[&n1]).unwrap_err().to_string(),
            "context deadline exceeded (Client.Timeout exceeded while reading body)"
        );
    }
}
