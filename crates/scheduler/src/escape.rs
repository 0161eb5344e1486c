//! Escaping control characters of input values before they reach a terminal or a log line.
//!
//! Names, quantities and other values read from cluster files and policies end up in messages
//! (`Successfully assigned ns/pod to node`, decode errors, warnings). A value holding an
//! escape sequence (`\u{1b}[2J`), a carriage return or a bidirectional override could rewrite
//! what the reader sees; these functions print such characters the way Rust's `escape_debug`
//! does (`\u{1b}`, `\r`, `\t`).

use std::borrow::Cow;

/// Whether `c` is escaped: Unicode control characters (C0, DEL, C1) and the bidirectional
/// embedding, override and isolate characters (U+202A–U+202E, U+2066–U+2069).
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let escaped = |c: char| needs_escape(c) && !(keep_newlines && c == '\n');
    if !s.chars().any(escaped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if escaped(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` with every control character escaped except `\n` (for messages that are several lines
/// by design, such as a list of policy validation errors).
pub fn escape_control(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// `s` with every control character escaped, `\n` included (for one table cell or log line).
pub fn escape_control_line(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert!(matches!(escape_control("web-0 ✓"), Cow::Borrowed(_)));
        assert_eq!(
            escape_control("a\u{1b}[2Jb\rc\td\ne\u{7f}\u{85}\u{202e}"),
            "a\\u{1b}[2Jb\\rc\\td\ne\\u{7f}\\u{85}\\u{202e}"
        );
        assert_eq!(escape_control_line("a\nb"), "a\\nb");
    }
}
