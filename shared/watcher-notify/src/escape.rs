//! Text an agent wrote, made inert for the format it lands in.
//!
//! Subject ids and types, kinds, `expects`, the lapse task's text, fact keys, an agent's error
//! answer and its task ids come from agents (or carriers); a notification shows them to a
//! person. Each format has markup that turns text into a mention, a link or formatting
//! (Slack's `<!channel>` and `<https://x|label>`, Markdown's `[label](https://x)` in a Teams
//! card, a URL a mail client links), so every such text goes through the function of its
//! format before it is placed in a body, and no link is ever made from it:
//!
//! * [`slack`]: Slack's control characters `&`, `<` and `>` as `&amp;`, `&lt;` and `&gt;`
//!   (Slack's own rule for every text object and the top-level `text`). Slack has no escape
//!   for `*`, `_`, `~` and `` ` ``: the Slack bodies carry agent text in `plain_text` objects
//!   and set the top-level `mrkdwn` to `false`, where Slack applies no formatting;
//! * [`teams`]: the Markdown an Adaptive Card's `TextBlock` and `Fact` read, each special
//!   character behind a backslash (CommonMark's escape), so `[label](url)` is literal text;
//! * [`email`]: a plain-text message has no markup; only its URLs are defanged.
//!
//! All three first [`defang`] the URLs in the text, because Slack, Teams and mail clients make a
//! link of a URL they see in plain text: `https://evil.example/x` is shown as
//! `https[:]//evil[.]example/x`, which a person still reads and no client links.
//!
//! Written here rather than taken from a crate: each is a few lines over `regex` and `str`, and
//! no maintained crate escapes for Slack's or Adaptive Cards' Markdown.

use std::sync::LazyLock;

use regex::Regex;

/// `scheme://host`: a URL with a scheme. The host (with user and port) is letters, digits and
/// `-._~%:@`.
static SCHEME_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b([a-z][a-z0-9+.\-]*)://([\w\-.~%:@]*)").expect("a valid regex")
});

/// `www.host`: a host that clients link without a scheme.
static WWW_HOST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bwww\.[\w\-.~%:@]*").expect("a valid regex"));

/// `host` with each `.` inside it as `[.]`; dots that end it (a sentence's full stop) stay.
fn defang_host(host: &str) -> String {
    let inner = host.trim_end_matches('.');
    format!("{}{}", inner.replace('.', "[.]"), &host[inner.len()..])
}

/// `text` with every URL defanged: `scheme://` becomes `scheme[:]//`, and each `.` of the host
/// of a URL with a scheme or of a `www.` host becomes `[.]`. The rest is unchanged.
///
/// ```
/// use watcher_notify::escape::defang;
/// assert_eq!(
///     defang("see https://evil.example/login or www.evil.example"),
///     "see https[:]//evil[.]example/login or www[.]evil[.]example"
/// );
/// ```
pub fn defang(text: &str) -> String {
    let once = SCHEME_URL.replace_all(text, |c: &regex::Captures<'_>| {
        format!("{}[:]//{}", &c[1], defang_host(&c[2]))
    });
    WWW_HOST
        .replace_all(&once, |c: &regex::Captures<'_>| defang_host(&c[0]))
        .into_owned()
}

/// `text` for a Slack text object or the top-level `text`: URLs defanged, then `&`, `<` and `>`
/// as `&amp;`, `&lt;` and `&gt;` (so `<!channel>`, `<@U1>` and `<https://x|label>` are shown,
/// not parsed).
pub fn slack(text: &str) -> String {
    defang(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The characters an Adaptive Card's Markdown (or any CommonMark reader) may read as markup
/// anywhere in a line: emphasis, code, strikethrough, link and image brackets, autolinks and
/// raw HTML, and the backslash itself.
const MARKDOWN_ANYWHERE: &[char] = &['\\', '*', '_', '`', '~', '[', ']', '(', ')', '<', '>'];

/// `text` for an Adaptive Card `TextBlock` or `Fact` (Teams): URLs defanged, then every
/// Markdown special character behind a backslash: anywhere `\`, `*`, `_`, `` ` ``, `~`, `[`,
/// `]`, `(`, `)`, `<`, `>`, and at the start of a line (after spaces) `#`, `-`, `+` and the `.`
/// of `1.` (headings and list items; the `)` of `1)` is escaped anywhere).
pub fn teams(text: &str) -> String {
    let defanged = defang(text);
    let mut out = String::with_capacity(defanged.len() + 8);
    for (i, line) in defanged.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let body = line.trim_start_matches(' ');
        out.push_str(&line[..line.len() - body.len()]);
        let digits = body.chars().take_while(char::is_ascii_digit).count();
        let rest = if body.starts_with(['#', '-', '+']) {
            out.push('\\');
            body
        } else if digits > 0 && body[digits..].starts_with('.') {
            // `1)` needs nothing more: `)` is escaped anywhere.
            out.push_str(&body[..digits]);
            out.push('\\');
            &body[digits..]
        } else {
            body
        };
        for c in rest.chars() {
            if MARKDOWN_ANYWHERE.contains(&c) {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
}

/// `text` for a plain-text email (its subject and body): URLs defanged; plain text has no
/// other markup.
pub fn email(text: &str) -> String {
    defang(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_defanged_wherever_they_are() {
        assert_eq!(
            defang("[re-confirm your login here](https://evil.example)"),
            "[re-confirm your login here](https[:]//evil[.]example)"
        );
        assert_eq!(
            defang("<https://evil|click> http://a.b.c:8080/x?y=z.w"),
            "<https[:]//evil|click> http[:]//a[.]b[.]c:8080/x?y=z.w"
        );
        assert_eq!(defang("WWW.Evil.Example"), "WWW[.]Evil[.]Example");
        // A full stop after a URL is the sentence's.
        assert_eq!(
            defang("see <https://evil.example>. Or http://x.y."),
            "see <https[:]//evil[.]example>. Or http[:]//x[.]y."
        );
        // Not URLs: kinds, versions, ids.
        assert_eq!(
            defang("shipment.manifest v1.2 PA-2026/0901"),
            "shipment.manifest v1.2 PA-2026/0901"
        );
    }

    #[test]
    fn teams_escapes_line_starts_only_where_markdown_reads_them() {
        assert_eq!(
            teams("# a\n  - b\n1. c\n2) d\na-b #1"),
            "\\# a\n  \\- b\n1\\. c\n2\\) d\na-b #1"
        );
    }
}
