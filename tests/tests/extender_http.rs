//! HTTP scheduler extenders against a real extender served on loopback ([`ExtenderServer`]):
//! the scheduling core (through `simulate`, the same cycle cluster mode runs) filters,
//! prioritizes and reports errors as kube-scheduler v1.22 does; the HTTP client honours
//! `nodeCacheCapable`, `httpTimeout`, `ignorable`, the bind verb and every TLS setting
//! (certificates generated here with rcgen, ring provider).
//!
//! Plain `#[test]`s: the scheduling core blocks on extender calls; each server runs on its own
//! thread. No sleeps here; the only delay is the server's deliberate one in the timeout test.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use base64::Engine;
use k8s_openapi::api::core::v1::{Node, Pod};
use scheduler::extender::{Extender, ExtenderBindingArgs, HttpExtender};
use scheduler::model::{NodeInfo, PodInfo};
use scheduler::policy::{LegacyExtender, ResolvedPolicy};
use scheduler::sim::{self, Cluster, PodOutcome, PodStatus, SimulationConfig};
use serde_json::{Value, json};
use tests::extender::{Call, ExtenderServer, Reply, ServerTls, node_names, sync_handler};
use tests::objects;

const SCHEDULER_NAME: &str = "mini-scheduler";

fn node(name: &str, cpu: &str) -> Node {
    let mut n = objects::node(name, &[("cpu", cpu), ("memory", "8Gi"), ("pods", "110")]);
    n.metadata.uid = Some(format!("uid-{name}"));
    n
}

fn pod(name: &str, cpu: &str) -> Pod {
    let mut p = objects::pod(name, &[("cpu", cpu), ("memory", "64Mi")]);
    p.metadata.uid = Some(format!("uid-{name}"));
    p
}

/// `predicates: [PodFitsResources]`, `priorities: []` and these extenders.
fn policy(extenders: Value) -> ResolvedPolicy {
    let doc = json!({
        "kind": "Policy",
        "apiVersion": "v1",
        "predicates": [{"name": "PodFitsResources"}],
        "priorities": [],
        "extenders": extenders,
    });
    scheduler::policy::parse_policy("test-policy.json", &doc.to_string())
        .unwrap()
        .resolved
}

/// node-a and node-b have 4 cpus, node-c has 1.
fn nodes() -> Vec<Node> {
    vec![
        node("node-a", "4"),
        node("node-b", "4"),
        node("node-c", "1"),
    ]
}

fn simulate(policy: &ResolvedPolicy, pods: Vec<Pod>, explain: bool) -> Vec<PodOutcome> {
    simulate_report(policy, pods, explain).pods
}

fn simulate_report(policy: &ResolvedPolicy, pods: Vec<Pod>, explain: bool) -> sim::Report {
    let cluster = Cluster {
        nodes: nodes(),
        pods,
        ..Default::default()
    };
    let cfg = SimulationConfig {
        scheduler_name: SCHEDULER_NAME.into(),
        seed: 7,
        percentage_of_nodes_to_score: 100,
        explain,
    };
    sim::simulate(cluster, policy, &cfg).unwrap().report
}

fn outcome<'a>(outcomes: &'a [PodOutcome], name: &str) -> &'a PodOutcome {
    outcomes.iter().find(|o| o.name == name).unwrap()
}

