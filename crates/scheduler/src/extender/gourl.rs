//! How kube-scheduler v1.22's extender client fails on a URL it cannot send to.
//!
//! v1.22 validates no extender `urlPrefix` (`ValidatePolicy` checks weights, the bind verb
//! count and managed resources only), so a prefix such as `"/prefix"` — the one of v1.22's own
//! `compatibility_test.go` — is accepted at start-up, and every call fails inside Go's
//! `net/http`: `HTTPExtender.send` builds `strings.TrimRight(urlPrefix, "/") + "/" + verb`,
//! `http.NewRequest` parses it with `net/url.Parse`, and `http.Client.Do` hands it to an
//! `*http.Transport`, which refuses a scheme other than `http`/`https` and a URL without a host.
//! [`go_post_error`] gives the error text v1.22 then returns, which becomes the pod's
//! `FailedScheduling` message (or is logged and skipped for an ignorable extender).
//!
//! Followed (Go 1.16, which built v1.22): `net/url` `Parse`, `parse`, `getScheme`,
//! `stringContainsCTLByte`, `(*URL).String`, `(*Error).Error`; `net/http` `urlErrorOp`,
//! `(*Client).do`'s `uerr`, `(*Transport).roundTrip`'s scheme and host checks; `strconv.Quote`.
//! Not reproduced: the syntax errors of an authority (`user@host:port`) that `net/url` reports
//! (invalid port, bad characters in a host name) — a URL whose authority this crate's HTTP
//! client cannot parse is refused at start-up instead (see [`super::http::HttpExtender::new`]).

/// The error kube-scheduler v1.22 returns for `POST url` when Go's HTTP client cannot send it,
/// or `None` when Go sends the request (an `http` or `https` URL with a host).
///
/// The texts are Go's: `parse "<url>": net/url: invalid control character in URL`,
/// `parse "<url>": missing protocol scheme`, `parse "<url>": first path segment in URL cannot
/// contain colon`, `Post "<url>": unsupported protocol scheme "<scheme>"` (the scheme
/// lower-cased, `""` when there is none) and `Post "<url>": http: no Host in request URL`.
pub fn go_post_error(url: &str) -> Option<String> {
    // url.Parse: the fragment is split off first; `parse` errors quote the rest.
    let (without_fragment, fragment) = match url.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (url, None),
    };
    let parse_error = |msg: &str| Some(format!("parse {}: {msg}", go_quote(without_fragment)));
    if without_fragment.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return parse_error("net/url: invalid control character in URL");
    }
    let Some((scheme, rest)) = go_scheme(without_fragment) else {
        return parse_error("missing protocol scheme");
    };
    let scheme = scheme.to_ascii_lowercase();
    let (rest, query) = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        (&rest[..rest.len() - 1], Some(""))
    } else {
        match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        }
    };
    // (opaque, authority, path) as `parse` splits them.
    let (opaque, authority, path) = if !rest.starts_with('/') {
        if scheme.is_empty() {
            let colon = rest.find(':');
            let slash = rest.find('/');
            if colon.is_some_and(|c| slash.is_none_or(|s| c < s)) {
                return parse_error("first path segment in URL cannot contain colon");
            }
            (None, None, rest)
        } else {
            (Some(rest), None, "")
        }
    } else if rest.starts_with("//") && (!scheme.is_empty() || !rest.starts_with("///")) {
        let after = &rest[2..];
        match after.find('/') {
            Some(i) => (None, Some(&after[..i]), &after[i..]),
            None => (None, Some(after), ""),
        }
    } else {
        (None, None, rest)
    };
    let host = authority.map_or("", |a| a.rsplit_once('@').map_or(a, |(_, h)| h));
    let is_http = scheme == "http" || scheme == "https";
    if is_http && !host.is_empty() {
        return None;
    }
    // `(*URL).String` of what was parsed, as `uerr` puts it in the error.
    let mut shown = String::new();
    if !scheme.is_empty() {
        shown.push_str(&scheme);
        shown.push(':');
    }
    match opaque {
        Some(o) => shown.push_str(o),
        None => {
            if (!scheme.is_empty() || authority.is_some_and(|a| !a.is_empty()))
                && (authority.is_some_and(|a| !a.is_empty()) || !path.is_empty())
            {
                shown.push_str("//");
            }
            shown.push_str(authority.unwrap_or(""));
            shown.push_str(path);
        }
    }
    if let Some(q) = query {
        shown.push('?');
        shown.push_str(q);
    }
    if let Some(f) = fragment {
        shown.push('#');
        shown.push_str(f);
    }
    let err = if is_http {
        "http: no Host in request URL".to_string()
    } else {
        format!("unsupported protocol scheme {}", go_quote(&scheme))
    };
    Some(format!("Post {}: {err}", go_quote(&shown)))
}

