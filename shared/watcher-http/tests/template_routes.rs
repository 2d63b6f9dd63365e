//! The AWS deployment declares its routes twice over: the routers answer them, and
//! `template.yaml`'s HttpApi events decide which requests API Gateway hands to which function. A
//! route the router has and the template lacks answers 404 on AWS alone. This checks both ways,
//! against the routers' own tables ([`watcher_http::api_routes`],
//! [`watcher_http::learnables::learnables_routes`]), so neither list can drift.

use regex::Regex;
use watcher_http::route_table::Method;

/// `(method, path)` of the HttpApi events of the template resource `function`.
fn template_events(function: &str) -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    let text = std::fs::read_to_string(path).expect("template.yaml beside the workspace");
    let event =
        Regex::new(r#"Method:\s*(\w+),\s*Path:\s*(?:"([^"]+)"|([^\s,}]+))"#).expect("a regex");
    let resource = Regex::new(r"^  ([A-Za-z0-9]+):\s*$").expect("a regex");
    let mut current = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(c) = resource.captures(line) {
            current = c[1].to_string();
        } else if current == function {
            if let Some(c) = event.captures(line) {
                let path = c.get(2).or_else(|| c.get(3)).map_or("", |m| m.as_str());
                out.push((c[1].to_string(), path.to_owned()));
            }
        }
    }
    assert!(
        !out.is_empty(),
        "{function} has no HttpApi event in template.yaml"
    );
    out
}

/// Whether API Gateway's route `(method, pattern)` takes a request the router's route
/// `(route_method, route_path)` answers: `ANY` takes every method; `{name}` takes one segment,
/// `{name+}` one or more; other segments are equal.
fn covers(method: &str, pattern: &str, route_method: Method, route_path: &str) -> bool {
    if method != "ANY" && method != route_method.as_str() {
        return false;
    }
    let pattern: Vec<&str> = pattern.trim_start_matches('/').split('/').collect();
    let route: Vec<&str> = route_path.trim_start_matches('/').split('/').collect();
    for (i, p) in pattern.iter().enumerate() {
        let is_param = p.starts_with('{') && p.ends_with('}');
        if is_param && p.ends_with("+}") {
            return route.len() > i;
        }
        let Some(r) = route.get(i) else {
            return false;
        };
        let r_is_param = r.starts_with('{') && r.ends_with('}');
        if is_param != r_is_param || (!is_param && p != r) {
            return false;
        }
    }
    pattern.len() == route.len()
}

fn check(function: &str, routes: Vec<(Method, &'static str)>) {
    let events = template_events(function);
    let missing: Vec<String> = routes
        .iter()
        .filter(|(m, p)| !events.iter().any(|(em, ep)| covers(em, ep, *m, p)))
        .map(|(m, p)| format!("{} {p}", m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "routes the router answers that {function} in template.yaml does not take: {missing:?}"
    );
    let dead: Vec<String> = events
        .iter()
        .filter(|(em, ep)| !routes.iter().any(|(m, p)| covers(em, ep, *m, p)))
        .map(|(em, ep)| format!("{em} {ep}"))
        .collect();
    assert!(
        dead.is_empty(),
        "{function}'s events in template.yaml that no route answers: {dead:?}"
    );
}

#[test]
fn every_watcher_route_is_an_api_function_event() {
    let mut routes = watcher_http::api_routes();
    routes.extend(watcher_http::web::web_routes());
    check("ApiFunction", routes);
}

#[test]
fn every_authority_route_is_a_lesson_write_function_event() {
    check(
        "LessonWriteFunction",
        watcher_http::learnables::learnables_routes(),
    );
}

#[test]
fn the_matching_rule_reads_patterns_as_api_gateway_does() {
    assert!(covers(
        "GET",
        "/v1/subjects/{type}/{id+}",
        Method::Get,
        "/v1/subjects/{a}/{b}"
    ));
    assert!(covers("ANY", "/ui/{proxy+}", Method::Post, "/ui/login"));
    assert!(!covers("ANY", "/ui/{proxy+}", Method::Get, "/ui"));
    assert!(!covers("POST", "/v1/facts", Method::Get, "/v1/facts"));
    assert!(!covers(
        "GET",
        "/v1/agents/{agentId}/push",
        Method::Get,
        "/v1/agents/{a}/rejections"
    ));
    assert!(!covers(
        "GET",
        "/v1/lapses",
        Method::Get,
        "/v1/lapses/retry"
    ));
}

/// The HttpApi's `RouteSettings` in template.yaml: route key (`METHOD /path`) → the
/// `Throttling…Limit` settings under it, each `(name, value as written)`.
fn route_settings() -> Vec<(String, Vec<(String, String)>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    let text = std::fs::read_to_string(path).expect("template.yaml beside the workspace");
    let resource = Regex::new(r"^  ([A-Za-z0-9]+):\s*$").expect("a regex");
    let key = Regex::new(r#"^        "([A-Z]+ /[^"]*)":\s*$"#).expect("a regex");
    let setting = Regex::new(r"^          (Throttling\w+):\s*(.+?)\s*$").expect("a regex");
    let (mut in_api, mut in_settings) = (false, false);
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for line in text.lines() {
        if let Some(c) = resource.captures(line) {
            in_api = &c[1] == "HttpApi";
            in_settings = false;
        } else if in_api && line.starts_with("      ") && !line.starts_with("       ") {
            in_settings = line.trim_end() == "      RouteSettings:";
        } else if in_settings {
            if let Some(c) = key.captures(line) {
                out.push((c[1].to_string(), Vec::new()));
            } else if let (Some(c), Some(last)) = (setting.captures(line), out.last_mut()) {
                last.1.push((c[1].to_string(), c[2].to_string()));
            }
        }
    }
    out
}

/// Per-route throttles (docs/security.md "The edge"): every key of the HttpApi's
/// `RouteSettings` is a route some function declares (a key naming no route fails the deploy:
/// "Unable to find Route by key"), each sets both limits (a route setting replaces the default
/// route settings rather than inheriting them), every route of the api function has one, and
/// `/healthz` is in the anonymous group.
#[test]
fn every_route_setting_names_a_declared_route_and_sets_both_limits() {
    let settings = route_settings();
    let api: Vec<String> = template_events("ApiFunction")
        .into_iter()
        .map(|(m, p)| format!("{m} {p}"))
        .collect();
    let declared: Vec<String> = api
        .iter()
        .cloned()
        .chain(
            template_events("LessonWriteFunction")
                .into_iter()
                .map(|(m, p)| format!("{m} {p}")),
        )
        .collect();
    assert!(settings.len() >= 16, "{settings:?}");
    for (key, limits) in &settings {
        assert!(
            declared.contains(key),
            "RouteSettings {key:?} names no route"
        );
        let names: Vec<&str> = limits.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["ThrottlingRateLimit", "ThrottlingBurstLimit"],
            "{key}"
        );
    }
    let missing: Vec<&String> = api
        .iter()
        .filter(|r| !settings.iter().any(|(k, _)| k == *r))
        .collect();
    assert!(
        missing.is_empty(),
        "api routes on the default throttle: {missing:?}"
    );
    let health = settings
        .iter()
        .find(|(k, _)| k == "GET /healthz")
        .expect("GET /healthz has a route setting");
    assert_eq!(
        health.1,
        [
            (
                "ThrottlingRateLimit".to_owned(),
                "!Ref AnonymousThrottleRate".to_owned()
            ),
            (
                "ThrottlingBurstLimit".to_owned(),
                "!Ref AnonymousThrottleBurst".to_owned()
            ),
        ]
    );
}
