//! Source positions for Policy errors: `file:line:column` of a key or value named by a field path.
//!
//! serde keeps no spans, so positions are recovered from the source text after decoding:
//! - JSON: a small scanner builds a tree of key/value spans (exact positions; also maps a serde_json
//!   error position back to the field path it falls in).
//! - YAML: a probe re-reads the document with serde_yaml and fails on purpose at the target value;
//!   serde_yaml attaches the value's start mark to that error. A key's position is the nearest
//!   `key:` before its value.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Where something is in a policy source: `file:line:column` (1-based, columns in characters).
///
/// `line == 0` means the position is unknown; Display then prints the file name alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The source name given to the loader (usually the file path as given).
    pub file: String,
    /// 1-based line, 0 if unknown.
    pub line: usize,
    /// 1-based column in characters, 0 if unknown.
    pub column: usize,
}

impl Location {
    /// A location with no line/column.
    pub fn file_only(file: &str) -> Self {
        Location {
            file: file.to_string(),
            line: 0,
            column: 0,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.column.max(1))
        }
    }
}

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    /// The `nth` (0-based) occurrence of a mapping key (n > 0 only for duplicate keys).
    Key(String, usize),
    /// A sequence index.
    Index(usize),
}

/// A field path such as `predicates[2].name`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FieldPath(pub(crate) Vec<Seg>);

impl FieldPath {
    pub(crate) fn key(mut self, k: &str) -> Self {
        self.0.push(Seg::Key(k.to_string(), 0));
        self
    }
    pub(crate) fn index(mut self, i: usize) -> Self {
        self.0.push(Seg::Index(i));
        self
    }
    pub(crate) fn root() -> Self {
        FieldPath(Vec::new())
    }
    /// Parses serde_yaml's path rendering (`predicates[2].name`, `.` for the root).
    pub(crate) fn parse(s: &str) -> Self {
        let mut out = Vec::new();
        if s == "." || s.is_empty() {
            return FieldPath(out);
        }
        for part in s.split('.') {
            let (name, rest) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if !name.is_empty() {
                out.push(Seg::Key(name.to_string(), 0));
            }
            for idx in rest.split('[').filter(|x| !x.is_empty()) {
                if let Ok(n) = idx.trim_end_matches(']').parse::<usize>() {
                    out.push(Seg::Index(n));
                }
            }
        }
        FieldPath(out)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                // Keys such as `nvidia.com/gpu` are quoted so that the path stays readable.
                Seg::Key(k, _) if k.is_empty() || k.contains(['.', '[', ']', '"', ' ']) => {
                    write!(f, "[{k:?}]")?
                }
                Seg::Key(k, _) if i == 0 => write!(f, "{k}")?,
                Seg::Key(k, _) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Input syntax of a policy document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Yaml,
}

/// A policy source text with its name and format, able to locate field paths.
pub(crate) struct Source<'a> {
    pub(crate) name: &'a str,
    pub(crate) text: &'a str,
    pub(crate) format: Format,
    json: Option<JsonNode>,
}

impl<'a> Source<'a> {
    /// Detects the format: JSON if the first non-blank character is `{`, else YAML.
    pub(crate) fn new(name: &'a str, text: &'a str) -> Self {
        let format = if text.trim_start().starts_with('{') {
            Format::Json
        } else {
            Format::Yaml
        };
        let json = match format {
            Format::Json => JsonScanner::new(text).document(),
            Format::Yaml => None,
        };
        Source {
            name,
            text,
            format,
            json,
        }
    }

    /// Location of a byte offset in the text.
    pub(crate) fn at_offset(&self, offset: usize) -> Location {
        let offset = offset.min(self.text.len());
        let before = self.text.get(..offset).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = self
            .text
            .get(line_start..offset)
            .map_or(0, |s| s.chars().count())
            + 1;
        Location {
            file: self.name.to_string(),
            line,
            column,
        }
    }