/// A filter that rejects node-a ("reserved for batch") and, for pod `nowhere`, every node as
/// unresolvable; it answers with the full Node objects it kept, as a non-cache-capable extender
/// does.
fn reserving_filter(c: &Call) -> Reply {
    let items = c.body["Nodes"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if c.pod_name() == "nowhere" {
        let failed: serde_json::Map<String, Value> = node_names(&c.body)
            .into_iter()
            .map(|n| (n, json!("rejected by extender")))
            .collect();
        return Reply::ok(json!({"Nodes": {"items": []}, "FailedAndUnresolvableNodes": failed}));
    }
    let kept: Vec<Value> = items
        .into_iter()
        .filter(|n| n["metadata"]["name"] != "node-a")
        .collect();
    Reply::ok(json!({
        "Nodes": {"metadata": {}, "items": kept},
        "NodeNames": null,
        "FailedNodes": {"node-a": "reserved for batch"},
        "Error": ""
    }))
}

/// The extender sees only the nodes that passed the filter plugins, as full objects; its
/// `FailedNodes` / `FailedAndUnresolvableNodes` messages join the plugins' reasons in the
/// FitError text.
#[test]
fn filter_receives_feasible_nodes_and_its_failures_enter_the_fit_error() {
    let server = ExtenderServer::start(sync_handler(reserving_filter), None);
    let p = policy(json!([{"urlPrefix": server.url(), "filterVerb": "filter"}]));
    let out = simulate(
        &p,
        vec![pod("fits", "2"), pod("nowhere", "2"), pod("huge", "3")],
        false,
    );
    // node-c is too small for every pod: only node-a and node-b reach the extender.
    let fits = outcome(&out, "fits");
    assert_eq!(fits.status, PodStatus::Scheduled, "{fits:?}");
    assert_eq!(fits.node.as_deref(), Some("node-b"));
    let nowhere = outcome(&out, "nowhere");
    assert_eq!(nowhere.status, PodStatus::Unschedulable);
    assert_eq!(
        nowhere.message,
        "0/3 nodes are available: 1 Insufficient cpu, 2 rejected by extender."
    );
    // "huge" (3 cpus) fits only node-a now that node-b holds 2: the extender rejects it there.
    let huge = outcome(&out, "huge");
    assert_eq!(
        huge.message,
        "0/3 nodes are available: 1 reserved for batch, 2 Insufficient cpu."
    );
    let calls = server.calls_of("filter");
    assert_eq!(calls.len(), 3);
    assert_eq!(node_names(&calls[0].body), ["node-a", "node-b"]);
    assert_eq!(calls[0].body["NodeNames"], Value::Null);
    assert_eq!(
        calls[0].body["Nodes"]["items"][0]["status"]["allocatable"]["cpu"],
        "4"
    );
    assert_eq!(calls[0].pod_name(), "fits");
    assert_eq!(node_names(&calls[2].body), ["node-a"]);
    assert!(server.calls_of("prioritize").is_empty());
}

/// `nodeCacheCapable`: names only, both ways; a name that was not sent is refused.
#[test]
fn node_cache_capable_extenders_exchange_names() {
    let server = ExtenderServer::start(
        sync_handler(|c| {
            assert_eq!(c.body["Nodes"], Value::Null, "no Node objects are sent");
            if c.pod_name() == "ghost" {
                return Reply::ok(json!({"NodeNames": ["node-b", "node-z"]}));
            }
            // Lower-case keys decode too (encoding/json matches case-insensitively).
            Reply::ok(json!({"nodeNames": ["node-b"], "failedNodes": {"node-a": "cache says no"}}))
        }),
        None,
    );
    let url = server.url();
    let p = policy(json!([{"urlPrefix": url, "filterVerb": "filter", "nodeCacheCapable": true}]));
    let out = simulate(&p, vec![pod("named", "100m"), pod("ghost", "100m")], false);
    assert_eq!(outcome(&out, "named").node.as_deref(), Some("node-b"));
    let ghost = outcome(&out, "ghost");
    // An extender error is a scheduling error (v1.22: Error status), not a fit failure.
    assert_eq!(ghost.status, PodStatus::Error);
    assert_eq!(
        ghost.message,
        format!(
            "extender \"{url}\" claims a filtered node \"node-z\" which is not found in the input node list"
        )
    );
    let calls = server.calls_of("filter");
    assert_eq!(
        calls[0].body["NodeNames"],
        json!(["node-a", "node-b", "node-c"])
    );
}

/// Extender scores × weight × 10 decide the node; an extender whose prioritize fails (500) is
/// ignored; the explanation shows each extender's score on the 0..100 scale.
#[test]
fn prioritize_scores_are_weighted_and_failures_ignored() {
    let good = ExtenderServer::start(
        sync_handler(|c| {
            let list: Vec<Value> = node_names(&c.body)
                .into_iter()
                .map(|n| json!({"Host": n, "Score": if n == "node-c" { 10 } else { 3 }}))
                .collect();
            Reply::ok(Value::Array(list))
        }),
        None,
    );
    let broken = ExtenderServer::start(
        sync_handler(|_| Reply {
            status: 500,
            body: json!({}),
            delay: Duration::ZERO,
        }),
        None,
    );
    let p = policy(json!([
        {"urlPrefix": good.url(), "prioritizeVerb": "prioritize", "weight": 2},
        {"urlPrefix": broken.url(), "prioritizeVerb": "prioritize", "weight": 7},
    ]));
    let out = simulate(&p, vec![pod("small", "100m")], true);
    let small = outcome(&out, "small");
    assert_eq!(small.node.as_deref(), Some("node-c"), "{small:?}");
    let scores = small.scores.as_ref().unwrap();
    assert_eq!(scores["node-c"].total, 10 * 2 * 10);
    assert_eq!(scores["node-a"].total, 3 * 2 * 10);
    assert_eq!(
        scores["node-a"].plugins[&format!("Extender({})", good.url())],
        30
    );
    assert_eq!(good.calls_of("prioritize").len(), 1);
    assert_eq!(broken.calls_of("prioritize").len(), 1);
    assert!(good.calls_of("filter").is_empty());
}

/// `httpTimeout` bounds each call: past it the attempt fails with Go's `Client.Timeout` text,
/// or, for an ignorable extender, the extender is skipped.
#[test]
fn timeout_fails_the_attempt_unless_ignorable() {
    const DELAY: Duration = Duration::from_secs(3);
    let slow = ExtenderServer::start(
        sync_handler(|_| Reply {
            delay: DELAY,
            ..Reply::ok(json!({"NodeNames": []}))
        }),
        None,
    );
    let timeout_ns = Duration::from_millis(300).as_nanos() as i64;
    for ignorable in [false, true] {
        let p = policy(json!([{
            "urlPrefix": slow.url(), "filterVerb": "filter",
            "httpTimeout": timeout_ns, "ignorable": ignorable,
        }]));
        let started = Instant::now();
        let out = simulate(&p, vec![pod("p", "100m")], false);
        let took = started.elapsed();
        assert!(
            took < DELAY,
            "the call was cut at the timeout, took {took:?}"
        );
        let o = outcome(&out, "p");
        if ignorable {
            assert_eq!(o.status, PodStatus::Scheduled, "{o:?}");
        } else {
            assert_eq!(o.status, PodStatus::Error);
            assert_eq!(
                o.message,
                format!(
                    "Post \"{}/filter\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                    slow.url()
                )
            );
        }
    }
}

/// The `Error` field, a non-200 answer and a refused connection fail the attempt with
/// upstream's texts, as scheduling errors (v1.22's `Error` status: the pod gets the error; it
/// is not one of the `Unschedulable` failure reasons); the same extender marked `ignorable` is
/// skipped.
#[test]
fn errors_fail_the_attempt_unless_ignorable() {
    let server = ExtenderServer::start(
        sync_handler(|c| match c.verb.as_str() {
            "says-error" => Reply::ok(json!({"Error": "extender is on fire"})),
            _ => Reply {
                status: 503,
                body: json!({}),
                delay: Duration::ZERO,
            },
        }),
        None,
    );
    // A port nothing listens on: bind one and drop it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://127.0.0.1:{}", closed.local_addr().unwrap().port());
    drop(closed);
    let cases = [
        (
            server.url(),
            "says-error",
            "extender is on fire".to_string(),
        ),
        (
            server.url(),
            "unavailable",
            format!(
                "failed unavailable with extender at URL {}/unavailable, code 503",
                server.url()
            ),
        ),
        (
            closed_url.clone(),
            "filter",
            format!("Post \"{closed_url}/filter\": "),
        ),
    ];
    for (url, verb, want) in cases {
        for ignorable in [false, true] {
            let p = policy(json!([{"urlPrefix": url, "filterVerb": verb, "ignorable": ignorable}]));
            let mut report = simulate_report(&p, vec![pod("p", "100m")], false);
            let o = report.pods.remove(0);
            if ignorable {
                assert_eq!(o.status, PodStatus::Scheduled, "{verb}: {o:?}");
            } else {
                assert_eq!(o.status, PodStatus::Error, "{verb}");
                assert!(o.message.starts_with(&want), "{verb}: {}", o.message);
                assert!(report.summary.failure_reasons.is_empty(), "{verb}");
                assert_eq!(report.summary.by_status["Error"], 1, "{verb}");
                assert_eq!(report.summary.by_status["Unschedulable"], 0, "{verb}");
            }
        }
    }
}

fn pod_info(name: &str) -> PodInfo {
    PodInfo::from_pod(pod(name, "100m")).unwrap()
}

fn node_info(name: &str) -> NodeInfo {
    NodeInfo::from_node(node(name, "4")).unwrap()
}

/// The bind verb gets `ExtenderBindingArgs`; the answer's `Error` fails the bind.
#[test]
fn bind_posts_binding_args() {
    let server = ExtenderServer::start(
        sync_handler(|c| {
            if c.body["Node"] == "node-gone" {
                Reply::ok(json!({"Error": "node node-gone is gone"}))
            } else {
                Reply::ok(json!({"Error": ""}))
            }
        }),
        None,
    );
    let ext = HttpExtender::new(
        0,
        &LegacyExtender {
            url_prefix: format!("{}/scheduler/", server.url()),
            bind_verb: "bind".into(),
            ..LegacyExtender::default()
        },
    )
    .unwrap();
    assert!(ext.is_binder());
    let p = pod_info("web-0");
    ext.bind(&ExtenderBindingArgs::new(&p, "node-b")).unwrap();
    let e = ext
        .bind(&ExtenderBindingArgs::new(&p, "node-gone"))
        .unwrap_err();
    assert_eq!(e.to_string(), "node node-gone is gone");
    let calls = server.calls();
    // The trailing "/" of the prefix is trimmed before "/<verb>".
    assert_eq!(calls[0].verb, "scheduler/bind");
    assert_eq!(
        calls[0].body,
        json!({"PodName": "web-0", "PodNamespace": "default", "PodUID": "uid-web-0", "Node": "node-b"})
    );
}

// ---------------------------------------------------------------------------------------------
// HTTPS

struct Pki {
    ca_pem: String,
    server: ServerTls,
    client_cert_pem: String,
    client_key_pem: String,
}

/// A CA, a server certificate for `ext.test` only (not 127.0.0.1), and a client certificate.
fn pki() -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["ext.test".to_string()])
        .unwrap()
        .signed_by(&server_key, &*ca)
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client_cert = CertificateParams::new(vec!["scheduler".to_string()])
        .unwrap()
        .signed_by(&client_key, &*ca)
        .unwrap();
    Pki {
        ca_pem: ca.pem(),
        server: ServerTls {
            cert_pem: server_cert.pem(),
            key_pem: server_key.serialize_pem(),
            client_ca_pem: None,
        },
        client_cert_pem: client_cert.pem(),
        client_key_pem: client_key.serialize_pem(),
    }
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn filter_over(url: &str, enable_https: bool, tls: Option<Value>) -> Result<Vec<String>, String> {
    let mut cfg = json!({
        "urlPrefix": url, "filterVerb": "filter", "enableHttps": enable_https, "nodeCacheCapable": true,
    });
    if let Some(t) = tls {
        cfg["tlsConfig"] = t;
    }
    let cfg: LegacyExtender = serde_json::from_value(cfg).unwrap();
    let ext = HttpExtender::new(0, &cfg).map_err(|e| e.to_string())?;
    let n = node_info("node-a");
    ext.filter(&pod_info("p"), &[&n])
        .map(|r| r.nodes)
        .map_err(|e| e.to_string())
}

