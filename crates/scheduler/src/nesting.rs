//! A bound on the nesting depth of JSON and YAML input, checked before the text is parsed.
//!
//! The API server bounds nesting too: Go's `encoding/json` refuses more than 10,000 levels
//! (`maxNestingDepth`, "exceeded max depth"), and `gopkg.in/yaml.v2` v2.4.0, which
//! kube-apiserver v1.22 decodes YAML with, refuses more than 10,000 flow levels or block
//! indentations (`max_flow_level`, `max_indents`: "exceeded max depth of 10000"). yaml.v2 also
//! indexes its pending simple keys so that deep flow nesting costs linear time. The libyaml
//! scanner behind serde_yaml does not: it walks every open flow level for each token, so a
//! 64 KB document of nested `[` took 4 s to parse and a 200 KB one more than 30 s. serde_json
//! and serde_yaml also stop at their own recursion limits (127 and 128 levels), after the
//! whole document has been scanned.
//!
//! So mini-scheduler refuses more than [`MAX_NESTING_DEPTH`] levels before parsing, in linear
//! time: below both parsers' limits (so the refusal is always this one, naming the file and the
//! position of the first level too deep), and far above any Kubernetes object or Policy (a
//! Pod's deepest fields, e.g. `spec.affinity.podAntiAffinity.preferredDuringScheduling…
//! .matchExpressions[].values[]`, sit about 12 levels down; a `v1 List` adds 2).

/// Deepest nesting accepted, in levels of mappings/objects and sequences/arrays (a scalar
/// document is 0 levels, `{"a": [1]}` is 2).
pub const MAX_NESTING_DEPTH: usize = 100;

/// Where the input first nests deeper than [`MAX_NESTING_DEPTH`] (1-based line and column,
/// columns in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl TooDeep {
    fn at(text: &str, offset: usize) -> Self {
        let before = text.get(..offset).unwrap_or(text);
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        TooDeep {
            line: before.matches('\n').count() + 1,
            column: before.get(line_start..).map_or(0, |s| s.chars().count()) + 1,
        }
    }
}

/// The refusal without its position: `nesting deeper than 100 levels (...)`.
pub fn too_deep_message() -> String {
    format!(
        "nesting deeper than {MAX_NESTING_DEPTH} levels (mini-scheduler's limit; the API \
         server's decoders stop at 10000)"
    )
}

/// Checks JSON text (one value or a stream of values): the position of the first `[` or `{`
/// that opens level [`MAX_NESTING_DEPTH`] + 1. Exact for well-formed JSON; linear time.
///
/// # Errors
/// [`TooDeep`] at that bracket.
pub fn check_json(text: &str) -> Result<(), TooDeep> {
    let b = text.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &c) in b.iter().enumerate() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING_DEPTH {
                    return Err(TooDeep::at(text, i));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Where a YAML scan is between lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Block context (indentation).
    Block,
    /// Inside a flow collection (`[`, `{`).
    Flow,
    /// Inside a quoted scalar; back to flow or block context after it.
    Quoted { quote: u8, flow: bool },
    /// Content lines of a literal or folded scalar: lines indented more than `indent` (or blank).
    BlockScalar { indent: isize },
}

