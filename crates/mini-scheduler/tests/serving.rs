//! `mini-scheduler run`'s secure port against the in-memory API test double, as Prometheus and
//! the kubelet's probes reach kube-scheduler's: HTTPS (a self-signed certificate made at start,
//! or the files of `--tls-cert-file` / `--tls-private-key-file`), the probes without
//! credentials, `/metrics` only for a bearer token that a TokenReview authenticates and a
//! SubjectAccessReview authorizes; the review calls are the ones the manifests' binding to
//! `system:auth-delegator` grants.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tests::apiserver::{ApiServer, NonResourceGrant, RequestRecord, Subject};
use tests::binary::{free_port, poll, run_command, seed_node_and_web_pod, terminate};
use tests::manifests::{Kustomization, Manifest, manifests_dir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};

const SCRAPER: &str = "system:serviceaccount:monitoring:prometheus";

/// Accepts any server certificate (Prometheus' `insecure_skip_verify`, the usual setting
/// against kube-scheduler's self-signed one) and remembers the chain it was shown.
#[derive(Debug)]
struct AcceptAny {
    provider: Arc<rustls::crypto::CryptoProvider>,
    seen: Mutex<Vec<CertificateDer<'static>>>,
}

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let mut seen = self.seen.lock().unwrap();
        seen.clear();
        seen.push(end_entity.clone().into_owned());
        seen.extend(intermediates.iter().map(|c| c.clone().into_owned()));
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn accept_any() -> (Arc<AcceptAny>, rustls::ClientConfig) {
    let verifier = Arc::new(AcceptAny {
        provider: provider(),
        seen: Mutex::new(Vec::new()),
    });
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    (verifier, config)
}

/// `GET path` over HTTPS (HTTP/1.0), with `Authorization: Bearer token` when given:
/// `(status, body)`, or `None` if no HTTP answer came.
async fn https_get(
    config: &rustls::ClientConfig,
    port: u16,
    path: &str,
    token: Option<&str>,
) -> Option<(u16, String)> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config.clone()));
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .ok()?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tls.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n{auth}\r\n").as_bytes())
        .await
        .ok()?;
    let mut buf = Vec::new();
    // The server may close without close_notify: keep what was read.
    let _ = tls.read_to_end(&mut buf).await;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

async fn seeded_api() -> ApiServer {
    let api = ApiServer::start().await;
    seed_node_and_web_pod(&api, &[("cpu", "500m")]);
    // Prometheus' ServiceAccount token, allowed `get /metrics` (B6's scraper ClusterRole), and
    // a token of a user with no grant.
    api.add_token("scraper-token", SCRAPER, &["system:serviceaccounts"]);
    api.add_token("nobody-token", "nobody", &[]);
    api.grant_non_resource(NonResourceGrant {
        name: "prometheus-metrics".into(),
        subject: Subject::User(SCRAPER.into()),
        urls: vec!["/metrics".into()],
        verbs: vec!["get".into()],
    });
    api
}

