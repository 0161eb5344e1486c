//! The object store: one global resourceVersion counter, per-resource objects and bounded watch
//! history, the write semantics of kube-apiserver's generic registry, and the write record.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::resources::Resource;
use super::selectors::{FieldSelector, LabelSelector};
use super::status::{self, ApiError};

/// Watch event types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

/// One change in the store, as kept in the watch history.
#[derive(Debug, Clone)]
pub struct StoreEvent {
    /// resourceVersion of the change.
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (for deletes: the deleted object carrying the delete's RV).
    pub object: Arc<Value>,
    /// The object before the change (updates and deletes).
    pub prev: Option<Arc<Value>>,
}

/// One write request as the server answered it, in the order writes were applied.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteRecord {
    /// Position in the record, from 0.
    pub seq: u64,
    /// When the server applied the write: read under the store lock before the change is made,
    /// so no client (a watcher included) can have seen the write earlier. For a write refused
    /// before it reached the store (a fault, an unknown path), when it was refused.
    pub at: SystemTime,
    /// Client identity (see [`super::ApiServer::client`]).
    pub client: String,
    /// HTTP method (`POST`, `PUT`, `PATCH`, `DELETE`).
    pub method: String,
    /// Request path (without query).
    pub path: String,
    /// Kind of the object addressed (`Pod`, `Lease`, ...), or `""` for paths not served.
    pub kind: String,
    /// Namespace of the object, if namespaced.
    pub namespace: Option<String>,
    /// Object name (for creates with `generateName`, the generated name), if known.
    pub name: Option<String>,
    /// Subresource (`binding`, `status`), if any.
    pub subresource: Option<String>,
    /// HTTP status code of the answer.
    pub code: u16,
    /// resourceVersion produced by the write, if it changed the store.
    pub resource_version: Option<String>,
    /// The request body, parsed as JSON when possible.
    pub request: Option<Value>,
    /// The write was applied (`code` is what it produced) but the client was answered 504
    /// instead ([`super::ClientFaults::lose_responses`]).
    pub response_lost: bool,
    /// A `dryRun=All` request: validated and answered, nothing stored.
    pub dry_run: bool,
}

/// A pending paginated list: the filtered snapshot taken by the first page.
struct Page {
    rv: u64,
    items: Arc<Vec<Arc<Value>>>,
}

#[derive(Default)]
struct Table {
    objects: BTreeMap<(String, String), Arc<Value>>,
    history: VecDeque<Arc<StoreEvent>>,
    /// Every event with an RV above this one is still in `history`.
    compacted: u64,
}

/// The mutable state behind the server's lock.
pub struct State {
    rv: u64,
    uid_seed: u64,
    history_limit: usize,
    tables: HashMap<Resource, Table>,
    senders: HashMap<Resource, broadcast::Sender<Arc<StoreEvent>>>,
    pages: HashMap<u64, Page>,
    next_page: u64,
    /// The write record, each with its raw request body (decoded only when read back, so that
    /// recording costs no JSON parse on the request path).
    writes: Vec<(WriteRecord, axum::body::Bytes)>,
    /// Set while a `dryRun=All` request runs: writes are computed, validated and answered, not
    /// stored, and produce no event and no resourceVersion.
    pub dry_run: bool,
}

/// How a LIST reads (`metav1.ListOptions` `resourceVersion` + `resourceVersionMatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListAt {
    /// `resourceVersion` unset: the latest state (a consistent read).
    Latest,
    /// `resourceVersion=0` (any) or `N` with `NotOlderThan` (the default): a state not older
    /// than N; the double serves its latest state, which is.
    NotOlderThan(u64),
    /// `resourceVersionMatch=Exact`: the state at exactly N.
    Exact(u64),
}

/// What a pod delete did.
#[derive(Debug, Clone, PartialEq)]
pub enum Deleted {
    /// Gone, answered with this body.
    Gone(Value),
    /// Graceful: the pod is terminating (`deletionTimestamp` set) until the kubelet's final
    /// delete; answered with the pod.
    Terminating(Value),
}

/// Whether a write goes to the main resource or the `status` subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource: `status` is kept from the stored object when the resource has one.
    Main,
    /// The `status` subresource: only `status` changes.
    Status,
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    let Value::Object(o) = obj else {
        unreachable!("made an object above")
    };
    let m = o.entry("metadata").or_insert_with(|| json!({}));
    if !m.is_object() {
        *m = json!({});
    }
    let Value::Object(m) = m else {
        unreachable!("made an object above")
    };
    m
}

