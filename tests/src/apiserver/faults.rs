//! Per-client fault injection: failures, latency, hanging requests and dropped watches; and
//! faults aimed at the requests a [`RequestMatch`] selects (Bindings, status writes, Lease
//! updates): failed without being applied, applied with the response lost, or held and applied
//! late.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use super::status::ApiError;

/// Which requests a targeted fault applies to; every field left `None` matches anything.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RequestMatch {
    /// HTTP method (`POST`, `PUT`, `PATCH`, `DELETE`, `GET`).
    pub method: Option<String>,
    /// Kind addressed (`Pod`, `Lease`, ...).
    pub kind: Option<String>,
    /// Subresource: `Some("")` for the main resource, `Some("binding")`, `Some("status")`.
    pub subresource: Option<String>,
}

impl RequestMatch {
    /// `POST pods/{name}/binding`.
    pub fn bindings() -> RequestMatch {
        RequestMatch {
            method: Some("POST".into()),
            kind: Some("Pod".into()),
            subresource: Some("binding".into()),
        }
    }

    /// `PATCH pods/{name}/status` (the `PodScheduled` condition writes).
    pub fn pod_status_patches() -> RequestMatch {
        RequestMatch {
            method: Some("PATCH".into()),
            kind: Some("Pod".into()),
            subresource: Some("status".into()),
        }
    }

    /// `PUT` of a Lease (renewals, acquisitions, releases).
    pub fn lease_updates() -> RequestMatch {
        RequestMatch {
            method: Some("PUT".into()),
            kind: Some("Lease".into()),
            subresource: Some(String::new()),
        }
    }

    /// Whether a request with this method, kind and subresource (`""` for none) matches.
    pub fn matches(&self, info: &RequestInfo<'_>) -> bool {
        self.method.as_deref().is_none_or(|m| m == info.method)
            && self.kind.as_deref().is_none_or(|k| k == info.kind)
            && self
                .subresource
                .as_deref()
                .is_none_or(|s| s == info.subresource)
    }
}

/// What the fault gate knows of a request.
#[derive(Debug, Clone, Copy)]
pub struct RequestInfo<'a> {
    /// HTTP method.
    pub method: &'a str,
    /// Kind addressed, `""` when none is served at the path.
    pub kind: &'a str,
    /// Subresource, `""` for none.
    pub subresource: &'a str,
}

/// What a targeted fault does to the requests it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    /// Answer with this code without applying.
    Fail(u16),
    /// Apply, then answer 504 Timeout instead of the real response.
    LoseResponse,
    /// Hold until released ([`ClientFaults::release`]), then apply (a late write).
    Hold,
}

#[derive(Debug, Clone)]
struct Rule {
    matcher: RequestMatch,
    action: Action,
    /// Requests left to affect (`None`: until healed).
    remaining: Option<u32>,
}

#[derive(Debug, Default, Clone)]
struct ClientState {
    fail_next: u32,
    fail_next_code: u16,
    fail_all: Option<u16>,
    latency: Duration,
    hang: bool,
    /// Open watches deliver nothing (requests are served).
    stall_watches: bool,
    drop_gen: u64,
    rules: Vec<Rule>,
    /// Bumped by [`ClientFaults::release`]: requests held before it proceed.
    release_gen: u64,
    /// Requests held right now.
    held: u32,
}

/// What the gate decided for a request that may proceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Verdict {
    /// Apply the request but answer 504 instead of its response.
    pub lose_response: bool,
}

#[derive(Debug, Default)]
struct Inner {
    clients: HashMap<String, ClientState>,
    paused: bool,
    shutdown: bool,
}

/// The fault table shared by every request handler and watch.
#[derive(Debug)]
pub(crate) struct FaultTable {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
}

impl Default for FaultTable {
    fn default() -> Self {
        FaultTable {
            inner: Mutex::default(),
            changed: watch::channel(0).0,
        }
    }
}

