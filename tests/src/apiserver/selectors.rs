//! Label and field selectors, with the apiserver's grammar and field sets
//! (k8s.io/apimachinery/pkg/labels, pkg/fields, and each resource's `GetAttrs`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::resources::Resource;
use super::status::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed `labelSelector` (requirements ANDed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelReq>);

fn split_top_level(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

fn parse_set(s: &str) -> Option<BTreeSet<String>> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h`.
    pub fn parse(s: &str) -> Result<LabelSelector, ApiError> {
        let bad = |t: &str| ApiError::bad_request(format!("unable to parse requirement: {t:?}"));
        let mut reqs = Vec::new();
        for term in split_top_level(s) {
            let t = term.trim();
            if t.is_empty() {
                continue;
            }
            let req = if let Some(k) = t.strip_prefix('!') {
                LabelReq::NotExists(k.trim().to_string())
            } else if let Some((k, v)) = t.split_once("!=") {
                LabelReq::NotEq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = t.split_once("==") {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = t.split_once('=') {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if t.contains('(') {
                let (head, set) = t.split_at(t.find('(').unwrap_or(0));
                let mut words = head.split_whitespace();
                let (Some(k), Some(op), None) = (words.next(), words.next(), words.next()) else {
                    return Err(bad(t));
                };
                let set = parse_set(set).ok_or_else(|| bad(t))?;
                match op {
                    "in" => LabelReq::In(k.to_string(), set),
                    "notin" => LabelReq::NotIn(k.to_string(), set),
                    _ => return Err(bad(t)),
                }
            } else if t.split_whitespace().count() == 1 {
                LabelReq::Exists(t.to_string())
            } else {
                return Err(bad(t));
            };
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// Whether the object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let labels = obj.get("metadata").and_then(|m| m.get("labels"));
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, set) => get(k).is_some_and(|v| set.contains(v)),
            LabelReq::NotIn(k, set) => get(k).is_none_or(|v| !set.contains(v)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed `fieldSelector`: `field=value`, `field==value`, `field!=value`, comma = AND.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

/// The selectable fields of a resource (its `GetAttrs` / field label conversion funcs).
fn supported_fields(resource: Resource) -> &'static [&'static str] {
    match resource {
        Resource::Pods => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        Resource::Nodes => &["metadata.name", "spec.unschedulable"],
        // `generic.ObjectMetaFieldsSet(meta, false)` of cluster-scoped kinds (PersistentVolumes,
        // StorageClasses, CSINodes).
        r if !r.info().namespaced => &["metadata.name"],
        _ => &["metadata.name", "metadata.namespace"],
    }
}

/// The value of a selectable field, as the apiserver renders it (missing strings are `""`,
/// booleans `"true"`/`"false"`).
pub fn field_value<'a>(obj: &'a Value, field: &str) -> std::borrow::Cow<'a, str> {
    use std::borrow::Cow;
    let missing = || {
        if field == "spec.unschedulable" || field == "spec.hostNetwork" {
            Cow::Borrowed("false")
        } else {
            Cow::Borrowed("")
        }
    };
    let mut cur = obj;
    for seg in field.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return missing(),
        }
    }
    match cur {
        Value::String(s) => Cow::Borrowed(s.as_str()),
        Value::Bool(true) => Cow::Borrowed("true"),
        Value::Bool(false) => Cow::Borrowed("false"),
        Value::Number(n) => Cow::Owned(n.to_string()),
        _ => missing(),
    }
}

impl FieldSelector {
    /// Parses a field selector for `resource`; unknown fields give the apiserver's 400
    /// `field label not supported: X`.
    pub fn parse(s: &str, resource: Resource) -> Result<FieldSelector, ApiError> {
        let mut reqs = Vec::new();
        for term in s.split(',') {
            let t = term.trim();
            if t.is_empty() {
                continue;
            }
            let (field, eq, value) = if let Some((f, v)) = t.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = t.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = t.split_once('=') {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{t}'"
                )));
            };
            let field = field.trim();
            let field = if resource == Resource::Pods && field == "spec.host" {
                "spec.nodeName"
            } else {
                field
            };
            if !supported_fields(resource).contains(&field) {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            reqs.push((field.to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector(reqs))
    }

    /// Whether the object satisfies every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        self.0
            .iter()
            .all(|(f, eq, v)| (field_value(obj, f) == v.as_str()) == *eq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let o = json!({"metadata": {"labels": {"app": "web", "tier": "fe"}}});
        let m = |s: &str| LabelSelector::parse(s).expect("parses").matches(&o);
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(m("app in (web, db),tier notin (be)"));
        assert!(m("!missing,other!=x"));
        assert!(!m("app!=web"));
        assert!(!m("app notin (web)"));
        assert!(!m("missing"));
        assert!(!m("!app"));
        assert!(m(""));
    }

    #[test]
    fn field_selectors() {
        let p =
            json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"schedulerName": "x"}});
        let m = |s: &str| {
            FieldSelector::parse(s, Resource::Pods)
                .expect("parses")
                .matches(&p)
        };
        assert!(m("spec.schedulerName=x,spec.nodeName="));
        assert!(m("status.phase!=Succeeded,status.phase!=Failed"));
        assert!(!m("spec.nodeName!="));
        let e = FieldSelector::parse("spec.foo=1", Resource::Pods).expect_err("unsupported");
        assert_eq!(e.message, "field label not supported: spec.foo");
        let n = json!({"metadata": {"name": "n"}});
        assert!(
            FieldSelector::parse("spec.unschedulable=false", Resource::Nodes)
                .expect("ok")
                .matches(&n)
        );
        assert!(FieldSelector::parse("metadata.namespace=x", Resource::Nodes).is_err());
    }

    /// Fuzzing of the query-string selector decoders (seeded proptest over mutated selectors
    /// and arbitrary text): they return, never panic, and a rejected selector gets a 400 with a
    /// message. `FUZZ_CASES=1000000 cargo test --release -p tests --lib selectors_fuzz` is the
    /// long run.
    #[test]
    fn selectors_fuzz() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, RngSeed, TestRunner};
        const SEEDS: &[&str] = &[
            "app=web,tier!=db",
            "app in (web, db),tier notin (be),!gone,exists",
            "spec.schedulerName=x,spec.nodeName=,status.phase!=Succeeded",
            "metadata.name==n1,metadata.namespace=kube-system",
        ];
        const TOKENS: &[&str] = &[
            "=",
            "==",
            "!=",
            ",",
            "!",
            "(",
            ")",
            " in ",
            " notin ",
            " ",
            "a",
            "/",
            ".",
            "-",
            "_",
            "spec.nodeName",
            "metadata.name",
            "\\",
            "%",
            "\0",
            "é",
            "((",
            "))",
        ];
        let cases = std::env::var("FUZZ_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2_000);
        let mut runner = TestRunner::new(Config {
            cases,
            rng_seed: RngSeed::Fixed(0),
            failure_persistence: None,
            ..Config::default()
        });
        let mutated = (
            0..SEEDS.len(),
            proptest::collection::vec((any::<usize>(), any::<bool>(), any::<usize>()), 0..8),
        )
            .prop_map(|(i, edits)| {
                let mut s = SEEDS[i].to_string();
                for (pos, insert, t) in edits {
                    let mut at = pos % (s.len() + 1);
                    while !s.is_char_boundary(at) {
                        at -= 1;
                    }
                    if insert || at == s.len() {
                        s.insert_str(at, TOKENS[t % TOKENS.len()]);
                    } else {
                        let mut end = (at + 1 + t % 4).min(s.len());
                        while !s.is_char_boundary(end) {
                            end -= 1;
                        }
                        s.replace_range(at..end, "");
                    }
                }
                s
            });
        let arbitrary = proptest::collection::vec(any::<char>(), 0..80)
            .prop_map(|cs| cs.into_iter().collect::<String>());
        let strategy = prop_oneof![3 => mutated, 1 => arbitrary];
        let obj = json!({"metadata": {"name": "n1", "namespace": "d", "labels": {"app": "web"}},
                         "spec": {"nodeName": "n1"}});
        let n = std::sync::atomic::AtomicU64::new(0);
        runner
            .run(&strategy, |s| {
                n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match LabelSelector::parse(&s) {
                    Ok(l) => {
                        let _ = l.matches(&obj);
                    }
                    Err(e) => prop_assert!(e.code == 400 && !e.message.is_empty(), "{e}"),
                }
                for r in [Resource::Pods, Resource::Nodes, Resource::Leases] {
                    match FieldSelector::parse(&s, r) {
                        Ok(f) => {
                            let _ = f.matches(&obj);
                        }
                        Err(e) => prop_assert!(e.code == 400 && !e.message.is_empty(), "{e}"),
                    }
                }
                Ok(())
            })
            .expect("no selector input breaks the decoders");
        eprintln!(
            "fuzz selectors (API double): {} inputs, no panic",
            n.load(std::sync::atomic::Ordering::Relaxed)
        );
    }
}