fn spawn_run(
    api: &ApiServer,
    dir: &std::path::Path,
    name: &str,
    extra: &[&str],
) -> tokio::process::Child {
    run_command(env!("CARGO_BIN_EXE_mini-scheduler"), api, dir)
        .args([
            "--bind-address",
            "127.0.0.1",
            "--leader-elect-resource-namespace",
            "default",
        ])
        .args(extra)
        .env("POD_NAME", name)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// The review calls of the process named `name` (its client identity starts with it).
fn reviews_of(api: &ApiServer, name: &str) -> Vec<RequestRecord> {
    api.requests()
        .into_iter()
        .filter(|r| r.client.starts_with(&format!("{name}_")))
        .filter(|r| {
            matches!(
                r.resource.as_deref(),
                Some("tokenreviews" | "subjectaccessreviews")
            )
        })
        .collect()
}

async fn stop(mut child: tokio::process::Child) {
    let (code, stderr) = terminate(&mut child).await;
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_port_authenticates_and_authorizes_through_the_api() {
    let api = seeded_api().await;
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("mini-scheduler-serving-{}", std::process::id()));
    let child = spawn_run(
        &api,
        &dir,
        "serving-replica",
        &["--secure-port", &port.to_string()],
    );
    let (verifier, tls) = accept_any();

    // Probes: no credentials, always allowed.
    poll("/readyz over HTTPS", async || {
        https_get(&tls, port, "/readyz", None)
            .await
            .filter(|(c, _)| *c == 200)
    })
    .await;
    for path in ["/healthz", "/livez"] {
        assert_eq!(
            https_get(&tls, port, path, None).await.unwrap().0,
            200,
            "{path}"
        );
    }
    // The self-signed certificate: leaf + CA, for localhost.
    {
        let chain = verifier.seen.lock().unwrap().clone();
        assert_eq!(chain.len(), 2, "leaf + CA");
        let leaf = String::from_utf8_lossy(chain[0].as_ref()).into_owned();
        assert!(leaf.contains("localhost@"), "leaf CN localhost@<unix>");
        let ca = String::from_utf8_lossy(chain[1].as_ref()).into_owned();
        assert!(ca.contains("localhost-ca@"), "CA CN localhost-ca@<unix>");
    }

    // /metrics: anonymous → 403 (the SubjectAccessReview for system:anonymous refuses).
    let (code, body) = https_get(&tls, port, "/metrics", None).await.unwrap();
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"forbidden: User \"system:anonymous\" cannot get path \"/metrics\""#),
        "{body}"
    );
    // A token the TokenReview rejects → 401, also on an always-allowed path.
    for path in ["/metrics", "/healthz"] {
        let (code, body) = https_get(&tls, port, path, Some("forged")).await.unwrap();
        assert_eq!(code, 401, "{path}: {body}");
    }
    // Authenticated but not authorized → 403 naming the user.
    let (code, body) = https_get(&tls, port, "/metrics", Some("nobody-token"))
        .await
        .unwrap();
    assert_eq!(code, 403, "{body}");
    assert!(body.contains(r#"User \"nobody\""#), "{body}");
    // The scraper: metrics.
    let (code, metrics) = https_get(&tls, port, "/metrics", Some("scraper-token"))
        .await
        .unwrap();
    assert_eq!(code, 200, "{metrics}");
    assert!(
        metrics.contains("scheduler_schedule_attempts_total"),
        "{metrics}"
    );

    // What went to the API: TokenReviews of the tokens, SubjectAccessReviews with the
    // request's path and lower-cased verb; answers cached (a second scrape asks nothing new).
    let before = reviews_of(&api, "serving-replica");
    let (code, _) = https_get(&tls, port, "/metrics", Some("scraper-token"))
        .await
        .unwrap();
    assert_eq!(code, 200);
    let after = reviews_of(&api, "serving-replica");
    assert_eq!(before.len(), after.len(), "cached: {after:?}");
    let count = |resource: &str| {
        after
            .iter()
            .filter(|r| r.resource.as_deref() == Some(resource))
            .count()
    };
    // Tokens: forged (its rejection is cached too: the /healthz try asked nothing), nobody,
    // scraper.
    assert_eq!(count("tokenreviews"), 3, "{after:?}");
    // Decisions: anonymous, nobody, scraper (probes need none).
    assert_eq!(count("subjectaccessreviews"), 3, "{after:?}");

    // RBAC: every review call is granted by the manifests (the ServiceAccount bound to the
    // bootstrap ClusterRole system:auth-delegator: create tokenreviews, create
    // subjectaccessreviews), and both grants are used.
    let k = Kustomization::load(&manifests_dir()).unwrap();
    let objects = k.build().unwrap_or_else(|e| panic!("{e}"));
    let delegated = objects.iter().any(|o| match o {
        Manifest::ClusterRoleBinding(b) => {
            b.role_ref.kind == "ClusterRole"
                && b.role_ref.name == "system:auth-delegator"
                && b.subjects.iter().flatten().any(|s| {
                    s.kind == "ServiceAccount"
                        && s.name == "mini-scheduler"
                        && s.namespace == k.namespace
                })
        }
        _ => false,
    });
    assert!(
        delegated,
        "manifests: no ClusterRoleBinding of the ServiceAccount to system:auth-delegator"
    );
    let auth_delegator = [
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
    ];
    for r in &after {
        assert!(
            auth_delegator.iter().any(|(g, res, v)| {
                r.api_group.as_deref() == Some(g)
                    && r.resource.as_deref() == Some(res)
                    && r.verb == *v
            }),
            "not granted by system:auth-delegator: {r:?}"
        );
    }
    stop(child).await;
    let _ = std::fs::remove_dir_all(&dir);
    api.shutdown().await;
}

/// `--tls-cert-file` / `--tls-private-key-file`: the files' certificate is served (a client
/// that trusts only their CA verifies it), and plain HTTP gets no answer on the secure port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_port_serves_the_given_certificate() {
    let api = seeded_api().await;
    let dir = std::env::temp_dir().join(format!(
        "mini-scheduler-serving-files-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let (cert_file, key_file) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&cert_file, leaf.pem() + &ca_cert.pem()).unwrap();
    std::fs::write(&key_file, leaf_key.serialize_pem()).unwrap();

    let port = free_port();
    let child = spawn_run(
        &api,
        &dir,
        "files-replica",
        &[
            "--secure-port",
            &port.to_string(),
            "--tls-cert-file",
            cert_file.to_str().unwrap(),
            "--tls-private-key-file",
            key_file.to_str().unwrap(),
        ],
    );
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca_cert.der().clone()).unwrap();
    let verified = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    poll("/readyz over verified HTTPS", async || {
        https_get(&verified, port, "/readyz", None)
            .await
            .filter(|(c, _)| *c == 200)
    })
    .await;
    let (code, _) = https_get(&verified, port, "/metrics", Some("scraper-token"))
        .await
        .unwrap();
    assert_eq!(code, 200);
    // Plain HTTP on the secure port: no HTTP answer.
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    assert!(
        !String::from_utf8_lossy(&buf).starts_with("HTTP/1."),
        "plain HTTP answered"
    );
    stop(child).await;
    let _ = std::fs::remove_dir_all(&dir);
    api.shutdown().await;
}
