//! Per-client fault injection: failures, latency, hanging requests and dropped watches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use super::status::ApiError;

#[derive(Debug, Default, Clone)]
struct ClientState {
    fail_next: u32,
    fail_next_code: u16,
    fail_all: Option<u16>,
    latency: Duration,
    hang: bool,
    drop_gen: u64,
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

    /// Applies the client's faults to one request, in order: hold while hung (a request held is
    /// discarded with 504 once released, never applied), sleep the latency, then fail if a
    /// failure is armed.
    pub(crate) async fn gate(&self, client: &str) -> Result<(), ApiError> {
        let mut rx = self.subscribe();
        let mut held = false;
        loop {
            if self.is_shutdown() {
                return Err(ApiError::injected(
                    503,
                    "the test API server is shutting down",
                ));
            }
            if !self.is_hung(client) {
                break;
            }
            held = true;
            if rx.changed().await.is_err() {
                return Err(ApiError::injected(
                    503,
                    "the test API server is shutting down",
                ));
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
            return Ok(());
        };
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
        Ok(())
    }
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

    /// Ends the client's open watch streams now (the client sees the stream close and re-watches
    /// from its last resourceVersion).
    pub fn drop_watches(&self) -> &Self {
        self.table.update_client(&self.client, |c| c.drop_gen += 1);
        self
    }

    /// Clears every fault of the client (failures, latency, hang).
    pub fn heal(&self) -> &Self {
        self.table.update_client(&self.client, |c| {
            let drop_gen = c.drop_gen;
            *c = ClientState {
                drop_gen,
                ..ClientState::default()
            };
        });
        self
    }
}
