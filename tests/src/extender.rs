//! A scheduler extender for tests: an axum server on `127.0.0.1:0`, plain HTTP or HTTPS (rustls
//! with the `ring` provider, optionally requiring a client certificate), that records every call
//! (`POST /<verb>` with its JSON body) and answers through a test-supplied handler.
//!
//! [`ExtenderServer::start`] runs it on its own thread and runtime, so that tests driving the
//! blocking scheduling core from a plain `#[test]` can use it; [`ExtenderServer::spawn`] runs it
//! on the current tokio runtime (cluster-mode tests, whose handlers call the API double).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;

/// One call the extender received.
#[derive(Debug, Clone)]
pub struct Call {
    /// The verb (the URL path after the prefix, without the leading `/`).
    pub verb: String,
    /// The JSON body.
    pub body: Value,
}

impl Call {
    /// `metadata.name` of the call's `Pod` (filter, prioritize), or empty.
    pub fn pod_name(&self) -> String {
        self.body
            .pointer("/Pod/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }
}

/// The answer to a call.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// JSON body.
    pub body: Value,
    /// Wait this long before answering (to exercise the scheduler's `httpTimeout`).
    pub delay: Duration,
}

impl Reply {
    /// 200 with this body, at once.
    pub fn ok(body: Value) -> Reply {
        Reply {
            status: 200,
            body,
            delay: Duration::ZERO,
        }
    }
}

/// The answer future of a handler.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send>>;
/// Computes the answer to a call.
pub type Handler = Arc<dyn Fn(Call) -> ReplyFuture + Send + Sync>;

/// A handler from a synchronous function.
pub fn sync_handler(f: impl Fn(&Call) -> Reply + Send + Sync + 'static) -> Handler {
    Arc::new(move |c| {
        let r = f(&c);
        Box::pin(async move { r })
    })
}

/// Server TLS: certificate chain and key (PEM), and the CA (PEM) client certificates must chain
/// to, if client certificates are required.
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// Server certificate chain, PEM.
    pub cert_pem: String,
    /// Server private key, PEM.
    pub key_pem: String,
    /// Require a client certificate signed by this CA (PEM).
    pub client_ca_pem: Option<String>,
}

#[derive(Clone)]
struct AppState {
    handler: Handler,
    calls: Arc<Mutex<Vec<Call>>>,
}

async fn handle(
    State(st): State<AppState>,
    Path(verb): Path<String>,
    body: axum::body::Bytes,
) -> impl IntoResponse {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let call = Call { verb, body };
    if let Ok(mut c) = st.calls.lock() {
        c.push(call.clone());
    }
    let reply = (st.handler)(call).await;
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(reply.body))
}

/// A running test extender.
pub struct ExtenderServer {
    addr: SocketAddr,
    tls: bool,
    calls: Arc<Mutex<Vec<Call>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ExtenderServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtenderServer")
            .field("addr", &self.addr)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

fn acceptor(tls: &ServerTls) -> TlsAcceptor {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(tls.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("server certificate PEM");
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(tls.key_pem.as_bytes())
        .expect("server key PEM");
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("protocol versions");
    let builder = match &tls.client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
                roots.add(c.expect("client CA PEM")).expect("client CA");
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(certs, key)
        .expect("server certificate and key");
    TlsAcceptor::from(Arc::new(config))
}

use rustls::pki_types::pem::PemObject;

async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<TlsAcceptor>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    match tls {
        None => {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stop.await;
                })
                .await;
        }
        Some(acceptor) => {
            let mut stop = std::pin::pin!(stop);
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = &mut stop => return,
                };
                let Ok((tcp, _)) = accepted else { continue };
                let acceptor = acceptor.clone();
                let app = app.clone();
                tokio::spawn(async move {
                    // A handshake the client aborts (bad CA, no certificate) just ends here.
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        return;
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

impl ExtenderServer {
    async fn bind(
        handler: Handler,
        tls: Option<ServerTls>,
    ) -> (
        SocketAddr,
        Arc<Mutex<Vec<Call>>>,
        impl Future<Output = ()> + Send + 'static,
        tokio::sync::oneshot::Sender<()>,
    ) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/{*verb}", post(handle))
            .with_state(AppState {
                handler,
                calls: calls.clone(),
            });
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let (tx, rx) = tokio::sync::oneshot::channel();
        let acceptor = tls.as_ref().map(acceptor);
        (addr, calls, serve(listener, app, acceptor, rx), tx)
    }

    /// Starts the extender on its own thread and runtime.
    ///
    /// # Panics
    /// If the runtime or the socket cannot be set up.
    pub fn start(handler: Handler, tls: Option<ServerTls>) -> ExtenderServer {
        let is_tls = tls.is_some();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("extender runtime");
            rt.block_on(async move {
                let (addr, calls, server, stop) = Self::bind(handler, tls).await;
                let _ = ready_tx.send((addr, calls, stop));
                server.await;
            });
        });
        let (addr, calls, stop) = ready_rx.recv().expect("extender started");
        ExtenderServer {
            addr,
            tls: is_tls,
            calls,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Starts the extender on the current tokio runtime.
    ///
    /// # Panics
    /// If the socket cannot be bound.
    pub async fn spawn(handler: Handler, tls: Option<ServerTls>) -> ExtenderServer {
        let is_tls = tls.is_some();
        let (addr, calls, server, stop) = Self::bind(handler, tls).await;
        tokio::spawn(server);
        ExtenderServer {
            addr,
            tls: is_tls,
            calls,
            stop: Some(stop),
            thread: None,
        }
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>` (or `https://`): the extender's `urlPrefix`.
    pub fn url(&self) -> String {
        format!(
            "{}://127.0.0.1:{}",
            if self.tls { "https" } else { "http" },
            self.addr.port()
        )
    }

    /// Every call received so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The calls of one verb.
    pub fn calls_of(&self, verb: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.verb == verb)
            .collect()
    }
}

impl Drop for ExtenderServer {
    fn drop(&mut self) {
        // Stop accepting; the thread (if any) ends once open connections close. It is not
        // joined: a pooled keep-alive connection of the client under test may outlive us.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        drop(self.thread.take());
    }
}

/// Node names of a filter/prioritize body: `NodeNames` when set, else `Nodes.items[].metadata
/// .name`.
pub fn node_names(body: &Value) -> Vec<String> {
    if let Some(names) = body.get("NodeNames").and_then(Value::as_array) {
        return names
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
    }
    body.pointer("/Nodes/items")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.pointer("/metadata/name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
