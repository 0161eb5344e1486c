//! Secure serving of the admin endpoint as kube-scheduler does it (k8s.io/apiserver
//! `pkg/server/options/{serving,authentication,authorization}.go`, v0.22):
//!
//! - HTTPS on `--bind-address`:`--secure-port` (default `0.0.0.0:10259`) with the certificate
//!   and key of `--tls-cert-file` / `--tls-private-key-file`, or, without them, a self-signed
//!   one made in memory at start (a CA `localhost-ca@<unix>` signing a leaf `localhost@<unix>`
//!   for `localhost`, `127.0.0.1` and the bind address; served as leaf + CA);
//! - delegated authentication: a bearer token is checked with a TokenReview
//!   (`authentication.k8s.io/v1`), no credentials is the anonymous user `system:anonymous`
//!   (group `system:unauthenticated`), a token the review rejects is `401 Unauthorized`;
//! - delegated authorization: group `system:masters` and the `--authorization-always-allow-paths`
//!   (default `/healthz,/readyz,/livez`; exact, or a prefix when ending in `*`) pass; anything
//!   else needs a SubjectAccessReview (`authorization.k8s.io/v1`, `nonResourceAttributes{path,
//!   verb}`, the verb the lower-cased HTTP method) that allows it, else `403` with
//!   `forbidden: User "<name>" cannot get path "/metrics"`;
//! - both answers cached (TokenReview by SHA-256 of the token, 10 s; SubjectAccessReview by
//!   the request's attributes, 10 s allowed / 10 s denied; transport errors not cached).
//!
//! Not reproduced: client certificates (`--client-ca-file`) and front-proxy headers (the
//! `extension-apiserver-authentication` ConfigMap): bearer tokens are what Prometheus and the
//! kubelet's probes (no credentials) use. The certificate key is ECDSA P-256, not RSA-2048
//! (`ring` cannot generate RSA keys). `--insecure-dev-http` serves plain HTTP with neither
//! authentication nor authorization, for local development only.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tracing::{debug, error, warn};

use crate::flags::parse_duration;

/// Most entries each review cache keeps (upstream's SubjectAccessReview LRU size).
const CACHE_CAPACITY: usize = 8192;
/// How long one TokenReview or SubjectAccessReview call may take.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serving flags of `mini-scheduler run`, kube-scheduler's names and defaults.
#[derive(clap::Args, Debug, Clone)]
pub struct ServingArgs {
    /// HTTPS port of /metrics, /healthz, /livez and /readyz; 0 serves nothing.
    #[arg(long, env = "MINI_SCHEDULER_SECURE_PORT", default_value_t = 10259)]
    pub secure_port: u16,
    /// Address the HTTPS port listens on (0.0.0.0: every interface).
    #[arg(long, env = "MINI_SCHEDULER_BIND_ADDRESS", default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// PEM certificate (leaf first, then its chain) served on the secure port; without it and
    /// --tls-private-key-file a self-signed certificate is generated in memory at start.
    #[arg(
        long,
        env = "MINI_SCHEDULER_TLS_CERT_FILE",
        value_name = "FILE",
        requires = "tls_private_key_file"
    )]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key of --tls-cert-file.
    #[arg(
        long,
        env = "MINI_SCHEDULER_TLS_PRIVATE_KEY_FILE",
        value_name = "FILE",
        requires = "tls_cert_file"
    )]
    pub tls_private_key_file: Option<PathBuf>,
    /// kubeconfig of the API server that answers TokenReviews; default: the scheduler's own
    /// client configuration (--kubeconfig or in-cluster).
    #[arg(
        long,
        env = "MINI_SCHEDULER_AUTHENTICATION_KUBECONFIG",
        value_name = "FILE"
    )]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// kubeconfig of the API server that answers SubjectAccessReviews; default: the
    /// scheduler's own client configuration.
    #[arg(
        long,
        env = "MINI_SCHEDULER_AUTHORIZATION_KUBECONFIG",
        value_name = "FILE"
    )]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// Paths served without authorization (exact, or a prefix when ending in `*`),
    /// comma-separated.
    #[arg(
        long,
        env = "MINI_SCHEDULER_AUTHORIZATION_ALWAYS_ALLOW_PATHS",
        value_delimiter = ',',
        default_value = "/healthz,/readyz,/livez"
    )]
    pub authorization_always_allow_paths: Vec<String>,
    /// How long a TokenReview answer is cached.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub authentication_token_webhook_cache_ttl: Duration,
    /// How long an allowing SubjectAccessReview answer is cached.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub authorization_webhook_cache_authorized_ttl: Duration,
    /// How long a refusing SubjectAccessReview answer is cached.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
    /// Serve plain HTTP with neither authentication nor authorization on
    /// --bind-address:--secure-port. For local development only: anyone who reaches the port
    /// reads /metrics.
    #[arg(long, env = "MINI_SCHEDULER_INSECURE_DEV_HTTP")]
    pub insecure_dev_http: bool,
    /// Deprecated: serve plain HTTP without authentication at this address (what
    /// --insecure-dev-http with --bind-address and --secure-port does).
    #[arg(
        long,
        hide = true,
        env = "MINI_SCHEDULER_ADMIN_ADDRESS",
        value_name = "ADDR"
    )]
    pub admin_address: Option<SocketAddr>,
}