impl FaultTable {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut Inner)) {
        f(&mut self.lock());
        self.changed.send_modify(|g| *g += 1);
    }

    fn update_client(&self, client: &str, f: impl FnOnce(&mut ClientState)) {
        self.update(|i| f(i.clients.entry(client.to_string()).or_default()));
    }

    /// A receiver woken on every fault change.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Whether requests from `client` are held (its own hang or a global pause).
    pub(crate) fn is_hung(&self, client: &str) -> bool {
        let i = self.lock();
        i.paused || i.clients.get(client).is_some_and(|c| c.hang)
    }

    /// Whether `client`'s open watches are held back (its own hang or stall, or a global pause).
    pub(crate) fn watches_stalled(&self, client: &str) -> bool {
        let i = self.lock();
        i.paused
            || i.clients
                .get(client)
                .is_some_and(|c| c.hang || c.stall_watches)
    }

    /// Whether the server is shutting down.
    pub(crate) fn is_shutdown(&self) -> bool {
        self.lock().shutdown
    }

    /// Counter bumped each time `client`'s watches are dropped.
    pub(crate) fn drop_gen(&self, client: &str) -> u64 {
        self.lock().clients.get(client).map_or(0, |c| c.drop_gen)
    }

    /// Marks the server as shutting down (releases hung requests, ends watches).
    pub(crate) fn shutdown(&self) {
        self.update(|i| i.shutdown = true);
    }

    /// Sets or clears the global pause.
    pub(crate) fn set_paused(&self, paused: bool) {
        self.update(|i| i.paused = paused);
    }

    /// Applies the client's faults to one request, in order: a matching hold rule holds it
    /// until released (then it is applied, however late; a hang does not discard it); else hold
    /// while hung (a request held is discarded with 504 once released, never applied); sleep the
    /// latency; a matching fail rule, `fail_all` or `fail_next` fails it; a matching
    /// lose-response rule lets it apply and asks for a 504 answer.
    pub(crate) async fn gate(
        &self,
        client: &str,
        info: &RequestInfo<'_>,
    ) -> Result<Verdict, ApiError> {
        let mut rx = self.subscribe();
        let shut = || ApiError::injected(503, "the test API server is shutting down");
        let hold_gen = {
            let mut i = self.lock();
            let c = i.clients.entry(client.to_string()).or_default();
            let gen_now = c.release_gen;
            let hold = take_rule(c, info, |a| *a == Action::Hold);
            if hold.is_some() {
                c.held += 1;
            }
            hold.map(|_| gen_now)
        };
        if let Some(g) = hold_gen {
            self.changed.send_modify(|v| *v += 1);
            loop {
                let released = self.is_shutdown()
                    || self
                        .lock()
                        .clients
                        .get(client)
                        .is_none_or(|c| c.release_gen != g);
                if released {
                    break;
                }
                if rx.changed().await.is_err() {
                    break;
                }
            }
            self.update_client(client, |c| c.held = c.held.saturating_sub(1));
            if self.is_shutdown() {
                return Err(shut());
            }
            return Ok(Verdict::default());
        }
        let mut held = false;
        loop {
            if self.is_shutdown() {
                return Err(shut());
            }
            if !self.is_hung(client) {
                break;
            }
            held = true;
            if rx.changed().await.is_err() {
                return Err(shut());
            }
        }
        if held {
            return Err(ApiError::injected(
                504,
                "the request was held while the client was cut off and was discarded, not applied",
            ));
        }
        let latency = self
            .lock()
            .clients
            .get(client)
            .map_or(Duration::ZERO, |c| c.latency);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        let mut i = self.lock();
        let Some(c) = i.clients.get_mut(client) else {
            return Ok(Verdict::default());
        };
        if let Some(Action::Fail(code)) = take_rule(c, info, |a| matches!(a, Action::Fail(_))) {
            return Err(ApiError::injected(
                code,
                "requests of this kind from this client fail",
            ));
        }
        if let Some(code) = c.fail_all {
            return Err(ApiError::injected(
                code,
                "all requests from this client fail",
            ));
        }
        if c.fail_next > 0 {
            c.fail_next -= 1;
            return Err(ApiError::injected(
                c.fail_next_code,
                "the next requests from this client fail",
            ));
        }
        let lose = take_rule(c, info, |a| *a == Action::LoseResponse).is_some();
        Ok(Verdict {
            lose_response: lose,
        })
    }

    /// Requests of `client` held by a hold rule right now.
    pub(crate) fn held(&self, client: &str) -> u32 {
        self.lock().clients.get(client).map_or(0, |c| c.held)
    }
}

/// The action of the first rule of `c` matching `info` whose action passes `want`, consuming
/// one of its uses (a rule with none left is removed).
fn take_rule(
    c: &mut ClientState,
    info: &RequestInfo<'_>,
    want: impl Fn(&Action) -> bool,
) -> Option<Action> {
    let pos = c
        .rules
        .iter()
        .position(|r| want(&r.action) && r.matcher.matches(info))?;
    let rule = &mut c.rules[pos];
    let action = rule.action.clone();
    if let Some(n) = &mut rule.remaining {
        *n = n.saturating_sub(1);
        if *n == 0 {
            c.rules.remove(pos);
        }
    }
    Some(action)
}

