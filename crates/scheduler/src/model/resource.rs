//! Amounts of resources (`framework.Resource`, v1.22 `pkg/scheduler/framework/types.go`) and the
//! scoring-only defaults of `pkg/scheduler/util/non_zero.go`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity::{self, QuantityError};

/// Milli-CPU counted for a container that requests no cpu, in scoring only
/// (`schedutil.DefaultMilliCPURequest`).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory counted for a container that requests no memory, in scoring only
/// (`schedutil.DefaultMemoryRequest`, 200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Sums saturate at `i64::MAX` (a request that large fits no node) instead of wrapping.
///
/// Amounts of resources: cpu in millicores, memory and ephemeral-storage in bytes, a pod count,
/// and scalar resources (hugepages-*, extended resources such as `nvidia.com/gpu`, attachable
/// volumes) by name. Mirrors `framework.Resource`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    /// CPU in millicores.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Pod count (only meaningful for allocatable).
    pub allowed_pod_number: i64,
    /// Scalar resources by name, kept sorted by name.
    pub scalar: Vec<(String, i64)>,
}

/// `v1helper.IsScalarResourceName`: extended, hugepages, prefixed native and attachable volume
/// resources.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// `v1helper.IsExtendedResourceName`: a domain-prefixed name outside `kubernetes.io/` that does
/// not start with `requests.`.
pub fn is_extended_resource_name(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

impl Resource {
    /// The amount of scalar resource `name` (0 when absent).
    pub fn scalar(&self, name: &str) -> i64 {
        self.scalar
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    }

    fn scalar_mut(&mut self, name: &str) -> &mut i64 {
        let pos = match self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(p) => p,
            Err(p) => {
                self.scalar.insert(p, (name.to_string(), 0));
                p
            }
        };
        &mut self.scalar[pos].1
    }

    /// Set scalar resource `name` to `v`.
    pub fn set_scalar(&mut self, name: &str, v: i64) {
        *self.scalar_mut(name) = v;
    }

    /// Add one named quantity (the `Resource.Add` switch). Unknown non-scalar names are ignored,
    /// as upstream does.
    pub(super) fn add_named(&mut self, name: &str, milli: i64, value: i64) {
        match name {
            "cpu" => self.milli_cpu = self.milli_cpu.saturating_add(milli),
            "memory" => self.memory = self.memory.saturating_add(value),
            "ephemeral-storage" => {
                self.ephemeral_storage = self.ephemeral_storage.saturating_add(value)
            }
            "pods" => self.allowed_pod_number = self.allowed_pod_number.saturating_add(value),
            n if is_scalar_resource_name(n) => {
                let s = self.scalar_mut(n);
                *s = s.saturating_add(value);
            }
            _ => {}
        }
    }

    pub(super) fn max_named(&mut self, name: &str, milli: i64, value: i64) {
        match name {
            "cpu" => self.milli_cpu = self.milli_cpu.max(milli),
            "memory" => self.memory = self.memory.max(value),
            "ephemeral-storage" => self.ephemeral_storage = self.ephemeral_storage.max(value),
            "pods" => self.allowed_pod_number = self.allowed_pod_number.max(value),
            n if is_scalar_resource_name(n) => {
                let s = self.scalar_mut(n);
                *s = (*s).max(value);
            }
            _ => {}
        }
    }

    /// Add `other` into `self` (all fields).
    pub fn add(&mut self, other: &Resource) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        self.allowed_pod_number = self
            .allowed_pod_number
            .saturating_add(other.allowed_pod_number);
        for (n, v) in &other.scalar {
            let s = self.scalar_mut(n);
            *s = s.saturating_add(*v);
        }
    }

    /// Subtract `other` from `self` (all fields).
    pub fn sub(&mut self, other: &Resource) {
        self.milli_cpu = self.milli_cpu.saturating_sub(other.milli_cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        self.allowed_pod_number = self
            .allowed_pod_number
            .saturating_sub(other.allowed_pod_number);
        for (n, v) in &other.scalar {
            let s = self.scalar_mut(n);
            *s = s.saturating_sub(*v);
        }
    }

    /// True when nothing is requested (`cpu`, `memory`, `ephemeral-storage` zero and no scalar
    /// entry at all, even a zero one: v1.22 `fitsRequest` tests `len(ScalarResources) == 0`).
    pub fn is_zero_request(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.is_empty()
    }
}

/// Parsed `(name, milli value, value)` triples of a resource list.
type ParsedList<'a> = Vec<(&'a str, i64, i64)>;

/// Parse a resource list; `field` names it in an error (called only then).
pub(super) fn parse_list<'a>(
    list: Option<&'a BTreeMap<String, Quantity>>,
    field: impl Fn() -> String,
) -> Result<ParsedList<'a>, (String, QuantityError)> {
    let mut out = Vec::new();
    for (name, q) in list.into_iter().flatten() {
        let f = || format!("{}[{name}]", field());
        let value = quantity::value(&q.0).map_err(|e| (f(), e))?;
        let milli = if name == "cpu" {
            quantity::milli_value(&q.0).map_err(|e| (f(), e))?
        } else {
            value.saturating_mul(1000)
        };
        if value < 0 || milli < 0 {
            return Err((f(), QuantityError::Negative(q.0.clone())));
        }
        out.push((name.as_str(), milli, value));
    }
    Ok(out)
}