    /// Location of a 1-based (line, column) as reported by a parser.
    pub(crate) fn at_line_col(&self, line: usize, column: usize) -> Location {
        Location {
            file: self.name.to_string(),
            line,
            column,
        }
    }

    fn line_start(&self, line: usize) -> Option<usize> {
        let mut start = 0usize;
        for _ in 1..line {
            start += self.text.get(start..)?.find('\n')? + 1;
        }
        Some(start)
    }

    /// Byte offset of a 1-based (line, column), columns counted in characters (serde_yaml).
    pub(crate) fn offset_of(&self, line: usize, column: usize) -> Option<usize> {
        let start = self.line_start(line)?;
        let rest = self.text.get(start..)?;
        let col = column.saturating_sub(1);
        Some(start + rest.char_indices().nth(col).map_or(rest.len(), |(i, _)| i))
    }

    /// Byte offset of a 1-based (line, column), columns counted in bytes (serde_json).
    pub(crate) fn offset_of_byte_col(&self, line: usize, column: usize) -> Option<usize> {
        let start = self.line_start(line)?;
        let line_len = self
            .text
            .get(start..)?
            .find('\n')
            .unwrap_or(self.text.len() - start);
        let mut off = start + column.saturating_sub(1).min(line_len);
        while !self.text.is_char_boundary(off) {
            off -= 1;
        }
        Some(off)
    }

    /// Location of the value at `path`, falling back to the nearest located ancestor, then to
    /// the file alone.
    pub(crate) fn value(&self, path: &FieldPath) -> Location {
        let mut p = path.0.clone();
        loop {
            if let Some(off) = self.value_offset(&p) {
                return self.at_offset(off);
            }
            if p.pop().is_none() {
                return Location::file_only(self.name);
            }
        }
    }

    /// Location of the mapping key that ends `path` (`path` must end with a key), falling back
    /// like [`Source::value`].
    pub(crate) fn key(&self, path: &FieldPath) -> Location {
        match self.key_offset(&path.0) {
            Some(off) => self.at_offset(off),
            None => self.value(path),
        }
    }

    fn value_offset(&self, path: &[Seg]) -> Option<usize> {
        match self.format {
            Format::Json => self.json.as_ref()?.find(path).map(|(n, _)| n.start),
            Format::Yaml => yaml_value_offset(self, path),
        }
    }

    fn key_offset(&self, path: &[Seg]) -> Option<usize> {
        let Some(Seg::Key(key, _)) = path.last() else {
            return None;
        };
        match self.format {
            Format::Json => self.json.as_ref()?.find(path).and_then(|(_, k)| k),
            Format::Yaml => {
                let value = yaml_value_offset(self, path)?;
                find_key_before(self.text, key, value)
            }
        }
    }

    /// For JSON: the field path and exact location of what contains the byte offset `offset`
    /// (a key if the offset falls inside a key). `None` for YAML or unscannable JSON.
    pub(crate) fn json_path_at(&self, offset: usize) -> Option<(FieldPath, Location)> {
        let root = self.json.as_ref()?;
        let mut path = Vec::new();
        let start = root.path_at(offset, &mut path);
        Some((FieldPath(path), self.at_offset(start)))
    }
}

/// Finds the last `key` (bare or quoted) followed by optional spaces and `:` before `limit`.
fn find_key_before(text: &str, key: &str, limit: usize) -> Option<usize> {
    let hay = text.get(..limit)?;
    let mut end = hay.len();
    while let Some(i) = hay.get(..end)?.rfind(key) {
        let after = &hay[i + key.len()..];
        let after = after.strip_prefix(['"', '\'']).unwrap_or(after);
        let ok_after = after.trim_start_matches([' ', '\t']).starts_with(':');
        let prev = hay[..i].chars().next_back();
        let ok_before = !prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
        if ok_after && ok_before {
            let quoted = matches!(prev, Some('"' | '\''));
            return Some(if quoted { i - 1 } else { i });
        }
        end = i;
    }
    None
}

/// 1-based (line, column in characters) of a byte offset in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or("");
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        text.get(line_start..offset)
            .map_or(0, |s| s.chars().count())
            + 1,
    )
}

