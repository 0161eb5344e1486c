//! Decoding a configuration document: its type, strict decoding with located errors and the
//! nearest known key, and the fields the file's version does not have.

use super::*;

/// `kind` and `apiVersion`, read leniently first: upstream resolves the type before the fields.
pub(super) fn check_type(src: &Source<'_>) -> Result<(), ConfigError> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct TypeMeta {
        #[serde(default)]
        kind: Option<serde_yaml::Value>,
        #[serde(default)]
        api_version: Option<serde_yaml::Value>,
    }
    let meta: Option<TypeMeta> = match src.format {
        Format::Json => serde_json::from_str(src.text).ok(),
        Format::Yaml => serde_yaml::from_str(src.text).ok(),
    };
    let Some(meta) = meta else {
        return Ok(()); // the strict decode reports the syntax error
    };
    let root = FieldPath::root();
    let kind = meta.kind.as_ref().and_then(|k| k.as_str()).unwrap_or("");
    let api = meta
        .api_version
        .as_ref()
        .and_then(|k| k.as_str())
        .unwrap_or("");
    let err = |path: FieldPath, message: String| ConfigError::Decode {
        location: src.value(&path),
        message,
    };
    if kind == "Policy" {
        return Err(err(
            root.key("kind"),
            "this is a legacy Policy, not a KubeSchedulerConfiguration: give it with \
             --policy-config-file (run) or --policy (simulate), or convert it with \
             `mini-scheduler policy convert`"
                .into(),
        ));
    }
    if api.is_empty() {
        return Err(err(
            root,
            "Object 'apiVersion' is missing (want kubescheduler.config.k8s.io/v1beta2, v1beta3 or v1)"
                .into(),
        ));
    }
    if kind.is_empty() {
        return Err(err(
            root,
            "Object 'Kind' is missing (want \"KubeSchedulerConfiguration\")".into(),
        ));
    }
    if ConfigVersion::from_api_version(api).is_none() {
        let hint = if api == "kubescheduler.config.k8s.io/v1beta1" {
            " (v1beta1 was removed in kube-scheduler v1.23; mini-scheduler reads v1beta2 and later)"
        } else {
            ""
        };
        return Err(err(
            root.key("apiVersion"),
            format!(
                "no kind \"{kind}\" is registered for version \"{api}\"{hint}; want \
                 kubescheduler.config.k8s.io/v1beta2, kubescheduler.config.k8s.io/v1beta3 or \
                 kubescheduler.config.k8s.io/v1"
            ),
        ));
    }
    if kind != KUBE_SCHEDULER_CONFIGURATION_KIND {
        return Err(err(
            root.key("kind"),
            format!("no kind \"{kind}\" is registered for version \"{api}\""),
        ));
    }
    Ok(())
}

/// Levenshtein distance over lowercased characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The nearest candidate within a third of the name's length (at least 2 edits).
pub(crate) fn nearest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// serde's "unknown field `x`, expected one of `a`, `b`" with "; did you mean `a`?" appended.
pub(super) fn with_suggestion(msg: &str) -> String {
    let Some(rest) = msg.strip_prefix("unknown field `") else {
        return msg.to_string();
    };
    let Some((field, expected)) = rest.split_once('`') else {
        return msg.to_string();
    };
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match nearest(field, candidates) {
        Some(s) => format!("{msg}; did you mean `{s}`?"),
        None => msg.to_string(),
    }
}

pub(super) fn strip_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) if msg[i..].contains(" column ") => &msg[..i],
        _ => msg,
    }
}

/// Strict decoding of the whole document with located errors.
pub(super) fn decode<T: DeserializeOwned>(src: &Source<'_>) -> Result<T, ConfigError> {
    match src.format {
        Format::Json => serde_json::from_str(src.text).map_err(|e| {
            let text = e.to_string();
            let msg = with_suggestion(strip_position(&text));
            let offset = src.offset_of_byte_col(e.line(), e.column());
            if let Some((path, loc)) = e
                .is_data()
                .then_some(offset)
                .flatten()
                .and_then(|o| src.json_path_at(o))
            {
                let message = if path.0.is_empty() {
                    msg
                } else {
                    format!("{path}: {msg}")
                };
                return ConfigError::Decode {
                    location: loc,
                    message,
                };
            }
            let location = match offset {
                Some(o) if e.line() > 0 => src.at_offset(o),
                _ => src.at_line_col(e.line(), e.column()),
            };
            ConfigError::Decode {
                location,
                message: msg,
            }
        }),
        Format::Yaml => serde_yaml::from_str(src.text).map_err(|e| {
            let text = e.to_string();
            let msg = strip_position(&text).to_string();
            let (path, body) = match msg.split_once(": ") {
                Some((p, b)) if !p.contains(' ') => (FieldPath::parse(p), b.to_string()),
                _ => (FieldPath::root(), msg.clone()),
            };
            let location = match e.location() {
                Some(l) => src.at_line_col(l.line(), l.column()),
                None => src.value(&path),
            };
            let message = if path.0.is_empty() {
                with_suggestion(&body)
            } else {
                format!("{path}: {}", with_suggestion(&body))
            };
            ConfigError::Decode { location, message }
        }),
    }
}

/// Fields the file's version does not have.
pub(super) fn version_fields(
    src: &Source<'_>,
    c: &KubeSchedulerConfiguration,
    v: ConfigVersion,
) -> Result<(), ConfigError> {
    let root = FieldPath::root();
    let refuse = |path: FieldPath, field: &str, versions: &str| ConfigError::Decode {
        location: src.key(&path),
        message: format!(
            "{path}: unknown field `{field}` in {} (only in {versions})",
            v.api_version()
        ),
    };
    if v != ConfigVersion::V1beta2 {
        if c.healthz_bind_address.is_some() {
            return Err(refuse(
                root.clone().key("healthzBindAddress"),
                "healthzBindAddress",
                "v1beta2",
            ));
        }
        if c.metrics_bind_address.is_some() {
            return Err(refuse(
                root.clone().key("metricsBindAddress"),
                "metricsBindAddress",
                "v1beta2",
            ));
        }
    }
    if v != ConfigVersion::V1 && c.delay_cache_until_active.is_some() {
        return Err(refuse(
            root.clone().key("delayCacheUntilActive"),
            "delayCacheUntilActive",
            "v1",
        ));
    }
    for (i, p) in c.profiles.iter().enumerate() {
        let pp = root.clone().key("profiles").index(i);
        if v != ConfigVersion::V1 && p.percentage_of_nodes_to_score.is_some() {
            return Err(refuse(
                pp.clone().key("percentageOfNodesToScore"),
                "percentageOfNodesToScore",
                "v1",
            ));
        }
        if let Some(plugins) = &p.plugins {
            let pl = pp.clone().key("plugins");
            if v == ConfigVersion::V1beta2 && plugins.multi_point.is_some() {
                return Err(refuse(
                    pl.clone().key("multiPoint"),
                    "multiPoint",
                    "v1beta3 and v1",
                ));
            }
            if v != ConfigVersion::V1 && plugins.pre_enqueue.is_some() {
                return Err(refuse(pl.clone().key("preEnqueue"), "preEnqueue", "v1"));
            }
        }
    }
    Ok(())
}