/// Fields of list elements merged by key in strategic merge patches (the ones our types use).
fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "conditions" => Some("type"),
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "volumeMounts" => Some("name"),
        "ownerReferences" => Some("uid"),
        "podIPs" | "hostIPs" => Some("ip"),
        _ => None,
    }
}

/// RFC 7386 JSON merge patch; with `strategic`, lists with a known merge key are merged by key.
pub fn merge_patch(target: &mut Value, patch: &Value, strategic: bool) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if k.starts_with('$') {
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        if strategic
            && let (Some(key), Value::Array(items), Some(Value::Array(existing))) =
                (merge_key(k), v, t.get_mut(k))
        {
            for item in items {
                let id = item.get(key);
                match existing
                    .iter_mut()
                    .find(|e| id.is_some() && e.get(key) == id)
                {
                    Some(e) => merge_patch(e, item, true),
                    None => existing.push(item.clone()),
                }
            }
            continue;
        }
        merge_patch(t.entry(k.clone()).or_insert(Value::Null), v, strategic);
    }
}

/// A watch subscription: the replayed events, then the live channel.
pub struct Subscription {
    /// Events to send first (already in order).
    pub replay: Vec<Arc<StoreEvent>>,
    /// The live channel; skip events with `rv <= start_rv`.
    pub rx: broadcast::Receiver<Arc<StoreEvent>>,
    /// The RV the live stream continues from.
    pub start_rv: u64,
}