/// 1-based (line, column) of the value at `path` in document `doc` (0-based) of a JSON stream
/// (`json`) or a multi-document YAML text, falling back to the nearest located ancestor.
/// `None` when not even the document can be located. Used for error messages only: YAML is
/// re-read once per step of the fallback.
pub(crate) fn locate_in_document(
    text: &str,
    json: bool,
    doc: usize,
    path: &FieldPath,
) -> Option<(usize, usize)> {
    let mut p = path.0.clone();
    loop {
        let offset = if json {
            json_document(text, doc).and_then(|root| root.find(&p).map(|(n, _)| n.start))
        } else {
            yaml_document_value_offset(text, doc, &p)
        };
        if let Some(off) = offset {
            return Some(line_col(text, off));
        }
        p.pop()?;
    }
}

/// The `doc`-th (0-based) value of a stream of JSON values, scanned with spans.
fn json_document(text: &str, doc: usize) -> Option<JsonNode> {
    let mut scanner = JsonScanner::new(text);
    for i in 0.. {
        scanner.ws();
        let node = scanner.value(0)?;
        if i == doc {
            return Some(node);
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// JSON scanner

#[derive(Debug)]
struct JsonNode {
    start: usize,
    end: usize,
    kind: JsonKind,
}

#[derive(Debug)]
enum JsonKind {
    Object(Vec<JsonMember>),
    Array(Vec<JsonNode>),
    Scalar,
}

#[derive(Debug)]
struct JsonMember {
    key: String,
    key_start: usize,
    key_end: usize,
    value: JsonNode,
}

impl JsonNode {
    /// The node at `path` and, when the path ends with a key, that key's start offset.
    fn find(&self, path: &[Seg]) -> Option<(&JsonNode, Option<usize>)> {
        let mut node = self;
        let mut key_start = None;
        for seg in path {
            match (seg, &node.kind) {
                (Seg::Key(k, nth), JsonKind::Object(members)) => {
                    let m = members.iter().filter(|m| &m.key == k).nth(*nth)?;
                    key_start = Some(m.key_start);
                    node = &m.value;
                }
                (Seg::Index(i), JsonKind::Array(items)) => {
                    node = items.get(*i)?;
                    key_start = None;
                }
                _ => return None,
            }
        }
        Some((node, key_start))
    }

    /// Pushes the path of the innermost element containing `offset`; returns its start offset.
    fn path_at(&self, offset: usize, path: &mut Vec<Seg>) -> usize {
        match &self.kind {
            JsonKind::Object(members) => {
                let mut counts: Vec<(&str, usize)> = Vec::new();
                for m in members {
                    let nth = match counts.iter_mut().find(|(k, _)| *k == m.key) {
                        Some((_, n)) => {
                            *n += 1;
                            *n
                        }
                        None => {
                            counts.push((&m.key, 0));
                            0
                        }
                    };
                    if offset >= m.key_start && offset < m.key_end {
                        path.push(Seg::Key(m.key.clone(), nth));
                        return m.key_start;
                    }
                    if offset >= m.value.start && offset < m.value.end {
                        path.push(Seg::Key(m.key.clone(), nth));
                        return m.value.path_at(offset, path);
                    }
                }
                self.start
            }
            JsonKind::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if offset >= item.start && offset < item.end {
                        path.push(Seg::Index(i));
                        return item.path_at(offset, path);
                    }
                }
                self.start
            }
            JsonKind::Scalar => self.start,
        }
    }
}

/// Recursive-descent JSON scanner recording spans. Returns `None` on any syntax error (serde_json
/// reports those itself).
struct JsonScanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> JsonScanner<'a> {
    fn new(text: &'a str) -> Self {
        JsonScanner {
            b: text.as_bytes(),
            i: 0,
        }
    }

    fn document(mut self) -> Option<JsonNode> {
        self.ws();
        let node = self.value(0)?;
        self.ws();
        (self.i == self.b.len()).then_some(node)
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<JsonNode> {
        if depth > 128 {
            return None;
        }
        let start = self.i;
        let kind = match *self.b.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let key_start = self.i;
                        let key = self.string()?;
                        let key_end = self.i;
                        self.ws();
                        if self.b.get(self.i) != Some(&b':') {
                            return None;
                        }
                        self.i += 1;
                        self.ws();
                        let value = self.value(depth + 1)?;
                        members.push(JsonMember {
                            key,
                            key_start,
                            key_end,
                            value,
                        });
                        self.ws();
                        match self.b.get(self.i)? {
                            b',' => self.i += 1,
                            b'}' => {
                                self.i += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                JsonKind::Object(members)
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        match self.b.get(self.i)? {
                            b',' => self.i += 1,
                            b']' => {
                                self.i += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                JsonKind::Array(items)
            }
            b'"' => {
                self.string()?;
                JsonKind::Scalar
            }
            _ => {
                let s = self.i;
                while self.i < self.b.len()
                    && !matches!(
                        self.b[self.i],
                        b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b':'
                    )
                {
                    self.i += 1;
                }
                if self.i == s {
                    return None;
                }
                JsonKind::Scalar
            }
        };
        Some(JsonNode {
            start,
            end: self.i,
            kind,
        })
    }

    /// Reads a string token (cursor on the opening quote) and returns its decoded text.
    fn string(&mut self) -> Option<String> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let c = *self.b.get(self.i)?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = *self.b.get(self.i)?;
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let hex = std::str::from_utf8(self.b.get(self.i..self.i + 4)?).ok()?;
                            self.i += 4;
                            let ch = u32::from_str_radix(hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                other => out.push(other),
            }
        }
        Some(String::from_utf8_lossy(&out).into_owned())
    }
}

// ---------------------------------------------------------------------------------------------
// YAML probe

const PROBE: &str = "\u{0}policy-locate-probe";

fn yaml_value_offset(src: &Source<'_>, path: &[Seg]) -> Option<usize> {
    let de = serde_yaml::Deserializer::from_str(src.text);
    let loc = probe_yaml(de, path)?;
    src.offset_of(loc.line(), loc.column())
}

/// Byte offset of the value at `path` in document `doc` (0-based) of a YAML stream.
fn yaml_document_value_offset(text: &str, doc: usize, path: &[Seg]) -> Option<usize> {
    let de = serde_yaml::Deserializer::from_str(text).nth(doc)?;
    let loc = probe_yaml(de, path)?;
    // Marks count from the start of the stream.
    Some(loc.index())
}

fn probe_yaml(de: serde_yaml::Deserializer<'_>, path: &[Seg]) -> Option<serde_yaml::Location> {
    let err = match (Probe { path }).deserialize(de) {
        Ok(()) => return None,
        Err(e) => e,
    };
    if !err.to_string().contains(PROBE) {
        return None;
    }
    err.location()
}

/// Walks to `path` and fails there; serde_yaml attaches the mark of the value being visited.
struct Probe<'p> {
    path: &'p [Seg],
}

