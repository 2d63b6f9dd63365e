//! Hostile requests: Learnables.

use super::*;

/// Appends this group's cases to `out`.
pub(super) fn cases(out: &mut Vec<Case>) {
    // --- Learnables. ---
    let teach =
        |name: &str, method: &'static str, path: &str, body: Value, status: u16, n: &[&str]| {
            case(
                format!("learnables: {name}"),
                method,
                path,
                Auth::Bearer(TEACHER),
            )
            .json(&body)
            .problem(status, n)
        };
    let bomb = |pattern: &str| json!({ "collection": "customers", "entry": "northgate", "value": { "pattern": pattern, "where": "from" }, "taughtBy": "dana" });
    for (name, pattern) in [
        ("nested repetition", "(a{1000}){1000}"),
        ("huge counted repetition", "a{100000}"),
        ("nested groups", "((((((((((a{50}){50}){50}){50})))))))"),
        ("an unclosed group", "(northgate"),
        ("a backreference", "(a)\\1"),
        ("a look-ahead", "(?=northgate)x"),
        ("an empty pattern", ""),
    ] {
        out.push(teach(
            &format!("regex bomb: {name}"),
            "POST",
            "/v1/definitions/customers/lessons",
            bomb(pattern),
            422,
            &["pattern"],
        ));
    }
    let lesson = |m: Value| {
        let mut l = json!({ "collection": "fields", "entry": "invoice_number", "value": { "header": "Inv #" }, "taughtBy": "dana" });
        for (k, v) in m.as_object().expect("an object") {
            if v.is_null() {
                l.as_object_mut().expect("an object").remove(k);
            } else {
                l[k] = v.clone();
            }
        }
        l
    };
    for (name, edit, status, n) in [
        (
            "collection missing",
            json!({ "collection": null }),
            400,
            vec!["collection"],
        ),
        (
            "collection a number",
            json!({ "collection": 5 }),
            400,
            vec!["collection"],
        ),
        (
            "an unknown collection",
            json!({ "collection": "nope" }),
            422,
            vec!["nope"],
        ),
        ("entry null", json!({ "entry": null }), 400, vec!["entry"]),
        (
            "entry with a control character",
            json!({ "entry": "inv\u{1}oice" }),
            400,
            vec!["entry", "control"],
        ),
        (
            "taughtBy missing",
            json!({ "taughtBy": null }),
            400,
            vec!["taughtBy"],
        ),
        (
            "value a string",
            json!({ "value": "Inv #" }),
            422,
            vec!["value"],
        ),
        (
            "header a number",
            json!({ "value": { "header": 12 } }),
            422,
            vec!["header"],
        ),
        (
            "header blank",
            json!({ "value": { "header": "  " } }),
            422,
            vec!["header"],
        ),
        (
            "header only a BOM",
            json!({ "value": { "header": "\u{FEFF}" } }),
            422,
            vec!["header"],
        ),
        (
            "pattern on a column mapping",
            json!({ "value": { "pattern": "x" } }),
            422,
            vec!["pattern"],
        ),
    ] {
        out.push(teach(
            name,
            "POST",
            "/v1/definitions/invoices/lessons",
            lesson(edit),
            status,
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }
    let cols = json!({ "fields": { "learnable": "column-mapping", "entry": "field", "teaches": "t", "entries": {} } });
    for (name, path, body, status, n) in [
        (
            "PUT an existing definition",
            "/v1/definitions/invoices",
            json!({ "collections": cols, "taughtBy": "dana" }),
            409,
            vec!["invoices"],
        ),
        (
            "PUT an unknown learnable",
            "/v1/definitions/fresh-def",
            json!({ "collections": { "c": { "learnable": "telepathy", "entry": "e", "teaches": "t", "entries": {} } }, "taughtBy": "dana" }),
            422,
            vec!["telepathy"],
        ),
        (
            "PUT collections a list",
            "/v1/definitions/fresh-def",
            json!({ "collections": [], "taughtBy": "dana" }),
            400,
            vec!["collections"],
        ),
        (
            "PUT a bad value",
            "/v1/definitions/fresh-def",
            json!({ "collections": { "fields": { "learnable": "column-mapping", "entry": "field", "teaches": "t", "entries": { "x": { "label": "X", "value": { "headers": "Inv" } } } } }, "taughtBy": "dana" }),
            422,
            vec!["headers"],
        ),
        (
            "PUT an id with a slash",
            "/v1/definitions/a%2Fb",
            json!({ "collections": cols, "taughtBy": "dana" }),
            400,
            vec!["id"],
        ),
        (
            "PUT a confusable id",
            "/v1/definitions/inv%D0%BEices",
            json!({ "collections": cols, "taughtBy": "dana" }),
            400,
            vec!["id"],
        ),
    ] {
        out.push(teach(
            name,
            "PUT",
            path,
            body,
            status,
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }
    for (name, path, body, status, n) in [
        (
            "check: corpus not a list",
            "/v1/definitions/invoices/lessons:check",
            json!({ "lesson": lesson(json!({})), "corpus": "x" }),
            400,
            vec!["corpus"],
        ),
        (
            "check: lesson missing",
            "/v1/definitions/invoices/lessons:check",
            json!({ "corpus": [] }),
            400,
            vec!["lesson"],
        ),
        (
            "check: a regex bomb",
            "/v1/definitions/customers/lessons:check",
            json!({ "lesson": bomb("(a{1000}){1000}"), "corpus": [] }),
            422,
            vec!["pattern"],
        ),
        (
            "show-back: input missing",
            "/v1/definitions/invoices/show-back",
            json!({}),
            400,
            vec!["input"],
        ),
        (
            "show-back: definitionVersion a string",
            "/v1/definitions/invoices/show-back",
            json!({ "input": { "header": "x" }, "definitionVersion": "1" }),
            400,
            vec!["definitionVersion"],
        ),
        (
            "show-back: definitionVersion negative",
            "/v1/definitions/invoices/show-back",
            json!({ "input": { "header": "x" }, "definitionVersion": -1 }),
            400,
            vec!["definitionVersion"],
        ),
        (
            "show-back: definitionVersion huge",
            "/v1/definitions/invoices/show-back",
            json!({ "input": { "header": "x" }, "definitionVersion": 1e20 }),
            400,
            vec!["definitionVersion"],
        ),
        (
            "show-back: a version that does not exist",
            "/v1/definitions/invoices/show-back",
            json!({ "input": { "header": "x" }, "definitionVersion": 99 }),
            404,
            vec!["99"],
        ),
        (
            "activate: a version that does not exist",
            "/v1/definitions/invoices/activate",
            json!({ "definitionVersion": 99, "taughtBy": "dana" }),
            404,
            vec!["99"],
        ),
        (
            "activate: definitionVersion missing",
            "/v1/definitions/invoices/activate",
            json!({ "taughtBy": "dana" }),
            400,
            vec!["definitionVersion"],
        ),
        (
            "activate: definitionVersion zero",
            "/v1/definitions/invoices/activate",
            json!({ "definitionVersion": 0, "taughtBy": "dana" }),
            404,
            vec!["version 0"],
        ),
        (
            "tombstone: the active version",
            "/v1/definitions/invoices/versions/1/tombstone",
            json!({ "taughtBy": "dana" }),
            409,
            vec!["active"],
        ),
        (
            "tombstone: taughtBy missing",
            "/v1/definitions/invoices/versions/1/tombstone",
            json!({}),
            400,
            vec!["taughtBy"],
        ),
    ] {
        out.push(teach(
            name,
            "POST",
            path,
            body,
            status,
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }
    let read = |name: &str, path: &str, status: u16, n: &[&str]| {
        case(
            format!("learnables: {name}"),
            "GET",
            path,
            Auth::Bearer(TEACHER),
        )
        .problem(status, n)
    };
    out.push(read(
        "an unknown definition",
        "/v1/definitions/nothing-here",
        404,
        &["nothing-here"],
    ));
    out.push(read(
        "a definition id differing by case",
        "/v1/definitions/INVOICES",
        404,
        &["INVOICES"],
    ));
    out.push(read(
        "a definition id with a space",
        "/v1/definitions/in%20voices",
        400,
        &["id"],
    ));
    out.push(read(
        "a definition id with NUL",
        "/v1/definitions/in%00voices",
        400,
        &["id"],
    ));
    out.push(read(
        "a definition id 129 characters",
        &format!("/v1/definitions/{}", "a".repeat(129)),
        400,
        &["id", "128"],
    ));
    out.push(read(
        "version zero",
        "/v1/definitions/invoices/versions/0",
        400,
        &["version"],
    ));
    out.push(read(
        "version not a number",
        "/v1/definitions/invoices/versions/abc",
        400,
        &["n"],
    ));
    out.push(read(
        "version a huge number",
        "/v1/definitions/invoices/versions/99999999999999999999999",
        400,
        &["n"],
    ));
    out.push(read(
        "version negative",
        "/v1/definitions/invoices/versions/-1",
        400,
        &["n"],
    ));
    out.push(read(
        "a version that does not exist",
        "/v1/definitions/invoices/versions/42",
        404,
        &["42"],
    ));
}