/// Why serving could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ServingError {
    /// A certificate or key file could not be read or used.
    #[error("{flag} {path}: {message}")]
    Tls {
        /// The flag naming the file.
        flag: &'static str,
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// The self-signed certificate could not be generated.
    #[error("generating the self-signed serving certificate: {0}")]
    SelfSigned(String),
    /// The listening socket could not be bound.
    #[error("--bind-address {addr} / --secure-port: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An always-allow path is not a path.
    #[error("--authorization-always-allow-paths: {0:?} must start with '/'")]
    AllowPath(String),
}

/// Where and how the admin endpoint is served.
pub enum Listener {
    /// HTTPS with delegated authentication and authorization.
    Secure {
        /// The bound socket.
        listener: TcpListener,
        /// The TLS configuration.
        tls: TlsAcceptor,
    },
    /// Plain HTTP, no authentication (--insecure-dev-http, or the deprecated --admin-address).
    Insecure(TcpListener),
    /// --secure-port 0: nothing served.
    Disabled,
}

/// Binds the admin socket as `args` say, with its TLS material.
///
/// # Errors
/// A [`ServingError`] naming the flag and value at fault.
pub async fn bind(args: &ServingArgs) -> Result<Listener, ServingError> {
    for p in &args.authorization_always_allow_paths {
        if !p.starts_with('/') {
            return Err(ServingError::AllowPath(p.clone()));
        }
    }
    let bind = |addr: SocketAddr| async move {
        TcpListener::bind(addr)
            .await
            .map_err(|source| ServingError::Bind { addr, source })
    };
    if let Some(addr) = args.admin_address {
        warn!(
            "Flag --admin-address has been deprecated, it serves plain HTTP without authentication; use --secure-port and --bind-address (HTTPS), or --insecure-dev-http for local development"
        );
        return Ok(Listener::Insecure(bind(addr).await?));
    }
    if args.secure_port == 0 {
        return Ok(Listener::Disabled);
    }
    let addr = SocketAddr::new(args.bind_address, args.secure_port);
    if args.insecure_dev_http {
        warn!(address = %addr, "Serving plain HTTP without authentication or authorization (--insecure-dev-http): for local development only");
        return Ok(Listener::Insecure(bind(addr).await?));
    }
    let config = match (&args.tls_cert_file, &args.tls_private_key_file) {
        (Some(cert), Some(key)) => tls_from_files(cert, key)?,
        _ => self_signed(args.bind_address)?,
    };
    Ok(Listener::Secure {
        listener: bind(addr).await?,
        tls: TlsAcceptor::from(Arc::new(config)),
    })
}