fn hit<E: de::Error>() -> E {
    E::custom(PROBE)
}

impl<'de> DeserializeSeed<'de> for Probe<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// Reads a mapping key as text when it is a scalar.
struct KeyText;

impl<'de> DeserializeSeed<'de> for KeyText {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(KeyTextVisitor)
    }
}

struct KeyTextVisitor;

impl<'de> Visitor<'de> for KeyTextVisitor {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

impl Probe<'_> {
    fn leaf<E: de::Error>(&self) -> Result<(), E> {
        if self.path.is_empty() {
            Err(hit())
        } else {
            Ok(())
        }
    }
}

impl<'de> Visitor<'de> for Probe<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.leaf()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.leaf()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        match self.path.first() {
            None => Err(hit()),
            Some(Seg::Index(want)) => {
                let mut i = 0;
                loop {
                    if i == *want {
                        s.next_element_seed(Probe {
                            path: &self.path[1..],
                        })?;
                        return Ok(());
                    }
                    if s.next_element::<IgnoredAny>()?.is_none() {
                        return Ok(());
                    }
                    i += 1;
                }
            }
            Some(Seg::Key(..)) => {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(())
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        match self.path.first() {
            None => Err(hit()),
            Some(Seg::Key(want, nth)) => {
                let mut seen = 0;
                while let Some(key) = m.next_key_seed(KeyText)? {
                    if key.as_deref() == Some(want.as_str()) {
                        if seen == *nth {
                            m.next_value_seed(Probe {
                                path: &self.path[1..],
                            })?;
                            return Ok(());
                        }
                        seen += 1;
                    }
                    m.next_value::<IgnoredAny>()?;
                }
                Ok(())
            }
            Some(Seg::Index(_)) => {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn p(s: &str) -> FieldPath {
        FieldPath::parse(s)
    }

    #[test]
    fn json_values_and_keys_are_located_exactly() {
        let text = "{\n  \"kind\": \"Policy\",\n  \"predicates\": [\n    {\"name\": \"A\"},\n    {\"name\":  \"B\"}\n  ]\n}\n";
        let s = Source::new("f.json", text);
        assert_eq!(s.format, Format::Json);
        assert_eq!(s.value(&p("predicates[1].name")).to_string(), "f.json:5:15");
        assert_eq!(s.key(&p("predicates[1].name")).to_string(), "f.json:5:6");
        assert_eq!(s.key(&p("predicates")).to_string(), "f.json:3:3");
        // Missing leaf: falls back to the parent.
        assert_eq!(
            s.value(&p("predicates[1].argument")).to_string(),
            "f.json:5:5"
        );
        assert_eq!(s.value(&p("nothing")).to_string(), "f.json:1:1");
    }

    #[test]
    fn json_path_at_offset() {
        let text = r#"{"a": [{"b": 1}, {"c": [true, "x"]}]}"#;
        let s = Source::new("f", text);
        let off = text.find("\"x\"").unwrap() + 1;
        let (path, loc) = s.json_path_at(off).unwrap();
        assert_eq!(path.to_string(), "a[1].c[1]");
        assert_eq!(loc.column, text.find("\"x\"").unwrap() + 1);
        let off = text.find("\"c\"").unwrap() + 2;
        assert_eq!(s.json_path_at(off).unwrap().0.to_string(), "a[1].c");
    }

    #[test]
    fn yaml_values_and_keys_are_located() {
        let text = "kind: Policy\npredicate:\n- name: PodFitsPorts\n-   name:   \"Foo\"\npriorities:\n  - {name: X, weight: 0}\n";
        let s = Source::new("f.yaml", text);
        assert_eq!(s.format, Format::Yaml);
        assert_eq!(s.value(&p("predicate[1].name")).to_string(), "f.yaml:4:13");
        assert_eq!(s.key(&p("predicate[1].name")).to_string(), "f.yaml:4:5");
        assert_eq!(s.key(&p("predicate")).to_string(), "f.yaml:2:1");
        assert_eq!(
            s.value(&p("priorities[0].weight")).to_string(),
            "f.yaml:6:23"
        );
        assert_eq!(s.key(&p("priorities[0].weight")).to_string(), "f.yaml:6:15");
    }

    #[test]
    fn duplicate_keys_are_addressable() {
        let text = "{\"a\": 1, \"a\": 2}";
        let s = Source::new("f", text);
        let path = FieldPath(vec![Seg::Key("a".into(), 1)]);
        assert_eq!(s.key(&path).to_string(), "f:1:10");
        let y = Source::new("f", "a: 1\na: 2\n");
        assert_eq!(y.key(&path).to_string(), "f:2:1");
    }

    #[test]
    fn field_path_round_trip() {
        for s in [
            "predicates[2].name",
            "extenders[0].managedResources[1].name",
            "kind",
        ] {
            assert_eq!(p(s).to_string(), s);
        }
        assert!(p(".").0.is_empty());
    }
}
