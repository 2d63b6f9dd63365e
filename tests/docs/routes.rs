//! The routes table of the book (`docs/reference/routes.md`) lists every route the watcher answers: the API's, the web page's
//! and the authority's (from the routers' own tables, `watcher_http::api_routes` and its
//! siblings) and `serve`'s `/metrics`; and it lists none that is not answered. A route added
//! without its line, or a line left for a route removed, fails here.

use std::collections::BTreeSet;

/// A path pattern with every `{…}` segment (and what follows it in that segment, as in
/// `{name}.json`) as `{}`, so that `{agentId}` and `{agent_id}` compare equal.
fn shape(path: &str) -> String {
    path.split('/')
        .map(|seg| if seg.starts_with('{') { "{}" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

/// `(METHOD, shape)` of every route the routes table names: each backticked
/// `METHOD /path`, or `/path` after one (it takes the method before it in its cell).
fn documented() -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(super::root().join("docs/reference/routes.md"))
        .expect("docs/reference/routes.md");
    let start = text.find("| route | who |").expect("the routes table");
    let mut out = BTreeSet::new();
    for row in text[start..].lines().skip(2) {
        if !row.starts_with('|') {
            break;
        }
        let cell = row.split('|').nth(1).unwrap_or_default();
        let mut method = String::new();
        for (i, item) in cell.split('`').enumerate() {
            if i % 2 == 0 {
                continue;
            }
            let (m, path) = match item.split_once(' ') {
                Some((m, p)) if m.chars().all(|c| c.is_ascii_uppercase()) => (m.to_owned(), p),
                _ => (method.clone(), item),
            };
            if path.starts_with('/') && !m.is_empty() {
                method = m.clone();
                out.insert((m, shape(path)));
            }
        }
    }
    out
}

fn answered() -> BTreeSet<(String, String)> {
    watcher_http::api_routes()
        .into_iter()
        .chain(watcher_http::web::web_routes())
        .chain(watcher_http::learnables::learnables_routes())
        .map(|(m, p)| (m.as_str().to_owned(), shape(p)))
        .chain([("GET".to_owned(), "/metrics".to_owned())])
        .collect()
}

#[test]
fn the_routes_table_lists_every_route_and_only_those() {
    let documented = documented();
    let answered = answered();
    let missing: Vec<_> = answered.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&answered).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/reference/routes.md: not listed {missing:?}; listed but not answered {extra:?}"
    );
}

#[test]
fn the_table_reader_finds_shared_cells_and_methods() {
    let documented = documented();
    for (m, p) in [
        ("POST", "/ui/logout"),
        ("GET", "/ui/subjects/{}/{}"),
        ("PUT", "/v1/definitions/{}"),
        ("POST", "/v1/definitions/{}/lessons:check"),
        ("GET", "/v1/schemas/{}"),
    ] {
        assert!(
            documented.contains(&(m.to_owned(), p.to_owned())),
            "{m} {p} not read from {documented:?}"
        );
    }
}

/// `(where, METHOD, shape)` of every `curl` to the watcher in the docs' shell examples (a URL on
/// port 8080, `$API_URL` or `{ApiUrl}`); the method is `-X`'s, else POST with a body, else GET.
fn curled() -> Vec<(String, String, String)> {
    let url = regex::Regex::new(
        r#"(?:localhost:8080|127\.0\.0\.1:8080|\$API_URL|\{ApiUrl\})(/[^\s'"?$]*)"#,
    )
    .expect("regex");
    let mut out = Vec::new();
    for (at, line) in super::cli::shell_lines() {
        for call in line.split("curl ").skip(1) {
            let Some(path) = url.captures(call).map(|c| c[1].to_owned()) else {
                continue;
            };
            let words: Vec<&str> = call.split_whitespace().collect();
            let method = match words.iter().position(|w| *w == "-X") {
                Some(i) => words.get(i + 1).copied().unwrap_or("GET").to_owned(),
                None if words
                    .iter()
                    .any(|w| w.starts_with("-d") || w.starts_with("--data")) =>
                {
                    "POST".to_owned()
                }
                None => "GET".to_owned(),
            };
            out.push((at.clone(), method, shape(&path)));
        }
    }
    out
}

/// A concrete path's shape against the route shapes: each `{}` segment matches any one segment.
fn matches(route: &str, path: &str) -> bool {
    let (r, p): (Vec<&str>, Vec<&str>) = (route.split('/').collect(), path.split('/').collect());
    r.len() == p.len()
        && r.iter()
            .zip(&p)
            .all(|(r, p)| *r == "{}" || r == p || (r.starts_with('{') && p.starts_with('{')))
}

#[test]
fn every_curl_in_the_docs_calls_a_route_the_watcher_answers() {
    let calls = curled();
    assert!(
        calls.len() >= 10,
        "the scan must find the docs' curl calls; found {}",
        calls.len()
    );
    let answered = answered();
    let unknown: Vec<String> = calls
        .iter()
        .filter(|(_, m, p)| !answered.iter().any(|(am, ap)| am == m && matches(ap, p)))
        .map(|(at, m, p)| format!("{at}: {m} {p}"))
        .collect();
    assert!(
        unknown.is_empty(),
        "curl calls in the docs to routes the watcher does not answer:\n{}",
        unknown.join("\n")
    );
    assert!(matches("/v1/subjects/{}/{}", "/v1/subjects/shipment/PA-1"));
    assert!(!matches("/v1/subjects/{}/{}", "/v1/subjects/shipment"));
}
