//! The client-side rate limits of `--kube-api-qps` / `--kube-api-burst`, as kube-scheduler's
//! `createClients` sets them up (kubernetes/kubernetes v1.22
//! `cmd/kube-scheduler/app/options/options.go`): three clientsets from one `rest.Config` with
//! `QPS`/`Burst` set — the scheduling client, the `eventClient` and the leader-election client —
//! each with a token bucket of its own (client-go's `rest.RESTClientFor` builds a
//! `flowcontrol.NewTokenBucketRateLimiter(qps, burst)` per client, and `Request.tryThrottle`
//! waits on it before each request: LIST, WATCH, GET and every write). So events never take
//! tokens from the bindings: under a QPS limit the binding rate is the full `--kube-api-qps`.
//!
//! [`ApiClients`] holds the scheduling client's two faces over one [`RateLimiter`], and the
//! event client over another:
//!
//! - `reads`: the watches and PreBind's GETs go through [`RateLimitLayer`], which waits for a
//!   token before each request leaves;
//! - `writes`: every scheduling write the leadership fence guards (Binding, the `PodScheduled`
//!   patch, PreBind's PV/PVC updates) takes its token explicitly with
//!   [`RateLimiter::acquire`] *before* checking the fence, then sends at once. Through a
//!   limiting layer the token wait would come after the fence check, and a deposed leader could
//!   write once its turn came;
//! - `events`: Event writes (`Scheduled`, `FailedScheduling`, series updates), fenced the same
//!   way with a token from `event_limiter`.
//!
//! Leader election gets a client of its own with its own bucket
//! ([`ApiClients::leader_election_client`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use kube::Client;
use tower::{Layer, Service, ServiceExt};

use super::metrics::RestClientMetrics;

/// A token bucket (client-go's `flowcontrol.NewTokenBucketRateLimiter(qps, burst)`): `burst`
/// tokens, refilled at `qps` per second; each request takes one, waiting when none is left.
pub struct RateLimiter {
    bucket: tokio::sync::Mutex<(f64, tokio::time::Instant)>,
    qps: f64,
    burst: f64,
}

impl RateLimiter {
    /// A full bucket of `burst` tokens refilled at `qps` per second; `qps <= 0` (or NaN)
    /// disables limiting.
    pub fn new(qps: f64, burst: u32) -> RateLimiter {
        let burst = f64::from(burst.max(1));
        RateLimiter {
            bucket: tokio::sync::Mutex::new((burst, tokio::time::Instant::now())),
            qps,
            burst,
        }
    }

    /// No limit.
    pub fn unlimited() -> RateLimiter {
        RateLimiter::new(0.0, 0)
    }

    /// Whether [`RateLimiter::acquire`] can wait at all.
    pub fn is_limited(&self) -> bool {
        self.qps > 0.0
    }

