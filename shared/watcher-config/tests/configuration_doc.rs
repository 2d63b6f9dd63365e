//! docs/configuration.md is generated from the configuration type: every key of every table,
//! its default (from `Config::defaults()`, `LimitsConfig::default()`, `DeliveryConfig::default()`
//! and the serde attributes) and its doc comment. The test fails when the file is stale;
//! `UPDATE_DOCS=1 cargo test -p watcher-config --test configuration_doc` rewrites it.

use std::path::PathBuf;

use serde_json::Value;
use watcher_config::config::{DeliveryConfig, LimitsConfig};
use watcher_config::Config;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The configuration types' source: `config.rs` and `notify.rs` of `watcher-config`.
fn sources() -> String {
    ["config.rs", "notify.rs"]
        .iter()
        .map(|f| std::fs::read_to_string(root().join("shared/watcher-config/src").join(f)).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `(field, doc, serde attribute)` of `struct name` in the source, in order.
fn fields(source: &str, name: &str) -> Vec<(String, String, Option<String>)> {
    let start = source
        .find(&format!("pub struct {name} {{"))
        .unwrap_or_else(|| panic!("struct {name}"));
    let body = &source[start..];
    let body = &body[..body.find("\n}").unwrap()];
    let mut out = Vec::new();
    let mut doc = Vec::new();
    let mut attr = None;
    let field = regex::Regex::new(r"^\s*pub ([a-z_]+):").unwrap();
    for line in body.lines().skip(1) {
        let t = line.trim();
        if let Some(d) = t.strip_prefix("///") {
            doc.push(d.trim().to_owned());
        } else if t.starts_with("#[serde(") {
            attr = Some(t.to_owned());
        } else if let Some(c) = field.captures(line) {
            out.push((c[1].to_string(), doc.join(" "), attr.take()));
            doc.clear();
        }
    }
    out
}

fn show(v: &Value) -> String {
    match v {
        Value::Null => "absent".into(),
        Value::String(s) if s.is_empty() => "\"\"".into(),
        Value::String(s) => format!("`{s}`"),
        other => format!("`{other}`"),
    }
}

fn generate() -> String {
    let source = sources();
    let d = Config::defaults();
    let top = serde_json::json!({
        "listen": d.listen, "database": d.database, "public_url": d.public_url,
        "allow_private_endpoints": d.allow_private_endpoints, "retention_days": d.retention_days,
    });
    let limits = serde_json::to_value(LimitsConfig::default()).unwrap();
    let delivery = serde_json::to_value(DeliveryConfig::default()).unwrap();
    let tables: [(&str, &str, Option<&Value>); 8] = [
        ("(top level)", "Config", Some(&top)),
        ("[limits]", "LimitsConfig", Some(&limits)),
        ("[delivery]", "DeliveryConfig", Some(&delivery)),
        ("[[agents]]", "AgentConfig", None),
        ("[[sources]]", "SourceConfig", None),
        ("[[operators]]", "PartyConfig", None),
        ("[[teachers]]", "TeacherConfig", None),
        ("[[notify]]", "NotifyConfig", None),
    ];
    let mut out = String::from(
        "# Configuration keys\n\nGenerated from `shared/watcher-config/src/config.rs` and `notify.rs` by \
         `UPDATE_DOCS=1 cargo test -p watcher-config --test configuration_doc` (the same test fails \
         when this file is stale). The file format and examples: `docs/contracts/serve.md`, \
         `examples/watcher.toml`; carrier-webhook mappings: `docs/contracts/serve.md` \"Carrier \
         webhooks\". OpenTelemetry export on `serve` is set by OpenTelemetry's own environment \
         variables (`OTEL_EXPORTER_OTLP_ENDPOINT`, ...), not in this file: \
         `docs/howto/tracing.md`.\n\n| table | key | default | what |\n|---|---|---|---|\n",
    );
    for (table, name, defaults) in tables {
        for (key, doc, attr) in fields(&source, name) {
            let default = match (defaults.and_then(|d| d.get(&key)), attr.as_deref()) {
                (Some(v), _) if !v.is_array() && !v.is_object() => show(v),
                (_, Some(a)) if a.contains("default_tenant") => "`default`".into(),
                (_, Some(a)) if a.contains("default_true") => "`true`".into(),
                (_, Some(a)) if a.contains("default_notify_format") => "`standard-webhooks`".into(),
                (_, Some(a)) if a.contains("default_notify_timeout") => "`10`".into(),
                (_, Some(a)) if a.contains("default_notify_tls") => "`starttls`".into(),
                (_, Some(a)) if a.contains("resolve_on_absent") => {
                    "`[\"TASK_STATE_COMPLETED\"]`".into()
                }
                (_, Some(a)) if a.contains("default") => "none (empty / false / absent)".into(),
                (_, _) if defaults.is_some() && attr.is_none() && table != "(top level)" => {
                    "see doc".into()
                }
                _ => "**required**".into(),
            };
            let doc = doc.replace('|', "\\|");
            out.push_str(&format!("| `{table}` | `{key}` | {default} | {doc} |\n"));
        }
    }
    out
}

#[test]
fn configuration_md_is_current() {
    let path = root().join("docs/configuration.md");
    let text = generate();
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == text,
        "docs/configuration.md is stale: run `UPDATE_DOCS=1 cargo test -p watcher-config --test configuration_doc`"
    );
    // Every key the limits and delivery tables hold is in the table.
    for key in [
        "facts_per_request",
        "give_up_after",
        "in_flight_per_agent",
        "submit_lapses",
    ] {
        assert!(text.contains(&format!("| `{key}` |")), "{key}");
    }
}

/// `watcher_config::config::KNOWN_KEYS` (the "did you mean" list) holds exactly the keys of every
/// table this file documents.
#[test]
fn the_did_you_mean_list_is_the_structs_keys() {
    let source = sources();
    for (table, name) in [
        ("", "Config"),
        ("limits", "LimitsConfig"),
        ("delivery", "DeliveryConfig"),
        ("agents", "AgentConfig"),
        ("sources", "SourceConfig"),
        ("operators", "PartyConfig"),
        ("teachers", "TeacherConfig"),
        ("notify", "NotifyConfig"),
    ] {
        let want: Vec<String> = fields(&source, name).into_iter().map(|f| f.0).collect();
        let known = watcher_config::config::KNOWN_KEYS
            .iter()
            .find(|(t, _)| *t == table)
            .unwrap_or_else(|| panic!("KNOWN_KEYS has no table {table:?}"))
            .1;
        assert_eq!(known, want.as_slice(), "table {table:?}");
    }
}