fn server_config(
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
) -> Result<rustls::ServerConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The serving configuration of PEM files (`--tls-cert-file`: leaf then chain).
fn tls_from_files(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, ServingError> {
    use rustls::pki_types::pem::PemObject;
    let err = |flag: &'static str, path: &Path, message: String| ServingError::Tls {
        flag,
        path: path.display().to_string(),
        message,
    };
    let chain = rustls::pki_types::CertificateDer::pem_file_iter(cert)
        .map_err(|e| err("--tls-cert-file", cert, e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err("--tls-cert-file", cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(err(
            "--tls-cert-file",
            cert,
            "no CERTIFICATE block".to_string(),
        ));
    }
    let key_der = rustls::pki_types::PrivateKeyDer::from_pem_file(key)
        .map_err(|e| err("--tls-private-key-file", key, e.to_string()))?;
    server_config(chain, key_der).map_err(|e| err("--tls-private-key-file", key, e))
}

/// `(year, month, day)` of a Unix time (Howard Hinnant's days-to-civil algorithm).
fn civil(unix: u64) -> (i32, u8, u8) {
    let z = (unix / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y as i32, m as u8, d as u8)
}

/// kube-scheduler's `MaybeDefaultWithSelfSignedCerts("localhost", nil, [127.0.0.1])`: a CA
/// `localhost-ca@<unix>` signs a leaf `localhost@<unix>` for DNS `localhost`, IP `127.0.0.1`
/// and the bind address when it is a specific one; valid from yesterday for a year (rcgen
/// takes whole days); served as leaf + CA, kept in memory only.
fn self_signed(bind: IpAddr) -> Result<rustls::ServerConfig, ServingError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let e = |e: rcgen::Error| ServingError::SelfSigned(e.to_string());
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y0, m0, d0) = civil(now.saturating_sub(86_400));
    let (y1, m1, d1) = civil(now + 365 * 86_400);
    let validity = |p: &mut CertificateParams| {
        p.not_before = rcgen::date_time_ymd(y0, m0, d0);
        p.not_after = rcgen::date_time_ymd(y1, m1, d1);
    };
    let ca_key = KeyPair::generate().map_err(e)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(e)?;
    ca.distinguished_name
        .push(DnType::CommonName, format!("localhost-ca@{now}"));
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    validity(&mut ca);
    let ca_cert = ca.self_signed(&ca_key).map_err(e)?;
    let issuer = Issuer::new(ca, ca_key);

    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    if !bind.is_unspecified() && !bind.is_loopback() {
        names.push(bind.to_string());
    }
    let leaf_key = KeyPair::generate().map_err(e)?;
    let mut leaf = CertificateParams::new(names).map_err(e)?;
    leaf.distinguished_name
        .push(DnType::CommonName, format!("localhost@{now}"));
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    validity(&mut leaf);
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(e)?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    server_config(vec![leaf_cert.der().clone(), ca_cert.der().clone()], key)
        .map_err(ServingError::SelfSigned)
}

/// The user a request was authenticated as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// `status.user.username` (`system:anonymous` without credentials).
    pub name: String,
    /// `status.user.uid`.
    pub uid: String,
    /// `status.user.groups` (with `system:authenticated` added, as upstream's union
    /// authenticator does, or `system:unauthenticated` for the anonymous user).
    pub groups: Vec<String>,
    /// `status.user.extra`.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl User {
    fn anonymous() -> User {
        User {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
            extra: Default::default(),
        }
    }
}

/// A small TTL cache (entries past their deadline are dropped when the cache fills).
struct TtlCache<V> {
    entries: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V: Clone> TtlCache<V> {
    fn new() -> Self {
        TtlCache {
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The value cached for `key`, unless it expired by `now`.
    fn get(&self, key: &str, now: Instant) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        let (until, v) = entries.get(key)?;
        (*until > now).then(|| v.clone())
    }

    /// Cache `value` for `key` from `now` for `ttl` (a zero TTL caches nothing).
    fn put(&self, key: String, value: V, now: Instant, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= CACHE_CAPACITY {
            entries.retain(|_, (until, _)| *until > now);
            if entries.len() >= CACHE_CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, (now + ttl, value));
    }
}

/// What a SubjectAccessReview said.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    Allow,
    /// Denied or no opinion, with the review's reason (may be empty).
    Refuse(String),
}

/// Delegated authentication and authorization of the secure port.
pub struct DelegatedAuth {
    authn: kube::Client,
    authz: kube::Client,
    always_allow: Vec<String>,
    token_ttl: Duration,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    tokens: TtlCache<Option<User>>,
    decisions: TtlCache<Decision>,
}

impl DelegatedAuth {
    /// Reviews through `authn` (TokenReview) and `authz` (SubjectAccessReview), paths and TTLs
    /// from `args`.
    pub fn new(authn: kube::Client, authz: kube::Client, args: &ServingArgs) -> DelegatedAuth {
        DelegatedAuth {
            authn,
            authz,
            always_allow: args.authorization_always_allow_paths.clone(),
            token_ttl: args.authentication_token_webhook_cache_ttl,
            allowed_ttl: args.authorization_webhook_cache_authorized_ttl,
            denied_ttl: args.authorization_webhook_cache_unauthorized_ttl,
            tokens: TtlCache::new(),
            decisions: TtlCache::new(),
        }
    }

