//! A blocking HTTP(S) POST for extender calls, with the TLS settings of kube-scheduler's
//! `makeTransport` + client-go `TLSConfigFor` (v1.22) and a whole-call timeout like Go's
//! `http.Client.Timeout`.
//!
//! Built on the HTTP stack kube already brings in: hyper 1 + hyper-util's pooled client +
//! hyper-rustls, with rustls' `ring` provider passed explicitly (never aws-lc-rs; no reliance on
//! a process-wide default provider). The requests run on one small dedicated tokio runtime (one
//! worker thread, started on first use, shared by every extender, never dropped) and the caller
//! waits on a std channel, so a call blocks its thread whether or not it runs inside another
//! tokio runtime (cluster mode calls it under `block_in_place` or `spawn_blocking`), and
//! `simulate` needs no runtime of its own. hyper-rustls is used instead of a blocking client
//! crate because it can set the TLS server name independently of the URL (`tlsConfig
//! .serverName`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// TLS client settings, already loaded (files read, base64 decoded).
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsSettings {
    /// Do not verify the server certificate (`insecure`, or HTTPS without a CA).
    pub insecure: bool,
    /// Name to verify the server certificate against and to send as SNI; empty: the URL host.
    pub server_name: String,
    /// PEM CA bundle replacing the system roots.
    pub ca: Option<Vec<u8>>,
    /// PEM client certificate chain and private key (both or neither).
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
}

/// Why a client could not be built or a call failed, in the words of Go's `net/http` and
/// `crypto/tls` where upstream has them (the text becomes the extender call's error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ClientError {
    /// The runtime the calls run on could not start.
    #[error("starting the extender HTTP runtime: {0}")]
    Runtime(String),
    /// rustls refused its default protocol versions with the `ring` provider.
    #[error("{0}")]
    Protocol(String),
    /// The CA bundle (`tlsConfig.caFile` / `caData`) has no usable certificate.
    #[error("unable to load root certificates: {0}")]
    RootCertificates(String),
    /// The client certificate or key is unusable; the message follows Go's `tls:` texts, e.g.
    /// `failed to find any PEM data in certificate input`.
    #[error("tls: {0}")]
    ClientCertificate(String),
    /// `tlsConfig.serverName` is not a DNS name or IP address.
    #[error("invalid serverName {name:?}: {reason}")]
    ServerName {
        /// The name as configured.
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// The URL cannot be requested.
    #[error("parse {url:?}: {reason}")]
    Url {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// Connecting, sending or receiving the headers failed: `Post "<url>": <cause>`.
    #[error("Post {url:?}: {cause}")]
    Post {
        /// The URL.
        url: String,
        /// The error and its causes, joined with `: `.
        cause: String,
    },
    /// The timeout struck before the answer's headers.
    #[error(
        "Post {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    )]
    HeadersTimeout {
        /// The URL.
        url: String,
    },
    /// The timeout struck while reading the body (unwrapped, as `json.Decoder` returns it).
    #[error("context deadline exceeded (Client.Timeout exceeded while reading body)")]
    BodyTimeout,
    /// Reading the body failed.
    #[error("{0}")]
    Body(String),
    /// The call ended without an answer (its task was dropped).
    #[error("Post {url:?}: the extender call was dropped")]
    Dropped {
        /// The URL.
        url: String,
    },
}

/// A pooled HTTP/1.1 client for `http://` and `https://` URLs whose calls block.
#[derive(Clone)]
pub(crate) struct BlockingClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Option<Duration>,
}

/// The runtime every extender call runs on.
fn runtime() -> Result<&'static tokio::runtime::Runtime, ClientError> {
    static RT: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("extender-http")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| ClientError::Runtime(e.clone()))
}