/// Checks YAML text (any number of documents): the position of the first collection that opens
/// level [`MAX_NESTING_DEPTH`] + 1, counting block collections by their indentation (and
/// compact `- - x` entries) and flow collections by their brackets, skipping comments, quoted
/// and block scalars. Linear time.
///
/// It reads the structure the way a YAML scanner does but does not validate it: for malformed
/// text it may count differently than a parser would (the parser then reports the syntax
/// error). It never counts brackets inside scalars, so a document the parser accepts within the
/// limit passes.
///
/// # Errors
/// [`TooDeep`] where the level is opened.
pub fn check_yaml(text: &str) -> Result<(), TooDeep> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut mode = Mode::Block;
    let mut line_offset = 0usize;
    for raw in text.split('\n') {
        let start = line_offset;
        line_offset += raw.len() + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let b = line.as_bytes();
        let lead = b.iter().take_while(|&&c| c == b' ').count();
        if let Mode::BlockScalar { indent } = mode {
            if lead == b.len() || lead as isize > indent {
                continue;
            }
            mode = Mode::Block;
        }
        let mut i = 0;
        // Column of the line's first token (block scalars under it are indented more).
        let mut line_indent = lead as isize;
        let mut node_start = false;
        let mut node_col = lead;
        if mode == Mode::Block {
            if lead == b.len() || b[lead] == b'#' || b[0] == b'%' {
                continue;
            }
            let marker = |m: &[u8]| b.starts_with(m) && b.get(3).is_none_or(|c| *c == b' ');
            if marker(b"---") || marker(b"...") {
                indents.clear();
                line_indent = -1;
                i = 3;
            } else {
                while indents.last().is_some_and(|&c| c >= lead) {
                    indents.pop();
                }
                i = lead;
            }
            node_start = true;
        }
        let open = |depth: usize, i: usize| -> Result<(), TooDeep> {
            if depth > MAX_NESTING_DEPTH {
                Err(TooDeep::at(text, start + i))
            } else {
                Ok(())
            }
        };
        while i < b.len() {
            match mode {
                Mode::BlockScalar { .. } => break,
                Mode::Quoted {
                    quote,
                    flow: in_flow,
                } => {
                    let mut closed = None;
                    let mut j = i;
                    while j < b.len() {
                        if quote == b'"' && b[j] == b'\\' {
                            j += 2;
                            continue;
                        }
                        if b[j] == quote {
                            if quote == b'\'' && b.get(j + 1) == Some(&b'\'') {
                                j += 2;
                                continue;
                            }
                            closed = Some(j + 1);
                            break;
                        }
                        j += 1;
                    }
                    match closed {
                        Some(end) => {
                            i = end;
                            mode = if in_flow { Mode::Flow } else { Mode::Block };
                        }
                        None => break,
                    }
                }
                Mode::Flow => {
                    let c = b[i];
                    let prev = if i == 0 { b' ' } else { b[i - 1] };
                    match c {
                        b'[' | b'{' => {
                            flow += 1;
                            open(indents.len() + flow, i)?;
                        }
                        b']' | b'}' => {
                            flow = flow.saturating_sub(1);
                            if flow == 0 {
                                mode = Mode::Block;
                            }
                        }
                        b'"' | b'\''
                            if matches!(prev, b' ' | b'\t' | b'[' | b'{' | b',' | b':') =>
                        {
                            mode = Mode::Quoted {
                                quote: c,
                                flow: true,
                            };
                        }
                        b'#' if matches!(prev, b' ' | b'\t') => break,
                        _ => {}
                    }
                    i += 1;
                }
                Mode::Block => {
                    while i < b.len() && matches!(b[i], b' ' | b'\t') {
                        i += 1;
                    }
                    if i >= b.len() {
                        break;
                    }
                    let c = b[i];
                    let spaced = |j: usize| b.get(j).is_none_or(|c| matches!(c, b' ' | b'\t'));
                    if node_start {
                        node_col = i;
                        match c {
                            b'-' | b'?' if spaced(i + 1) => {
                                if indents.last() != Some(&i) {
                                    indents.push(i);
                                    open(indents.len() + flow, i)?;
                                }
                                i += 1;
                                continue;
                            }
                            b'[' | b'{' => {
                                mode = Mode::Flow;
                                node_start = false;
                                continue;
                            }
                            b'"' | b'\'' => {
                                mode = Mode::Quoted {
                                    quote: c,
                                    flow: false,
                                };
                                node_start = false;
                                i += 1;
                                continue;
                            }
                            b'|' | b'>' => {
                                mode = Mode::BlockScalar {
                                    indent: line_indent,
                                };
                                break;
                            }
                            b'&' | b'!' => {
                                while i < b.len() && !matches!(b[i], b' ' | b'\t') {
                                    i += 1;
                                }
                                continue;
                            }
                            b'#' => break,
                            _ => {}
                        }
                    }
                    // A plain scalar (or what follows a quoted one or a flow collection): a
                    // `: ` makes it a mapping key, ` #` starts a comment.
                    let mut key_end = None;
                    let mut j = i;
                    while j < b.len() {
                        if b[j] == b':' && spaced(j + 1) {
                            key_end = Some(j);
                            break;
                        }
                        if b[j] == b'#' && j > 0 && matches!(b[j - 1], b' ' | b'\t') {
                            break;
                        }
                        j += 1;
                    }
                    let Some(k) = key_end else { break };
                    if indents.last().is_none_or(|&c| c < node_col) {
                        indents.push(node_col);
                        open(indents.len() + flow, node_col)?;
                    }
                    i = k + 1;
                    node_start = true;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested_flow(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn json_depth_is_exact() {
        assert_eq!(check_json(&nested_flow(MAX_NESTING_DEPTH)), Ok(()));
        assert_eq!(
            check_json(&format!("\n {}", nested_flow(MAX_NESTING_DEPTH + 1))),
            Err(TooDeep {
                line: 2,
                column: MAX_NESTING_DEPTH + 2
            })
        );
        // Brackets inside strings do not count.
        let quoted = format!(r#"{{"a": "{}\"{}"}}"#, "[".repeat(500), "{".repeat(500));
        assert_eq!(check_json(&quoted), Ok(()));
    }

    #[test]
    fn yaml_flow_and_block_depth() {
        assert_eq!(check_yaml(&nested_flow(MAX_NESTING_DEPTH)), Ok(()));
        assert_eq!(
            check_yaml(&format!("a:\n  b: {}", nested_flow(MAX_NESTING_DEPTH - 1))),
            Err(TooDeep {
                line: 2,
                column: 5 + MAX_NESTING_DEPTH - 1
            })
        );
        assert_eq!(
            check_yaml(&format!("a:\n  b: {}", nested_flow(MAX_NESTING_DEPTH - 2))),
            Ok(())
        );
        // Compact sequences nest on one line.
        let dashes = "- ".repeat(MAX_NESTING_DEPTH + 1) + "x\n";
        assert_eq!(
            check_yaml(&dashes),
            Err(TooDeep {
                line: 1,
                column: 2 * MAX_NESTING_DEPTH + 1
            })
        );
        assert_eq!(check_yaml(&"- ".repeat(MAX_NESTING_DEPTH)), Ok(()));
        // Indentation.
        let mut deep = String::new();
        for d in 0..=MAX_NESTING_DEPTH {
            deep.push_str(&format!("{}k{d}:\n", " ".repeat(d)));
        }
        assert_eq!(
            check_yaml(&deep),
            Err(TooDeep {
                line: MAX_NESTING_DEPTH + 1,
                column: MAX_NESTING_DEPTH + 1
            })
        );
        let siblings = "a:\n  b: 1\n  c: [1, [2]]\nd:\n- e: {f: g}\n- h\n";
        assert_eq!(check_yaml(siblings), Ok(()));
    }

    #[test]
    fn yaml_scalars_and_comments_do_not_count() {
        let many = "[".repeat(3 * MAX_NESTING_DEPTH);
        for text in [
            format!("a: \"{many}\"\n"),
            format!("a: '{many}''{many}'\n"),
            format!("a: \"x\n  {many}\"\n"),
            format!("a: x{many}\n"),
            format!("a: 1 # {many}\n"),
            format!("# {many}\n"),
            format!("a: |\n  {many}\n  {many}\nb: 1\n"),
            format!("- >-\n    {many}\n- 2\n"),
            format!("--- |\n{many}\n"),
            format!("a: [x, \"{many}\", '{many}'] # {many}\n"),
            "a: [it's, x] # it's\n".to_string(),
        ] {
            assert_eq!(check_yaml(&text), Ok(()), "{text}");
        }
    }

    #[test]
    fn yaml_documents_start_afresh() {
        let doc = "a:\n".to_string()
            + &(1..MAX_NESTING_DEPTH)
                .map(|d| format!("{}k:\n", " ".repeat(d)))
                .collect::<String>();
        let two = format!("{doc}---\n{doc}");
        assert_eq!(check_yaml(&two), Ok(()));
    }
}
