//! Hostile requests: Bodies that are not JSON, or not the JSON a route reads: every JSON route.

use super::*;

/// Appends this group's cases to `out`.
pub(super) fn cases(out: &mut Vec<Case>) {
    // --- Bodies that are not JSON, or not the JSON a route reads: every JSON route. ---
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let ten_mb = vec![b' '; 10 * 1024 * 1024];
    for (method, path, auth) in json_routes() {
        let c = |name: &str| case(format!("{method} {path}: {name}"), method, path, auth);
        out.push(c("empty body").raw("").problem(400, &["body"]));
        out.push(
            c("truncated JSON")
                .raw(r#"{"a": [1, 2"#)
                .problem(400, &["json"]),
        );
        out.push(c("invalid JSON").raw("{a: 1}").problem(400, &["json"]));
        out.push(
            c("invalid UTF-8")
                .raw(b"{\"a\": \"\xff\xfe\"}".to_vec())
                .problem(400, &["utf-8"]),
        );
        out.push(c("trailing bytes").raw("{} {}").problem(400, &["json"]));
        out.push(
            c("10,000-deep nesting")
                .raw(deep.clone())
                .problem(400, &["json_depth"]),
        );
        out.push(
            c("10 MB body")
                .raw(ten_mb.clone())
                .problem(413, &["body_bytes", "bytes"]),
        );
        out.push(
            c("not JSON content type")
                .raw("{}")
                .typed("text/plain")
                .problem(415, &["content-type"]),
        );
        if path.ends_with("/webhook") {
            // A carrier's payload may be any JSON; the mapping cannot read this one.
            out.push(
                c("a JSON null")
                    .raw("null")
                    .problem(422, &["mapped", "/events"]),
            );
            out.push(
                c("a JSON array")
                    .raw("[]")
                    .problem(422, &["mapped", "/events"]),
            );
        } else {
            out.push(c("a JSON null").raw("null").problem(400, &[]));
            out.push(c("a JSON array").raw("[]").problem(400, &[]));
        }
        out.push(c("a huge number").raw("1e400").problem(400, &[]));
    }
}
