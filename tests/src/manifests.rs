//! The deployment manifests (`manifests/`, kustomize) read into k8s-openapi types, strictly.
//!
//! k8s-openapi's serde types ignore unknown fields, so each document is deserialized into its
//! type, serialized again and compared with the original: any field the type dropped (a typo,
//! a field of another API version, a wrong level of indentation) or changed is reported with
//! its path. The kustomization itself is decoded with unknown keys refused, and
//! [`Kustomization::build`] reproduces what `kubectl kustomize` does for the features used
//! here: `resources` (files), `namespace`, `configMapGenerator` (`files`, `options`) and
//! `images`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The repository's `manifests/` directory.
pub fn manifests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../manifests")
}

/// One manifest, typed.
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub enum Manifest {
    Namespace(Namespace),
    ServiceAccount(ServiceAccount),
    ClusterRole(ClusterRole),
    ClusterRoleBinding(ClusterRoleBinding),
    Role(Role),
    RoleBinding(RoleBinding),
    ConfigMap(ConfigMap),
    Deployment(Deployment),
    Service(Service),
    PodDisruptionBudget(PodDisruptionBudget),
    Pod(Pod),
}

impl Manifest {
    /// The object's metadata.
    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Manifest::Namespace(o) => &o.metadata,
            Manifest::ServiceAccount(o) => &o.metadata,
            Manifest::ClusterRole(o) => &o.metadata,
            Manifest::ClusterRoleBinding(o) => &o.metadata,
            Manifest::Role(o) => &o.metadata,
            Manifest::RoleBinding(o) => &o.metadata,
            Manifest::ConfigMap(o) => &o.metadata,
            Manifest::Deployment(o) => &o.metadata,
            Manifest::Service(o) => &o.metadata,
            Manifest::PodDisruptionBudget(o) => &o.metadata,
            Manifest::Pod(o) => &o.metadata,
        }
    }

    /// `Kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Manifest::Namespace(_) => "Namespace",
            Manifest::ServiceAccount(_) => "ServiceAccount",
            Manifest::ClusterRole(_) => "ClusterRole",
            Manifest::ClusterRoleBinding(_) => "ClusterRoleBinding",
            Manifest::Role(_) => "Role",
            Manifest::RoleBinding(_) => "RoleBinding",
            Manifest::ConfigMap(_) => "ConfigMap",
            Manifest::Deployment(_) => "Deployment",
            Manifest::Service(_) => "Service",
            Manifest::PodDisruptionBudget(_) => "PodDisruptionBudget",
            Manifest::Pod(_) => "Pod",
        }
    }

    /// Whether objects of this kind live in a namespace.
    pub fn namespaced(&self) -> bool {
        !matches!(
            self,
            Manifest::Namespace(_) | Manifest::ClusterRole(_) | Manifest::ClusterRoleBinding(_)
        )
    }

    fn set_namespace(&mut self, ns: &str) {
        if !self.namespaced() {
            return;
        }
        let m = match self {
            Manifest::ServiceAccount(o) => &mut o.metadata,
            Manifest::Role(o) => &mut o.metadata,
            Manifest::RoleBinding(o) => &mut o.metadata,
            Manifest::ConfigMap(o) => &mut o.metadata,
            Manifest::Deployment(o) => &mut o.metadata,
            Manifest::Service(o) => &mut o.metadata,
            Manifest::PodDisruptionBudget(o) => &mut o.metadata,
            Manifest::Pod(o) => &mut o.metadata,
            Manifest::Namespace(_) | Manifest::ClusterRole(_) | Manifest::ClusterRoleBinding(_) => {
                return;
            }
        };
        m.namespace = Some(ns.to_string());
    }

    /// `Kind namespace/name` for messages.
    pub fn describe(&self) -> String {
        let m = self.meta();
        match &m.namespace {
            Some(ns) => format!(
                "{} {ns}/{}",
                self.kind(),
                m.name.as_deref().unwrap_or_default()
            ),
            None => format!("{} {}", self.kind(), m.name.as_deref().unwrap_or_default()),
        }
    }
}