impl State {
    /// An empty store keeping at most `history_limit` events per resource for watches.
    pub fn new(history_limit: usize) -> State {
        let uid_seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64 & 0xffff_ffff)
            .unwrap_or(0);
        let mut tables = HashMap::new();
        let mut senders = HashMap::new();
        for r in Resource::ALL {
            tables.insert(r, Table::default());
            senders.insert(r, broadcast::channel(1 << 16).0);
        }
        State {
            rv: 0,
            uid_seed,
            history_limit: history_limit.max(1),
            tables,
            senders,
            pages: HashMap::new(),
            next_page: 0,
            writes: Vec::new(),
            dry_run: false,
        }
    }

    fn table(&mut self, r: Resource) -> &mut Table {
        self.tables.entry(r).or_default()
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Reads one object.
    pub fn get(&self, r: Resource, ns: &str, name: &str) -> Result<Arc<Value>, ApiError> {
        self.tables
            .get(&r)
            .and_then(|t| t.objects.get(&(ns.to_string(), name.to_string())))
            .cloned()
            .ok_or_else(|| ApiError::not_found(r, name))
    }

    /// Every object of a resource (optionally in one namespace) matching the selectors, by key.
    pub fn select(
        &self,
        r: Resource,
        ns: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
    ) -> Vec<Arc<Value>> {
        let Some(t) = self.tables.get(&r) else {
            return Vec::new();
        };
        t.objects
            .iter()
            .filter(|((ons, _), o)| {
                ns.is_none_or(|n| n == ons) && labels.matches(o) && fields.matches(o)
            })
            .map(|(_, o)| o.clone())
            .collect()
    }

    /// The objects of a resource as they were at resourceVersion `at`, rebuilt by undoing the
    /// retained history after it; 410 Expired if that history was compacted.
    fn objects_at(
        &self,
        r: Resource,
        at: u64,
    ) -> Result<BTreeMap<(String, String), Arc<Value>>, ApiError> {
        let Some(t) = self.tables.get(&r) else {
            return Ok(BTreeMap::new());
        };
        if at < t.compacted {
            return Err(ApiError::expired(at, t.compacted));
        }
        let mut objects = t.objects.clone();
        let key = |o: &Value| {
            (
                meta_str(o, "namespace").unwrap_or_default().to_string(),
                meta_str(o, "name").unwrap_or_default().to_string(),
            )
        };
        for ev in t.history.iter().rev().take_while(|e| e.rv > at) {
            match (ev.kind, &ev.prev) {
                (EventType::Added, _) => {
                    objects.remove(&key(&ev.object));
                }
                (_, Some(prev)) => {
                    objects.insert(key(prev), prev.clone());
                }
                (_, None) => {}
            }
        }
        Ok(objects)
    }

    /// A LIST answer (`{Kind}List` with `metadata.resourceVersion`, `continue`,
    /// `remainingItemCount`) read as `at` says; pages after the first come from the snapshot the
    /// first page took, and answer 410 once the history of that snapshot's resourceVersion was
    /// compacted (as etcd's compaction expires continue tokens). `at` beyond the current
    /// resourceVersion is [`ApiError::too_large_resource_version`] (the caller waits first).
    #[allow(clippy::too_many_arguments)]
    pub fn list(
        &mut self,
        r: Resource,
        ns: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
        limit: usize,
        cont: Option<&str>,
        at: ListAt,
    ) -> Result<Value, ApiError> {
        let (rv, items, offset, page_id) = match cont.filter(|c| !c.is_empty()) {
            Some(c) => {
                let bad = || ApiError::bad_request(format!("continue key is not valid: {c}"));
                let (id, off) = c.split_once('-').ok_or_else(bad)?;
                let id: u64 = id.parse().map_err(|_| bad())?;
                let off: usize = off.parse().map_err(|_| bad())?;
                let page = self.pages.get(&id).ok_or_else(bad)?;
                if self.tables.get(&r).is_some_and(|t| page.rv < t.compacted) {
                    self.pages.remove(&id);
                    return Err(ApiError::continue_expired());
                }
                (page.rv, page.items.clone(), off, Some(id))
            }
            None => match at {
                ListAt::NotOlderThan(n) | ListAt::Exact(n) if n > self.rv => {
                    return Err(ApiError::too_large_resource_version(n, self.rv));
                }
                ListAt::Exact(n) => {
                    let objects = self.objects_at(r, n)?;
                    let items = objects
                        .into_iter()
                        .filter(|((ons, _), o)| {
                            ns.is_none_or(|x| x == ons) && labels.matches(o) && fields.matches(o)
                        })
                        .map(|(_, o)| o)
                        .collect();
                    (n, Arc::new(items), 0, None)
                }
                ListAt::Latest | ListAt::NotOlderThan(_) => (
                    self.rv,
                    Arc::new(self.select(r, ns, labels, fields)),
                    0,
                    None,
                ),
            },
        };
        let end = if limit == 0 {
            items.len()
        } else {
            (offset + limit).min(items.len())
        };
        let page: Vec<Value> = items
            .get(offset..end)
            .unwrap_or_default()
            .iter()
            .map(|o| (**o).clone())
            .collect();
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if end < items.len() {
            let id = match page_id {
                Some(id) => id,
                None => {
                    self.next_page += 1;
                    self.pages.insert(
                        self.next_page,
                        Page {
                            rv,
                            items: items.clone(),
                        },
                    );
                    self.next_page
                }
            };
            meta["continue"] = json!(format!("{id}-{end}"));
            meta["remainingItemCount"] = json!(items.len() - end);
        } else if let Some(id) = page_id {
            self.pages.remove(&id);
        }
        Ok(json!({
            "kind": format!("{}List", r.info().kind),
            "apiVersion": r.api_version(),
            "metadata": meta,
            "items": page,
        }))
    }

    /// Subscribes to a resource's changes after `from_rv`; 410 Expired if that RV is older than the
    /// retained history.
    pub fn subscribe(&self, r: Resource, from_rv: u64) -> Result<Subscription, ApiError> {
        let rx = self
            .senders
            .get(&r)
            .map(|s| s.subscribe())
            .ok_or_else(ApiError::no_route)?;
        let t = self.tables.get(&r).ok_or_else(ApiError::no_route)?;
        if from_rv < t.compacted {
            return Err(ApiError::expired(from_rv, t.compacted));
        }
        let replay = t
            .history
            .iter()
            .filter(|e| e.rv > from_rv)
            .cloned()
            .collect();
        Ok(Subscription {
            replay,
            rx,
            start_rv: self.rv.max(from_rv),
        })
    }

    /// Drops every retained watch event: a watch resuming from any RV below the current one gets
    /// 410 Expired (what etcd compaction plus a watch-cache restart does).
    pub fn compact(&mut self) {
        let rv = self.rv;
        for t in self.tables.values_mut() {
            t.history.clear();
            t.compacted = rv;
        }
    }

    fn commit(
        &mut self,
        r: Resource,
        kind: EventType,
        mut obj: Value,
        prev: Option<Arc<Value>>,
    ) -> Arc<Value> {
        if self.dry_run {
            // Dry run: the object as it would be stored, nothing stored; a create has no
            // resourceVersion yet, an update keeps the stored one.
            let m = meta_mut(&mut obj);
            match prev.as_deref().and_then(|p| meta_str(p, "resourceVersion")) {
                Some(rv) if kind != EventType::Added => {
                    m.insert("resourceVersion".into(), json!(rv));
                }
                _ => {
                    m.remove("resourceVersion");
                }
            }
            return Arc::new(obj);
        }
        self.rv += 1;
        let rv = self.rv;
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        let key = (
            meta_str(&obj, "namespace").unwrap_or_default().to_string(),
            meta_str(&obj, "name").unwrap_or_default().to_string(),
        );
        let obj = Arc::new(obj);
        let limit = self.history_limit;
        let t = self.table(r);
        if kind == EventType::Deleted {
            t.objects.remove(&key);
        } else {
            t.objects.insert(key, obj.clone());
        }
        let ev = Arc::new(StoreEvent {
            rv,
            kind,
            object: obj.clone(),
            prev,
        });
        t.history.push_back(ev.clone());
        while t.history.len() > limit {
            if let Some(old) = t.history.pop_front() {
                t.compacted = old.rv;
            }
        }
        if let Some(s) = self.senders.get(&r) {
            let _ = s.send(ev);
        }
        obj
    }

    fn validate(r: Resource, obj: &Value) -> Result<(), ApiError> {
        let name = meta_str(obj, "name").unwrap_or_default();
        let mut errs = Vec::new();
        if r == Resource::Leases {
            if let Some(d) = obj
                .pointer("/spec/leaseDurationSeconds")
                .and_then(Value::as_i64)
                && d <= 0
            {
                errs.push((
                    "spec.leaseDurationSeconds".into(),
                    "FieldValueInvalid",
                    format!("Invalid value: {d}: must be greater than 0"),
                ));
            }
            if let Some(t) = obj
                .pointer("/spec/leaseTransitions")
                .and_then(Value::as_i64)
                && t < 0
            {
                errs.push((
                    "spec.leaseTransitions".into(),
                    "FieldValueInvalid",
                    format!("Invalid value: {t}: must be greater than or equal to 0"),
                ));
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(r, name, &errs))
        }
    }

    /// Creates an object (POST). With `reset_status`, a pod's status becomes `{phase: Pending}` as
    /// the apiserver's pod strategy does; seeding keeps the given status.
    pub fn create(
        &mut self,
        r: Resource,
        ns: Option<&str>,
        mut obj: Value,
        reset_status: bool,
    ) -> Result<Arc<Value>, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        let info = r.info();
        obj["apiVersion"] = json!(r.api_version());
        obj["kind"] = json!(info.kind);
        let mut name = meta_str(&obj, "name").unwrap_or_default().to_string();
        if name.is_empty() {
            match meta_str(&obj, "generateName") {
                Some(g) if !g.is_empty() => name = format!("{g}{:05x}", (self.rv + 1) & 0xfffff),
                _ => {
                    return Err(ApiError::invalid(
                        r,
                        "",
                        &[(
                            "metadata.name".into(),
                            "FieldValueRequired",
                            "Required value: name or generateName is required".into(),
                        )],
                    ));
                }
            }
        }
        let ns = if info.namespaced {
            let body_ns = meta_str(&obj, "namespace").filter(|n| !n.is_empty());
            match (ns, body_ns) {
                (Some(u), Some(b)) if u != b => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                (Some(u), _) => u.to_string(),
                (None, Some(b)) => b.to_string(),
                (None, None) => "default".to_string(),
            }
        } else {
            String::new()
        };
        if self.get(r, &ns, &name).is_ok() {
            return Err(ApiError::already_exists(r, &name));
        }
        Self::validate(r, &obj)?;
        let uid = format!("{:08x}-0000-4000-8000-{:012x}", self.uid_seed, self.rv + 1);
        let m = meta_mut(&mut obj);
        m.insert("name".into(), json!(name));
        if info.namespaced {
            m.insert("namespace".into(), json!(ns));
        } else {
            m.remove("namespace");
        }
        m.insert("uid".into(), json!(uid));
        m.insert("creationTimestamp".into(), json!(now_rfc3339()));
        m.remove("deletionTimestamp");
        m.remove("resourceVersion");
        if info.has_generation {
            m.insert("generation".into(), json!(1));
        } else {
            m.remove("generation");
        }
        if r == Resource::Pods && reset_status {
            obj["status"] = json!({"phase": "Pending"});
        }
        // The volume strategies clear the status on create and defaulting sets phase Pending;
        // a StorageClass defaults its reclaim policy and binding mode.
        if matches!(
            r,
            Resource::PersistentVolumes | Resource::PersistentVolumeClaims
        ) && reset_status
        {
            obj["status"] = json!({"phase": "Pending"});
        }
        if r == Resource::StorageClasses {
            if obj.get("reclaimPolicy").is_none_or(Value::is_null) {
                obj["reclaimPolicy"] = json!("Delete");
            }
            if obj.get("volumeBindingMode").is_none_or(Value::is_null) {
                obj["volumeBindingMode"] = json!("Immediate");
            }
        }
        Ok(self.commit(r, EventType::Added, obj, None))
    }

    /// Replaces an object (PUT) on the main resource or its status. A non-empty
    /// `metadata.resourceVersion` that is not the stored one gives 409 Conflict. An update that
    /// changes nothing does not bump the resourceVersion (as etcd's GuaranteedUpdate).
    pub fn replace(
        &mut self,
        r: Resource,
        ns: &str,
        name: &str,
        mut obj: Value,
        part: Part,
    ) -> Result<Arc<Value>, ApiError> {
        let cur = self.get(r, ns, name)?;
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        match meta_str(&obj, "name") {
            Some(n) if !n.is_empty() && n != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            _ => {}
        }
        if let Some(rv) = meta_str(&obj, "resourceVersion").filter(|v| !v.is_empty())
            && Some(rv) != meta_str(&cur, "resourceVersion")
        {
            return Err(ApiError::modified(r, name));
        }
        let info = r.info();
        let mut new = match part {
            Part::Status => {
                let mut n = (*cur).clone();
                n["status"] = obj.get("status").cloned().unwrap_or(Value::Null);
                if n["status"].is_null()
                    && let Value::Object(o) = &mut n
                {
                    o.remove("status");
                }
                n
            }
            Part::Main => {
                obj["apiVersion"] = json!(r.api_version());
                obj["kind"] = json!(info.kind);
                let m = meta_mut(&mut obj);
                m.insert("name".into(), json!(name));
                for f in [
                    "uid",
                    "creationTimestamp",
                    "namespace",
                    "generation",
                    "deletionTimestamp",
                ] {
                    match cur.get("metadata").and_then(|cm| cm.get(f)) {
                        Some(v) => m.insert(f.into(), v.clone()),
                        None => m.remove(f),
                    };
                }
                if info.has_status {
                    match cur.get("status") {
                        Some(s) => obj["status"] = s.clone(),
                        None => {
                            if let Value::Object(o) = &mut obj {
                                o.remove("status");
                            }
                        }
                    }
                }
                if info.has_generation && obj.get("spec") != cur.get("spec") {
                    let g = cur
                        .pointer("/metadata/generation")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    meta_mut(&mut obj).insert("generation".into(), json!(g + 1));
                }
                obj
            }
        };
        meta_mut(&mut new).insert(
            "resourceVersion".into(),
            cur["metadata"]["resourceVersion"].clone(),
        );
        if new == *cur {
            return Ok(cur);
        }
        Self::validate(r, &new)?;
        Ok(self.commit(r, EventType::Modified, new, Some(cur)))
    }

    /// Patches an object (merge or strategic merge). A `metadata.resourceVersion` in the patch acts
    /// as a precondition.
    pub fn patch(
        &mut self,
        r: Resource,
        ns: &str,
        name: &str,
        patch: &Value,
        strategic: bool,
        part: Part,
    ) -> Result<Arc<Value>, ApiError> {
        let cur = self.get(r, ns, name)?;
        if let Some(rv) = patch
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            && Some(rv) != meta_str(&cur, "resourceVersion")
        {
            return Err(ApiError::modified(r, name));
        }
        let mut merged = (*cur).clone();
        merge_patch(&mut merged, patch, strategic);
        meta_mut(&mut merged).insert(
            "resourceVersion".into(),
            cur["metadata"]["resourceVersion"].clone(),
        );
        self.replace(r, ns, name, merged, part)
    }

    /// Deletes an object. Honors `preconditions` in the DeleteOptions. Pods answer with the pod,
    /// other resources with a Success Status.
    ///
    /// Pods are deleted gracefully as the pod strategy (`CheckGracefulDelete`) does: a pod bound
    /// to a node and not `Succeeded`/`Failed` gets `deletionTimestamp` = now + grace and
    /// `deletionGracePeriodSeconds` = grace (the DeleteOptions' `gracePeriodSeconds`, else the
    /// spec's `terminationGracePeriodSeconds`, else 30) and stays, terminating
    /// ([`Deleted::Terminating`]), until a delete with grace 0 (the kubelet's, see
    /// [`super::ApiServerBuilder::kubelet`]); a second graceful delete may only shorten the
    /// grace. Unbound or finished pods, and `gracePeriodSeconds: 0`, delete at once.
    pub fn delete_pod_or_object(
        &mut self,
        r: Resource,
        ns: &str,
        name: &str,
        opts: &Value,
    ) -> Result<Deleted, ApiError> {
        let cur = self.get(r, ns, name)?;
        for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
            if let Some(want) = opts
                .get("preconditions")
                .and_then(|p| p.get(field))
                .and_then(Value::as_str)
            {
                let have = meta_str(&cur, field).unwrap_or_default();
                if want != have {
                    return Err(ApiError::conflict(
                        r,
                        &r.qualified(),
                        name,
                        &format!(
                            "Precondition failed: {label} in precondition: {want}, {label} in object meta: {have}"
                        ),
                    ));
                }
            }
        }
        if r == Resource::Pods {
            let bound = cur
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            let finished = matches!(
                cur.pointer("/status/phase").and_then(Value::as_str),
                Some("Succeeded" | "Failed")
            );
            let grace = opts
                .get("gracePeriodSeconds")
                .and_then(Value::as_i64)
                .or_else(|| {
                    cur.pointer("/spec/terminationGracePeriodSeconds")
                        .and_then(Value::as_i64)
                })
                .unwrap_or(30)
                .max(0);
            if bound && !finished && grace > 0 {
                let current = cur
                    .pointer("/metadata/deletionGracePeriodSeconds")
                    .and_then(Value::as_i64);
                if current.is_some_and(|c| c <= grace) {
                    return Ok(Deleted::Terminating((*cur).clone()));
                }
                let mut pod = (*cur).clone();
                let at = k8s_openapi::jiff::Timestamp::now()
                    + k8s_openapi::jiff::SignedDuration::from_secs(grace);
                let m = meta_mut(&mut pod);
                m.insert(
                    "deletionTimestamp".into(),
                    json!(at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
                );
                m.insert("deletionGracePeriodSeconds".into(), json!(grace));
                let stored = self.commit(r, EventType::Modified, pod, Some(cur));
                return Ok(Deleted::Terminating((*stored).clone()));
            }
        }
        let deleted = self.commit(r, EventType::Deleted, (*cur).clone(), Some(cur.clone()));
        if r == Resource::Pods {
            return Ok(Deleted::Gone((*deleted).clone()));
        }
        let i = r.info();
        let mut d = json!({"name": name, "kind": i.plural, "uid": meta_str(&cur, "uid").unwrap_or_default()});
        if !i.group.is_empty() {
            d["group"] = json!(i.group);
        }
        let mut s = status::success(200);
        s["details"] = d;
        Ok(Deleted::Gone(s))
    }

    /// Deletes an object at once, whatever its kind (no grace period): what
    /// [`super::ApiServer::remove`] and the kubelet's final delete do.
    pub fn delete(
        &mut self,
        r: Resource,
        ns: &str,
        name: &str,
        opts: &Value,
    ) -> Result<Value, ApiError> {
        let mut opts = if opts.is_object() {
            opts.clone()
        } else {
            json!({})
        };
        opts["gracePeriodSeconds"] = json!(0);
        match self.delete_pod_or_object(r, ns, name, &opts)? {
            Deleted::Gone(v) | Deleted::Terminating(v) => Ok(v),
        }
    }

    /// `POST pods/{name}/binding` (pkg/registry/core/pod/storage BindingREST.Create): checks the
    /// Binding's uid/resourceVersion preconditions, refuses a pod already assigned (409 on
    /// `pods/binding`), copies the Binding's annotations, sets `spec.nodeName` and the
    /// `PodScheduled=True` condition.
    pub fn bind(&mut self, ns: &str, name: &str, binding: &Value) -> Result<Arc<Value>, ApiError> {
        let r = Resource::Pods;
        let bname = meta_str(binding, "name").unwrap_or_default();
        if bname != name {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Binding object",
            ));
        }
        let node = binding
            .pointer("/target/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = binding
            .pointer("/target/kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if node.is_empty() || !(kind.is_empty() || kind == "Node") {
            let (field, msg) = if node.is_empty() {
                ("target.name", "Required value".to_string())
            } else {
                (
                    "target.kind",
                    format!("Invalid value: {kind:?}: must be empty or 'Node'"),
                )
            };
            let reason = if node.is_empty() {
                "FieldValueRequired"
            } else {
                "FieldValueInvalid"
            };
            let mut e = ApiError::invalid(r, name, &[(field.to_string(), reason, msg)]);
            e.message = e.message.replacen("Pod ", "Binding ", 1);
            return Err(e);
        }
        let cur = self.get(r, ns, name)?;
        for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
            if let Some(want) = meta_str(binding, field).filter(|v| !v.is_empty()) {
                let have = meta_str(&cur, field).unwrap_or_default();
                if want != have {
                    return Err(ApiError::conflict(
                        r,
                        &r.qualified(),
                        name,
                        &format!(
                            "Precondition failed: {label} in precondition: {want}, {label} in object meta: {have}"
                        ),
                    ));
                }
            }
        }
        if cur
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
        {
            return Err(ApiError::conflict(
                r,
                "pods/binding",
                name,
                &format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        if let Some(assigned) = cur
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            return Err(ApiError::conflict(
                r,
                "pods/binding",
                name,
                &format!("pod {name} is already assigned to node {assigned:?}"),
            ));
        }
        let mut pod = (*cur).clone();
        if let Some(Value::Object(ann)) = binding.pointer("/metadata/annotations") {
            let m = meta_mut(&mut pod);
            let pa = m.entry("annotations").or_insert_with(|| json!({}));
            if !pa.is_object() {
                *pa = json!({});
            }
            for (k, v) in ann {
                pa[k] = v.clone();
            }
        }
        pod["spec"]["nodeName"] = json!(node);
        if !pod["status"].is_object() {
            pod["status"] = json!({});
        }
        let conds = pod["status"]
            .as_object_mut()
            .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
        if let Some(Value::Array(conds)) = conds {
            let cond = json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339()});
            match conds
                .iter_mut()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"))
            {
                Some(c) => *c = cond,
                None => conds.push(cond),
            }
        }
        Ok(self.commit(r, EventType::Modified, pod, Some(cur)))
    }

    /// Appends to the write record; `body` is the raw request body, decoded as JSON into
    /// [`WriteRecord::request`] when the record is read.
    pub fn record(&mut self, mut w: WriteRecord, body: axum::body::Bytes) {
        w.seq = self.writes.len() as u64;
        self.writes.push((w, body));
    }

    /// The write record from position `seq` on; request bodies are decoded only with
    /// `bodies`.
    pub fn writes_since(&self, seq: u64, bodies: bool) -> Vec<WriteRecord> {
        let from = usize::try_from(seq)
            .unwrap_or(usize::MAX)
            .min(self.writes.len());
        self.writes[from..]
            .iter()
            .map(|(w, body)| {
                let mut w = w.clone();
                if bodies {
                    w.request = serde_json::from_slice(body).ok();
                }
                w
            })
            .collect()
    }

    /// The write record so far.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.writes_since(0, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategic_merge_merges_conditions_by_type() {
        let mut t = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}});
        let p = json!({"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}});
        let mut plain = t.clone();
        merge_patch(&mut t, &p, true);
        assert_eq!(t["status"]["conditions"].as_array().map(Vec::len), Some(2));
        assert_eq!(t["status"]["conditions"][1]["reason"], "Unschedulable");
        merge_patch(&mut plain, &p, false);
        assert_eq!(
            plain["status"]["conditions"].as_array().map(Vec::len),
            Some(1)
        );
        let mut x = json!({"a": 1, "b": {"c": 2}});
        merge_patch(&mut x, &json!({"a": null, "b": {"d": 3}}), false);
        assert_eq!(x, json!({"b": {"c": 2, "d": 3}}));
    }
}