/// Fault controls for one client identity; see [`super::ApiServer::faults`].
#[derive(Debug, Clone)]
pub struct ClientFaults {
    pub(crate) table: Arc<FaultTable>,
    pub(crate) client: String,
}

impl ClientFaults {
    /// Fails the client's next `n` requests (any method, watches included) with HTTP `code` and a
    /// `metav1.Status` body whose reason matches the code (503 `ServiceUnavailable`, 500
    /// `InternalError`, 429 `TooManyRequests`, ...).
    pub fn fail_next(&self, n: u32, code: u16) -> &Self {
        self.table.update_client(&self.client, |c| {
            c.fail_next = n;
            c.fail_next_code = code;
        });
        self
    }

    /// Fails every request of the client with HTTP `code` until [`ClientFaults::heal`].
    pub fn fail_all(&self, code: u16) -> &Self {
        self.table
            .update_client(&self.client, |c| c.fail_all = Some(code));
        self
    }

    /// Delays each of the client's requests by `latency` before it is handled.
    pub fn latency(&self, latency: Duration) -> &Self {
        self.table
            .update_client(&self.client, |c| c.latency = latency);
        self
    }

    /// Cuts the client off: its new requests get no answer and its open watches deliver nothing
    /// until [`ClientFaults::heal`]. Requests held this way are then answered 504 and never
    /// applied (they are recorded in the write record with code 504).
    pub fn hang(&self) -> &Self {
        self.table.update_client(&self.client, |c| c.hang = true);
        self
    }

    /// Holds back every event of the client's watches (open and new ones) until
    /// [`ClientFaults::heal`], while its other requests are served: a watch that lags behind
    /// the store (a slow informer).
    pub fn stall_watches(&self) -> &Self {
        self.table
            .update_client(&self.client, |c| c.stall_watches = true);
        self
    }

    /// Ends the client's open watch streams now (the client sees the stream close and re-watches
    /// from its last resourceVersion).
    pub fn drop_watches(&self) -> &Self {
        self.table.update_client(&self.client, |c| c.drop_gen += 1);
        self
    }

    /// Fails the client's next `n` requests matching `m` with HTTP `code`, without applying
    /// them (e.g. 503 or 429 on Bindings); other requests are served.
    pub fn fail_matching(&self, m: RequestMatch, n: u32, code: u16) -> &Self {
        self.add_rule(m, Action::Fail(code), Some(n))
    }

    /// Fails every request of the client matching `m` with HTTP `code` until healed.
    pub fn fail_all_matching(&self, m: RequestMatch, code: u16) -> &Self {
        self.add_rule(m, Action::Fail(code), None)
    }

    /// Applies the client's next `n` requests matching `m`, then answers each with 504
    /// `Timeout` as kube-apiserver does when its deadline passes while storage commits: the
    /// write happened, the client cannot tell. The write record keeps the applied code and
    /// marks the record [`super::WriteRecord::response_lost`].
    pub fn lose_responses(&self, m: RequestMatch, n: u32) -> &Self {
        self.add_rule(m, Action::LoseResponse, Some(n))
    }

    /// Holds every request of the client matching `m` (until healed) without answering: each is
    /// applied when [`ClientFaults::release`] is called, however late, whatever happened in the
    /// meantime (a write that sat in a network queue). A later [`ClientFaults::hang`] does not
    /// discard it.
    pub fn hold_matching(&self, m: RequestMatch) -> &Self {
        self.add_rule(m, Action::Hold, None)
    }

    /// Lets every request held by [`ClientFaults::hold_matching`] proceed (in no particular
    /// order); the hold rule stays for later requests until [`ClientFaults::heal`].
    pub fn release(&self) -> &Self {
        self.table
            .update_client(&self.client, |c| c.release_gen += 1);
        self
    }

    /// How many of the client's requests are held by a hold rule right now.
    pub fn held(&self) -> u32 {
        self.table.held(&self.client)
    }

    fn add_rule(&self, m: RequestMatch, action: Action, remaining: Option<u32>) -> &Self {
        self.table.update_client(&self.client, |c| {
            c.rules.push(Rule {
                matcher: m,
                action,
                remaining,
            });
        });
        self
    }

    /// Clears every fault of the client (failures, latency, hang, targeted rules) and releases
    /// its held requests.
    pub fn heal(&self) -> &Self {
        self.table.update_client(&self.client, |c| {
            let drop_gen = c.drop_gen;
            let release_gen = c.release_gen + 1;
            let held = c.held;
            *c = ClientState {
                drop_gen,
                release_gen,
                held,
                ..ClientState::default()
            };
        });
        self
    }
}