    /// `k8s.io/apiserver/pkg/authorization/path`: an exact path, or a prefix ending in `*`.
    fn always_allowed(&self, path: &str) -> bool {
        self.always_allow.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => path == p,
        })
    }

    /// The user of `token`: `Ok(None)` when the review says it is not authenticated. Answers
    /// are cached by the token's SHA-256; transport errors are not.
    async fn authenticate(&self, token: &str) -> Result<Option<User>, String> {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let key: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        if let Some(cached) = self.tokens.get(&key, Instant::now()) {
            return Ok(cached);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            ..Default::default()
        };
        let api: Api<TokenReview> = Api::all(self.authn.clone());
        let answer =
            tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review))
                .await
                .map_err(|_| "TokenReview timed out".to_string())?
                .map_err(|e| format!("TokenReview: {e}"))?;
        let status = answer.status.unwrap_or_default();
        let user = match (status.authenticated, status.user) {
            (Some(true), Some(u)) => {
                let mut groups = u.groups.unwrap_or_default();
                if !groups.iter().any(|g| g == "system:authenticated") {
                    groups.push("system:authenticated".into());
                }
                Some(User {
                    name: u.username.unwrap_or_default(),
                    uid: u.uid.unwrap_or_default(),
                    groups,
                    extra: u.extra.unwrap_or_default(),
                })
            }
            _ => {
                debug!(error = ?status.error, "TokenReview did not authenticate the token");
                None
            }
        };
        self.tokens
            .put(key, user.clone(), Instant::now(), self.token_ttl);
        Ok(user)
    }

    /// The SubjectAccessReview of `user` doing `verb` on non-resource `path`, cached.
    async fn authorize(&self, user: &User, path: &str, verb: &str) -> Result<Decision, String> {
        let spec = SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
            groups: Some(user.groups.clone()),
            extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_string()),
                verb: Some(verb.to_string()),
            }),
            resource_attributes: None,
        };
        let key = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
        if let Some(d) = self.decisions.get(&key, Instant::now()) {
            return Ok(d);
        }
        let review = SubjectAccessReview {
            spec,
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.authz.clone());
        let answer =
            tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review))
                .await
                .map_err(|_| "SubjectAccessReview timed out".to_string())?
                .map_err(|e| format!("SubjectAccessReview: {e}"))?;
        let status = answer.status.unwrap_or_default();
        let (decision, ttl) = if status.allowed && status.denied != Some(true) {
            (Decision::Allow, self.allowed_ttl)
        } else {
            (
                Decision::Refuse(status.reason.unwrap_or_default()),
                self.denied_ttl,
            )
        };
        self.decisions
            .put(key, decision.clone(), Instant::now(), ttl);
        Ok(decision)
    }
}