    /// Wait for a token (at once while the bucket has one).
    pub async fn acquire(&self) {
        if !self.is_limited() {
            return;
        }
        loop {
            let wait = {
                let mut b = self.bucket.lock().await;
                let now = tokio::time::Instant::now();
                let refill = now.duration_since(b.1).as_secs_f64() * self.qps;
                b.0 = (b.0 + refill).min(self.burst);
                b.1 = now;
                if b.0 >= 1.0 {
                    b.0 -= 1.0;
                    return;
                }
                Duration::from_secs_f64((1.0 - b.0) / self.qps)
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// A tower layer that makes every request wait for a [`RateLimiter`] token before the inner
/// service sees it (the inner service is not called until then, so nothing is sent early).
#[derive(Clone)]
pub struct RateLimitLayer {
    limiter: Arc<RateLimiter>,
}

impl RateLimitLayer {
    /// Requests take tokens from `limiter`.
    pub fn new(limiter: Arc<RateLimiter>) -> RateLimitLayer {
        RateLimitLayer { limiter }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited {
            inner: Arc::new(tokio::sync::Mutex::new(inner)),
            limiter: self.limiter.clone(),
        }
    }
}

/// The service of [`RateLimitLayer`]. The inner service sits behind a lock so that each
/// request can call it after its token wait (kube's client already serialises calls through a
/// buffer, so the lock is uncontended and held only for `ready` + `call`).
pub struct RateLimited<S> {
    inner: Arc<tokio::sync::Mutex<S>>,
    limiter: Arc<RateLimiter>,
}

impl<S> Clone for RateLimited<S> {
    fn clone(&self) -> Self {
        RateLimited {
            inner: self.inner.clone(),
            limiter: self.limiter.clone(),
        }
    }
}

impl<S, Req> Service<Req> for RateLimited<S>
where
    S: Service<Req> + Send + 'static,
    S::Future: Send + 'static,
    Req: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // Readiness of the inner service is awaited per request, after the token.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let inner = self.inner.clone();
        let limiter = self.limiter.clone();
        Box::pin(async move {
            limiter.acquire().await;
            let fut = {
                let mut svc = inner.lock().await;
                svc.ready().await?.call(req)
            };
            fut.await
        })
    }
}

/// The scheduler's API clients (see the module docs): the scheduling client (`reads`,
/// `writes`) over one [`RateLimiter`], the event client over another.
#[derive(Clone)]
pub struct ApiClients {
    /// Watches and GETs: every request waits for a token in [`RateLimitLayer`].
    pub reads: Client,
    /// Fenced scheduling writes: the caller takes the token with [`ApiClients::limiter`] before
    /// its fence check; the client itself does not wait.
    pub writes: Client,
    /// The scheduling client's bucket, which `reads` and `writes` draw from.
    pub limiter: Arc<RateLimiter>,
    /// kube-scheduler's `eventClient`: fenced Event writes, each taking its token from
    /// [`ApiClients::event_limiter`] before its fence check.
    pub events: Client,
    /// The event client's own bucket (the same `--kube-api-qps`/`--kube-api-burst`).
    pub event_limiter: Arc<RateLimiter>,
}

impl ApiClients {
    /// The scheduling and event clients from `config`, each limited to `qps` requests per
    /// second with bursts of `burst` by a bucket of its own (`qps <= 0`: unlimited).
    ///
    /// # Errors
    /// Building a client from `config` failed (TLS, proxy settings).
    pub fn new(config: kube::Config, qps: f64, burst: u32) -> kube::Result<ApiClients> {
        ApiClients::with_metrics(config, qps, burst, None)
    }

    /// As [`ApiClients::new`], every request of every client counted in `rest`'s
    /// `rest_client_*` families when given.
    ///
    /// # Errors
    /// Building a client from `config` failed (TLS, proxy settings).
    pub fn with_metrics(
        config: kube::Config,
        qps: f64,
        burst: u32,
        rest: Option<&RestClientMetrics>,
    ) -> kube::Result<ApiClients> {
        let limiter = Arc::new(RateLimiter::new(qps, burst));
        let reads = client(config.clone(), Some(limiter.clone()), rest)?;
        let writes = client(config.clone(), None, rest)?;
        let events = client(config, None, rest)?;
        Ok(ApiClients {
            reads,
            writes,
            limiter,
            events,
            event_limiter: Arc::new(RateLimiter::new(qps, burst)),
        })
    }

    /// kube-scheduler's leader-election client: from the same `config`, with a bucket of its
    /// own of `qps` requests per second and bursts of `burst`, every request waiting in
    /// [`RateLimitLayer`] (the elector's writes are fenced by the Lease itself).
    ///
    /// # Errors
    /// Building a client from `config` failed (TLS, proxy settings).
    pub fn leader_election_client(
        config: kube::Config,
        qps: f64,
        burst: u32,
    ) -> kube::Result<Client> {
        ApiClients::leader_election_client_with_metrics(config, qps, burst, None)
    }

    /// As [`ApiClients::leader_election_client`], its requests counted in `rest` when given.
    ///
    /// # Errors
    /// Building a client from `config` failed (TLS, proxy settings).
    pub fn leader_election_client_with_metrics(
        config: kube::Config,
        qps: f64,
        burst: u32,
        rest: Option<&RestClientMetrics>,
    ) -> kube::Result<Client> {
        client(config, Some(Arc::new(RateLimiter::new(qps, burst))), rest)
    }

    /// One client for everything, no limit (tests).
    pub fn unlimited(client: Client) -> ApiClients {
        ApiClients {
            reads: client.clone(),
            writes: client.clone(),
            limiter: Arc::new(RateLimiter::unlimited()),
            events: client,
            event_limiter: Arc::new(RateLimiter::unlimited()),
        }
    }
}

/// A client from `config` whose every request waits for a `limiter` token first (when given)
/// and is then counted in `rest` (when given: inside the limiter, so the token wait is not in
/// the request latency).
fn client(
    config: kube::Config,
    limiter: Option<Arc<RateLimiter>>,
    rest: Option<&RestClientMetrics>,
) -> kube::Result<Client> {
    let config = without_unused_trust_store(config);
    let metrics = rest.map(|m| m.layer(&config.cluster_url));
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&tower::util::option_layer(metrics))
        .with_layer(&tower::util::option_layer(limiter.map(RateLimitLayer::new)))
        .build())
}