fn names_back() -> tests::extender::Handler {
    sync_handler(|c| Reply::ok(json!({"NodeNames": node_names(&c.body)})))
}

/// Server verification: the CA from `caData` or `caFile`, the name from `serverName` (the URL
/// says 127.0.0.1, the certificate only ext.test); `insecure`, and `enableHttps` without a CA,
/// skip verification; without either the system roots do not know the test CA.
#[test]
fn https_verifies_the_server_as_configured() {
    let other_ca = pki().ca_pem;
    let pki = pki();
    let server = ExtenderServer::start(names_back(), Some(pki.server.clone()));
    let url = server.url();
    assert!(url.starts_with("https://127.0.0.1:"));

    let ok = filter_over(
        &url,
        false,
        Some(json!({"caData": b64(&pki.ca_pem), "serverName": "ext.test"})),
    );
    assert_eq!(ok.unwrap(), ["node-a"]);

    let ca_file = std::env::temp_dir().join(format!("extender-ca-{}.pem", std::process::id()));
    std::fs::write(&ca_file, &pki.ca_pem).unwrap();
    let ca_file = ca_file.display().to_string();
    // Case-insensitive keys, as upstream decodes the extender entry.
    let ok = filter_over(
        &url,
        true,
        Some(json!({"CAFile": ca_file, "ServerName": "ext.test"})),
    );
    assert_eq!(ok.unwrap(), ["node-a"]);
    // The certificate does not name 127.0.0.1.
    let e = filter_over(&url, true, Some(json!({"caFile": ca_file}))).unwrap_err();
    assert!(e.starts_with(&format!("Post \"{url}/filter\": ")), "{e}");
    assert!(
        e.contains("certificate not valid for name \"127.0.0.1\""),
        "{e}"
    );

    let e = filter_over(
        &url,
        false,
        Some(json!({"caData": b64(&other_ca), "serverName": "ext.test"})),
    )
    .unwrap_err();
    assert!(e.to_lowercase().contains("certificate"), "{e}");

    assert_eq!(
        filter_over(&url, false, Some(json!({"insecure": true}))).unwrap(),
        ["node-a"]
    );
    assert_eq!(filter_over(&url, true, None).unwrap(), ["node-a"]);
    assert!(filter_over(&url, false, None).is_err());
    let _ = std::fs::remove_file(&ca_file);
    assert_eq!(server.calls_of("filter").len(), 4);
}

/// A server that requires a client certificate accepts the one from `certData`/`keyData` and
/// refuses a client without one.
#[test]
fn https_client_certificate_from_data() {
    let pki = pki();
    let tls = ServerTls {
        client_ca_pem: Some(pki.ca_pem.clone()),
        ..pki.server.clone()
    };
    let server = ExtenderServer::start(names_back(), Some(tls));
    let url = server.url();
    let with_cert = json!({
        "caData": b64(&pki.ca_pem),
        "serverName": "ext.test",
        "certData": b64(&pki.client_cert_pem),
        "keyData": b64(&pki.client_key_pem),
    });
    assert_eq!(
        filter_over(&url, true, Some(with_cert)).unwrap(),
        ["node-a"]
    );
    let without = json!({"caData": b64(&pki.ca_pem), "serverName": "ext.test"});
    let e = filter_over(&url, true, Some(without)).unwrap_err();
    assert!(e.contains("CertificateRequired"), "{e}");
    assert_eq!(server.calls_of("filter").len(), 1);
}