/// Deserialize `doc` as `K` and check nothing was dropped or changed on the way.
fn strict<K: DeserializeOwned + serde::Serialize>(doc: &Value) -> Result<K, String> {
    let typed: K = serde_json::from_value(doc.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    diff("", doc, &back, &mut problems);
    if problems.is_empty() {
        Ok(typed)
    } else {
        Err(problems.join("; "))
    }
}

/// Paths where `original` and `round_trip` differ.
fn diff(path: &str, original: &Value, round_trip: &Value, out: &mut Vec<String>) {
    match (original, round_trip) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = format!("{path}.{k}");
                match b.get(k) {
                    Some(w) => diff(&p, v, w, out),
                    None => out.push(format!("unknown field {p}")),
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("field {path}.{k} appeared on the round trip"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), v, w, out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: {a} became {b}")),
    }
}

/// Parse one YAML document (already converted to JSON) by its `apiVersion` and `kind`.
///
/// # Errors
/// Unknown `apiVersion`/`kind`, a field the type does not have, a wrong type.
pub fn parse_manifest(doc: &Value) -> Result<Manifest, String> {
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    Ok(match (api_version, kind) {
        ("v1", "Namespace") => Manifest::Namespace(strict(doc)?),
        ("v1", "ServiceAccount") => Manifest::ServiceAccount(strict(doc)?),
        ("v1", "ConfigMap") => Manifest::ConfigMap(strict(doc)?),
        ("v1", "Service") => Manifest::Service(strict(doc)?),
        ("v1", "Pod") => Manifest::Pod(strict(doc)?),
        ("apps/v1", "Deployment") => Manifest::Deployment(strict(doc)?),
        ("policy/v1", "PodDisruptionBudget") => Manifest::PodDisruptionBudget(strict(doc)?),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => Manifest::ClusterRole(strict(doc)?),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            Manifest::ClusterRoleBinding(strict(doc)?)
        }
        ("rbac.authorization.k8s.io/v1", "Role") => Manifest::Role(strict(doc)?),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => Manifest::RoleBinding(strict(doc)?),
        (v, k) => return Err(format!("unexpected apiVersion {v:?} kind {k:?}")),
    })
}

/// Every document of a multi-document YAML file, typed.
///
/// # Errors
/// `file: document N: problem` for the first bad document.
pub fn parse_file(path: &Path) -> Result<Vec<Manifest>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, de) in serde_yaml::Deserializer::from_str(&text).enumerate() {
        let doc = Value::deserialize(de)
            .map_err(|e| format!("{}: document {}: {e}", path.display(), i + 1))?;
        if doc.is_null() {
            continue;
        }
        out.push(
            parse_manifest(&doc)
                .map_err(|e| format!("{}: document {}: {e}", path.display(), i + 1))?,
        );
    }
    Ok(out)
}

/// `kustomization.yaml`, with only the features the manifests use; anything else is refused.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Kustomization {
    /// `kustomize.config.k8s.io/v1beta1`.
    pub api_version: String,
    /// `Kustomization`.
    pub kind: String,
    /// Namespace set on every namespaced object.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Manifest files, relative to the kustomization's directory.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Generated ConfigMaps.
    #[serde(default)]
    pub config_map_generator: Vec<ConfigMapGenerator>,
    /// Image overrides.
    #[serde(default)]
    pub images: Vec<ImageOverride>,
    /// The directory it was read from.
    #[serde(skip)]
    pub dir: PathBuf,
}

/// One `configMapGenerator` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigMapGenerator {
    /// ConfigMap name.
    pub name: String,
    /// Files whose base name becomes the key.
    #[serde(default)]
    pub files: Vec<String>,
    /// Generator options.
    #[serde(default)]
    pub options: Option<GeneratorOptions>,
}

/// `configMapGenerator[].options`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GeneratorOptions {
    /// No content hash suffix on the name.
    #[serde(default)]
    pub disable_name_suffix_hash: bool,
    /// Labels of the generated object.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// One `images` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageOverride {
    /// The image name as written in the manifests.
    pub name: String,
    /// Replacement name.
    #[serde(default)]
    pub new_name: Option<String>,
    /// Replacement tag.
    #[serde(default)]
    pub new_tag: Option<String>,
}