/// `net/url` `getScheme`: `Some((scheme, rest))`, the scheme empty when the URL does not start
/// with one; `None` for a leading `:` ("missing protocol scheme").
fn go_scheme(raw: &str) -> Option<(&str, &str)> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return None,
            b':' => return Some((&raw[..i], &raw[i + 1..])),
            _ => return Some(("", raw)),
        }
    }
    Some(("", raw))
}

/// Go's `strconv.Quote` (`%q`) for the characters a URL holds: `"` and `\` escaped, control
/// characters as `\n`, `\t`, ... or `\xNN` / `\uNNNN`.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(url: &str) -> String {
        go_post_error(url).unwrap_or_else(|| format!("{url} would be sent"))
    }

    /// What Go 1.16's `http.NewRequest("POST", url, …)` + `(&http.Client{Transport:
    /// &http.Transport{}}).Do(req)` return for each URL (the texts of `net/url` and
    /// `net/http`).
    #[test]
    fn go_errors_for_urls_it_cannot_send() {
        // v1.22's compatibility_test.go prefix: a path, no scheme.
        assert_eq!(
            err("/prefix/filter"),
            r#"Post "/prefix/filter": unsupported protocol scheme """#
        );
        assert_eq!(
            err("prefix/bind"),
            r#"Post "prefix/bind": unsupported protocol scheme """#
        );
        // `host:port` without a scheme: `localhost` is the scheme, the rest opaque.
        assert_eq!(
            err("localhost:8888/filter"),
            r#"Post "localhost:8888/filter": unsupported protocol scheme "localhost""#
        );
        assert_eq!(
            err("FTP://ext/filter"),
            r#"Post "ftp://ext/filter": unsupported protocol scheme "ftp""#
        );
        // A network-path reference: a host, but no scheme.
        assert_eq!(
            err("//ext:8888/filter"),
            r#"Post "//ext:8888/filter": unsupported protocol scheme """#
        );
        // http(s) without a host.
        assert_eq!(
            err("http:///prefix/filter"),
            r#"Post "http:///prefix/filter": http: no Host in request URL"#
        );
        assert_eq!(
            err("https:/prefix/filter"),
            r#"Post "https:///prefix/filter": http: no Host in request URL"#
        );
        assert_eq!(
            err("http:ext/filter"),
            r#"Post "http:ext/filter": http: no Host in request URL"#
        );
        // Errors of `url.Parse` itself (not wrapped in "Post").
        assert_eq!(
            err(":8888/filter"),
            r#"parse ":8888/filter": missing protocol scheme"#
        );
        assert_eq!(
            err("1ext:8888/filter"),
            r#"parse "1ext:8888/filter": first path segment in URL cannot contain colon"#
        );
        assert_eq!(
            err("http://ext\n/filter"),
            r#"parse "http://ext\n/filter": net/url: invalid control character in URL"#
        );
    }

    #[test]
    fn http_urls_with_a_host_are_sent() {
        for url in [
            "http://127.0.0.1:8888/filter",
            "https://ext.example:8443/scheduler/prioritize",
            "HTTP://ext/filter",
            "http://user:pw@ext/filter",
            "http://ext/filter?x=1#f",
        ] {
            assert_eq!(go_post_error(url), None, "{url}");
        }
    }

    #[test]
    fn quoting_follows_strconv_quote() {
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("\t\u{1}\u{7f}é"), r#""\t\x01\x7fé""#);
    }
}