/// Accepts any server certificate (Go's `InsecureSkipVerify`); handshake signatures are still
/// checked with the provider's algorithms.
#[derive(Debug)]
struct NoVerification(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

fn tls_config(tls: &TlsSettings) -> Result<rustls::ClientConfig, ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Protocol(e.to_string()))?;
    let builder = if tls.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(algorithms)))
    } else {
        let mut roots = RootCertStore::empty();
        match &tls.ca {
            Some(pem) => {
                let certs = CertificateDer::pem_slice_iter(pem)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ClientError::RootCertificates(e.to_string()))?;
                if certs.is_empty() {
                    return Err(ClientError::RootCertificates(
                        "unable to parse bytes as PEM block".into(),
                    ));
                }
                for c in certs {
                    roots
                        .add(c)
                        .map_err(|e| ClientError::RootCertificates(e.to_string()))?;
                }
            }
            None => {
                // Go uses the system pool when no CA is given.
                let native = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(native.certs);
            }
        }
        builder.with_root_certificates(roots)
    };
    match &tls.client_cert {
        None => Ok(builder.with_no_client_auth()),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| {
                    ClientError::ClientCertificate(format!(
                        "failed to parse certificate PEM data: {e}"
                    ))
                })?;
            if chain.is_empty() {
                return Err(ClientError::ClientCertificate(
                    "failed to find any PEM data in certificate input".into(),
                ));
            }
            let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| {
                ClientError::ClientCertificate(format!(
                    "failed to find any PEM data in key input: {e}"
                ))
            })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| ClientError::ClientCertificate(e.to_string()))
        }
    }
}

impl BlockingClient {
    /// A client with these TLS settings; each call may take at most `timeout` in all (`None`:
    /// no limit).
    ///
    /// # Errors
    /// Unusable TLS material (no PEM block, bad key, bad server name).
    pub(crate) fn new(
        tls: &TlsSettings,
        timeout: Option<Duration>,
    ) -> Result<BlockingClient, ClientError> {
        let config = tls_config(tls)?;
        let builder = HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http();
        let builder = if tls.server_name.is_empty() {
            builder
        } else {
            let name = ServerName::try_from(tls.server_name.clone()).map_err(|e| {
                ClientError::ServerName {
                    name: tls.server_name.clone(),
                    reason: e.to_string(),
                }
            })?;
            builder.with_server_name_resolver(FixedServerNameResolver::new(name))
        };
        let connector = builder.enable_http1().build();
        // Idle pooled connections expire after hyper-util's default 90 s.
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .build(connector);
        Ok(BlockingClient { client, timeout })
    }

    /// `POST url` with a JSON body; returns the status code and, for a 200 answer only, the body
    /// (upstream's `send` checks the code before it reads anything). Blocks the calling thread
    /// until the answer, an error, or the timeout, which covers the whole call.
    ///
    /// # Errors
    /// Go `http.Client`-style texts: `Post "<url>": <cause>`, with `context deadline exceeded
    /// (Client.Timeout exceeded while awaiting headers)` when the timeout strikes before the
    /// answer's headers; `context deadline exceeded (Client.Timeout exceeded while reading
    /// body)`, unwrapped as `json.Decoder` returns it, when it strikes while reading the body.
    pub(crate) fn post_json(&self, url: &str, body: Vec<u8>) -> Result<(u16, Bytes), ClientError> {
        let rt = runtime()?;
        let req = http::Request::post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ClientError::Url {
                url: url.to_string(),
                reason: e.to_string(),
            })?;
        let client = self.client.clone();
        let timeout = self.timeout;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let url_owned = url.to_string();
        rt.spawn(async move {
            let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
            let r = async {
                let resp = match with_deadline(deadline, client.request(req)).await {
                    None => return Err(ClientError::HeadersTimeout { url: url_owned }),
                    Some(r) => r.map_err(|e| ClientError::Post {
                        url: url_owned,
                        cause: error_chain(&e),
                    })?,
                };
                let status = resp.status().as_u16();
                if status != 200 {
                    return Ok((status, Bytes::new()));
                }
                match with_deadline(deadline, resp.into_body().collect()).await {
                    None => Err(ClientError::BodyTimeout),
                    Some(b) => Ok((
                        status,
                        b.map_err(|e| ClientError::Body(error_chain(&e)))?
                            .to_bytes(),
                    )),
                }
            }
            .await;
            let _ = tx.send(r);
        });
        rx.recv().unwrap_or_else(|_| {
            Err(ClientError::Dropped {
                url: url.to_string(),
            })
        })
    }
}

/// `f`'s output, or `None` once `deadline` (if any) has passed.
async fn with_deadline<F: std::future::Future>(
    deadline: Option<tokio::time::Instant>,
    f: F,
) -> Option<F::Output> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, f).await.ok(),
        None => Some(f.await),
    }
}

/// An error and its causes, joined with `: `.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}