impl Kustomization {
    /// Reads `dir/kustomization.yaml`.
    ///
    /// # Errors
    /// I/O or decoding error, with the path.
    pub fn load(dir: &Path) -> Result<Kustomization, String> {
        let path = dir.join("kustomization.yaml");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut k: Kustomization =
            serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        k.dir = dir.to_path_buf();
        Ok(k)
    }

    /// The objects `kubectl kustomize` would print: resources with the namespace applied
    /// (also to binding subjects that name a ServiceAccount), generated ConfigMaps, images
    /// replaced.
    ///
    /// # Errors
    /// A resource or generator file that is missing or does not parse strictly; a generator
    /// without `disableNameSuffixHash` (its name would not be predictable here).
    pub fn build(&self) -> Result<Vec<Manifest>, String> {
        let mut out = Vec::new();
        for r in &self.resources {
            out.extend(parse_file(&self.dir.join(r))?);
        }
        for g in &self.config_map_generator {
            let opts = g.options.clone().unwrap_or(GeneratorOptions {
                disable_name_suffix_hash: false,
                labels: BTreeMap::new(),
            });
            if !opts.disable_name_suffix_hash {
                return Err(format!(
                    "configMapGenerator {}: the name gets a hash suffix",
                    g.name
                ));
            }
            let mut data = BTreeMap::new();
            for f in &g.files {
                let path = self.dir.join(f);
                let content = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let key = Path::new(f)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                data.insert(key, content);
            }
            out.push(Manifest::ConfigMap(ConfigMap {
                metadata: ObjectMeta {
                    name: Some(g.name.clone()),
                    labels: (!opts.labels.is_empty()).then_some(opts.labels),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            }));
        }
        if let Some(ns) = &self.namespace {
            for m in &mut out {
                m.set_namespace(ns);
                let subjects = match m {
                    Manifest::RoleBinding(b) => b.subjects.as_mut(),
                    Manifest::ClusterRoleBinding(b) => b.subjects.as_mut(),
                    _ => None,
                };
                for s in subjects.into_iter().flatten() {
                    if s.kind == "ServiceAccount" {
                        s.namespace = Some(ns.clone());
                    }
                }
            }
        }
        for m in &mut out {
            let spec = match m {
                Manifest::Deployment(d) => d.spec.template.spec.as_mut(),
                Manifest::Pod(p) => p.spec.as_mut(),
                _ => None,
            };
            for c in spec.into_iter().flat_map(|s| s.containers.iter_mut()) {
                let Some(image) = &c.image else { continue };
                let (name, tag) = match image.rsplit_once(':') {
                    Some((n, t)) if !t.contains('/') => (n.to_string(), Some(t.to_string())),
                    _ => (image.clone(), None),
                };
                if let Some(o) = self.images.iter().find(|o| o.name == name) {
                    let n = o.new_name.clone().unwrap_or(name);
                    c.image = Some(match o.new_tag.clone().or(tag) {
                        Some(t) => format!("{n}:{t}"),
                        None => n,
                    });
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_misplaced_fields_are_reported() {
        let doc: Value = serde_json::json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "x", "namespce": "typo"},
            "automountServiceAccountToken": true
        });
        let err = parse_manifest(&doc).expect_err("typo found");
        assert!(err.contains("unknown field .metadata.namespce"), "{err}");
        let doc: Value = serde_json::json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "x"},
            "spec": {"ports": [{"port": 80, "targetPorts": 8080}]}
        });
        let err = parse_manifest(&doc).expect_err("typo found");
        assert!(err.contains(".spec.ports[0].targetPorts"), "{err}");
        let doc: Value = serde_json::json!({"apiVersion": "v2", "kind": "Pod"});
        assert!(parse_manifest(&doc).is_err());
        let ok: Value = serde_json::json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "x"},
            "spec": {"ports": [{"port": 80, "targetPort": "http"}]}
        });
        assert!(parse_manifest(&ok).is_ok());
    }
}