/// A `metav1.Status` error response, as the apiserver library writes them.
fn status_response(code: StatusCode, reason: &str, message: &str) -> Response {
    let body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code.as_u16(),
    });
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The filter chain's authentication and authorization (`WithAuthentication`,
/// `WithAuthorization`) in front of every route of the secure port.
pub async fn guard(State(auth): State<Arc<DelegatedAuth>>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let verb = req.method().as_str().to_ascii_lowercase();
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| token.trim().to_string())
        })
        .filter(|t| !t.is_empty());
    let user = match bearer {
        None => User::anonymous(),
        Some(token) => match auth.authenticate(&token).await {
            Ok(Some(user)) => user,
            Ok(None) => {
                return status_response(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
            }
            Err(e) => {
                error!(error = %e, "Unable to authenticate the request");
                return status_response(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
            }
        },
    };
    if user.groups.iter().any(|g| g == "system:masters") || auth.always_allowed(&path) {
        return next.run(req).await;
    }
    match auth.authorize(&user, &path, &verb).await {
        Ok(Decision::Allow) => next.run(req).await,
        Ok(Decision::Refuse(reason)) => {
            let mut message = format!(
                "forbidden: User {:?} cannot {verb} path {path:?}",
                user.name
            );
            if !reason.is_empty() {
                message.push_str(": ");
                message.push_str(&reason);
            }
            status_response(StatusCode::FORBIDDEN, "Forbidden", &message)
        }
        Err(e) => {
            error!(error = %e, "Authorization error");
            status_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                &format!("Internal Server Error: {path:?}: {e}"),
            )
        }
    }
}

/// Serves `app` on `listener` until the process ends: HTTPS with `auth` in front of every
/// route for [`Listener::Secure`], plain HTTP for [`Listener::Insecure`].
pub async fn serve(listener: Listener, app: Router, auth: Arc<DelegatedAuth>) {
    match listener {
        Listener::Disabled => {}
        Listener::Insecure(l) => {
            if let Err(e) = axum::serve(l, app).await {
                error!(error = %e, "Admin HTTP server failed");
            }
        }
        Listener::Secure { listener, tls } => {
            let app = app.layer(axum::middleware::from_fn_with_state(auth, guard));
            loop {
                let (tcp, _) = match listener.accept().await {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors and the like: wait rather than spin.
                        warn!(error = %e, "Accepting an admin connection failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let tls = tls.clone();
                let app = app.clone();
                tokio::spawn(async move {
                    let stream =
                        match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await {
                            Ok(Ok(s)) => s,
                            Ok(Err(e)) => {
                                debug!(error = %e, "TLS handshake failed");
                                return;
                            }
                            Err(_) => return,
                        };
                    let svc = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn always_allow_paths_match_exactly_or_by_star_prefix() {
        let args = ServingArgs {
            secure_port: 10259,
            bind_address: "0.0.0.0".parse().unwrap(),
            tls_cert_file: None,
            tls_private_key_file: None,
            authentication_kubeconfig: None,
            authorization_kubeconfig: None,
            authorization_always_allow_paths: vec!["/healthz".into(), "/debug/*".into()],
            authentication_token_webhook_cache_ttl: Duration::from_secs(10),
            authorization_webhook_cache_authorized_ttl: Duration::from_secs(10),
            authorization_webhook_cache_unauthorized_ttl: Duration::from_secs(10),
            insecure_dev_http: false,
            admin_address: None,
        };
        let client = || {
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap()))
                .unwrap()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let _guard = rt.enter();
        let auth = DelegatedAuth::new(client(), client(), &args);
        assert!(auth.always_allowed("/healthz"));
        assert!(!auth.always_allowed("/healthz/ping"), "exact match only");
        assert!(!auth.always_allowed("/healthzz"));
        assert!(auth.always_allowed("/debug/pprof/heap"));
        assert!(!auth.always_allowed("/metrics"));
    }

    #[test]
    fn self_signed_certificate_is_made_in_memory() {
        // Leaf + CA, usable by rustls.
        assert!(self_signed("0.0.0.0".parse().unwrap()).is_ok());
        assert!(self_signed("10.1.2.3".parse().unwrap()).is_ok());
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(951_782_400), (2000, 2, 29));
        assert_eq!(civil(1_798_675_200), (2026, 12, 31));
    }

    #[test]
    fn ttl_cache_expires_and_skips_zero_ttl() {
        let c: TtlCache<u8> = TtlCache::new();
        let t0 = Instant::now();
        c.put("a".into(), 1, t0, Duration::from_secs(10));
        c.put("b".into(), 2, t0, Duration::ZERO);
        assert_eq!(c.get("a", t0 + Duration::from_secs(9)), Some(1));
        assert_eq!(c.get("a", t0 + Duration::from_secs(10)), None);
        assert_eq!(c.get("b", t0), None);
    }
}