/// `config` with an empty set of root certificates when it can never make a TLS connection: a
/// plain `http://` API server (`kubectl proxy`, a local test server) with no CA configured and
/// no `https://` proxy. kube's client builder makes a rustls configuration whatever the
/// scheme, and with no CA it loads and parses the operating system's trust store for it (about
/// 290 certificates, ~20 ms of CPU per client, four clients per replica); nothing would ever
/// read it. Any other `config` is returned unchanged (`https://` servers, a CA given as bytes
/// or as a file, an `https://` proxy, whose connection is TLS).
pub fn without_unused_trust_store(mut config: kube::Config) -> kube::Config {
    let plain = config.cluster_url.scheme_str() == Some("http");
    let tls_proxy = config
        .proxy_url
        .as_ref()
        .is_some_and(|p| p.scheme_str() == Some("https"));
    if plain && !tls_proxy && config.root_cert.is_none() && config.root_cert_file.is_none() {
        config.root_cert = Some(Vec::new());
    }
    config
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(start_paused = true)]
    async fn rate_limiter_allows_a_burst_then_qps() {
        let limiter = RateLimiter::new(10.0, 5);
        let start = tokio::time::Instant::now();
        for _ in 0..5 {
            limiter.acquire().await;
        }
        assert_eq!(start.elapsed(), Duration::ZERO, "the burst is free");
        for _ in 0..10 {
            limiter.acquire().await;
        }
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(999) && took <= Duration::from_millis(1001),
            "{took:?}"
        );
        // Unlimited when qps <= 0.
        let free = RateLimiter::unlimited();
        let t = tokio::time::Instant::now();
        for _ in 0..1000 {
            free.acquire().await;
        }
        assert_eq!(t.elapsed(), Duration::ZERO);
    }

    /// A service that counts the calls that reached it.
    #[derive(Clone)]
    struct Counting(Arc<AtomicUsize>);

    impl Service<()> for Counting {
        type Response = ();
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<(), Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, (): ()) -> Self::Future {
            self.0.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(()))
        }
    }

    /// The layer holds requests back until they have a token: none reaches the inner service
    /// early, not even when the caller has already called `call`.
    #[tokio::test(start_paused = true)]
    async fn layer_holds_requests_until_their_token() {
        let reached = Arc::new(AtomicUsize::new(0));
        let limiter = Arc::new(RateLimiter::new(2.0, 1));
        let mut svc = RateLimitLayer::new(limiter).layer(Counting(reached.clone()));
        let first = svc.call(());
        let second = svc.call(());
        assert_eq!(reached.load(Ordering::SeqCst), 0, "nothing sent by call()");
        first.await.unwrap();
        assert_eq!(reached.load(Ordering::SeqCst), 1, "the burst token");
        let start = tokio::time::Instant::now();
        second.await.unwrap();
        assert_eq!(reached.load(Ordering::SeqCst), 2);
        assert_eq!(start.elapsed(), Duration::from_millis(500), "1 / qps later");
    }

    #[tokio::test]
    async fn the_trust_store_is_skipped_only_where_no_tls_can_happen() {
        let cfg = |url: &str| kube::Config::new(url.parse().unwrap());
        // Plain HTTP, no CA, no proxy: an empty root set, so no OS trust store is loaded.
        let plain = without_unused_trust_store(cfg("http://127.0.0.1:8001"));
        assert_eq!(plain.root_cert, Some(Vec::new()));
        assert!(
            client(plain, None, None).is_ok(),
            "the http client still builds"
        );
        // HTTPS: the OS trust store (or the given CA) is needed.
        assert_eq!(
            without_unused_trust_store(cfg("https://10.0.0.1:6443")).root_cert,
            None
        );
        // A CA given as bytes or as a file is kept as it is.
        let mut with_ca = cfg("http://127.0.0.1:8001");
        with_ca.root_cert = Some(vec![vec![1, 2, 3]]);
        assert_eq!(
            without_unused_trust_store(with_ca).root_cert,
            Some(vec![vec![1, 2, 3]])
        );
        let mut with_file = cfg("http://127.0.0.1:8001");
        with_file.root_cert_file = Some("/var/run/ca.crt".into());
        assert_eq!(without_unused_trust_store(with_file).root_cert, None);
        // An https:// proxy is reached over TLS: its certificate is verified as before.
        let mut proxied = cfg("http://127.0.0.1:8001");
        proxied.proxy_url = Some("https://proxy.example:3128".parse().unwrap());
        assert_eq!(without_unused_trust_store(proxied).root_cert, None);
        // A plain http:// proxy cannot use TLS either.
        let mut http_proxy = cfg("http://127.0.0.1:8001");
        http_proxy.proxy_url = Some("http://proxy.example:3128".parse().unwrap());
        assert_eq!(
            without_unused_trust_store(http_proxy).root_cert,
            Some(Vec::new())
        );
    }
}
