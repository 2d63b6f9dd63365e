//! The pictures in the README and docs/howto/notifications.md: the worked example's first lapse
//! (the manifest, overdue) as the Slack and email channels send it, laid out as Slack and a mail
//! client show them. The HTML is made here from the exact bodies `watcher_notify::body` builds
//! (`docs/notify-slack.html`, `docs/notify-email.html`; this test fails when they are stale, and
//! `UPDATE_DOCS=1 cargo test -p watcher-notify --test it preview::` rewrites them);
//! `bash infra/notify-png.sh` renders them to PNG with headless Chromium.

use std::path::PathBuf;

use serde_json::{json, Value};
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_core::EXPECTATIONS_URI;
use watcher_notify::body;
use watcher_notify::event::LapseEvent;
use watcher_notify::Format;
use watcher_runtime::store::OutboxEntry;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The worked example's manifest, overdue at 22:15 after two hours' grace.
fn manifest_overdue() -> LapseEvent {
    let due = Instant::parse("2026-09-10T20:15:00Z").unwrap();
    let lapsed = Instant::parse("2026-09-10T22:15:00Z").unwrap();
    let message_id = format!("lapse:exp-01J8Q0MANIFEST:overdue:{due}");
    let entry = OutboxEntry::queued(
        Tenant::parse("default").unwrap(),
        AgentId::parse("booking").unwrap(),
        message_id.clone(),
        ExpectationId::parse("exp-01J8Q0MANIFEST").unwrap(),
        LapseKind::Overdue,
        lapsed,
        json!({ "message": {
            "messageId": message_id,
            "parts": [{ "text": "Overdue: the airline manifest for PA-2026-0901 was due by 2026-09-10T20:15:00Z (grace PT2H) and has not arrived. Nothing has been heard about shipment PA-2026-0901 since it was expected." }],
            "metadata": { EXPECTATIONS_URI: { "lapse": {
                "expectationId": "exp-01J8Q0MANIFEST", "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": "PA-2026-0901" },
                "expects": "the airline manifest for PA-2026-0901", "lapse": "overdue",
                "projectedDueAt": due.to_string(), "dueAt": due.to_string(),
                "lapsedAt": lapsed.to_string(), "lineage": 0,
            } } },
        }}),
    );
    LapseEvent::of(1, &entry, Some("https://watcher.example.com"))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Slack's mrkdwn as Slack shows it: `*bold*`, line breaks, `<url|label>` links. The text is
/// Slack-escaped already (`&amp;`, `&lt;`, `&gt;`), which is HTML too.
fn mrkdwn(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('>') else {
            break;
        };
        let link = &rest[start + 1..start + end];
        let (url, label) = link.split_once('|').unwrap_or((link, link));
        out.push_str(&format!("<a href=\"{url}\">{label}</a>"));
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    let mut bold = false;
    out.chars()
        .map(|c| match c {
            '*' => {
                bold = !bold;
                if bold { "<b>" } else { "</b>" }.to_owned()
            }
            '\n' => "<br>".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

const PAGE: &str = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>
body { margin: 0; padding: 16px; background: #fff; font: 15px/1.46 -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; color: #1d1c1d; width: 640px; }
.msg { display: flex; gap: 8px; } .avatar { width: 36px; height: 36px; border-radius: 6px; background: #1f3b5c; color: #fff; font-weight: bold; display: flex; align-items: center; justify-content: center; }
.who b { margin-right: 6px; } .who span { color: #616061; font-size: 12px; } .app { background: #e8e8e8; color: #616061; font-size: 10px; padding: 1px 3px; border-radius: 2px; margin-right: 6px; }
h3 { margin: 4px 0; font-size: 17px; } .fields { display: grid; grid-template-columns: 1fr 1fr; gap: 8px 16px; margin: 8px 0; }
.context { color: #616061; font-size: 13px; } a { color: #1264a3; text-decoration: none; }
.mail { border: 1px solid #ddd; border-radius: 6px; } .head { background: #f6f8fa; padding: 10px 14px; border-bottom: 1px solid #ddd; font-size: 13px; }
.head div { margin: 2px 0; } .head .subject { font-size: 16px; font-weight: bold; margin-bottom: 6px; } pre { margin: 0; padding: 14px; font: 13px/1.5 Menlo, Consolas, monospace; white-space: pre-wrap; }
</style></head><body>";

/// A Slack text object as Slack shows it: `mrkdwn` formatted ([`mrkdwn`]), `plain_text` as
/// written (Slack-escaped already, which is HTML too), line breaks kept.
fn text_object(t: &Value) -> String {
    let text = t["text"].as_str().unwrap();
    match t["type"].as_str().unwrap() {
        "mrkdwn" => mrkdwn(text),
        "plain_text" => text.replace('\n', "<br>"),
        other => panic!("a text object this preview does not draw: {other}"),
    }
}

fn slack_html(b: &Value) -> String {
    let blocks = b["blocks"].as_array().unwrap();
    let mut inner = String::new();
    for block in blocks {
        match block["type"].as_str().unwrap() {
            "header" => inner.push_str(&format!("<h3>{}</h3>", text_object(&block["text"]))),
            "section" if block.get("fields").is_some() => {
                inner.push_str("<div class=\"fields\">");
                for f in block["fields"].as_array().unwrap() {
                    inner.push_str(&format!("<div>{}</div>", text_object(f)));
                }
                inner.push_str("</div>");
            }
            "section" => inner.push_str(&format!("<div>{}</div>", text_object(&block["text"]))),
            "context" => inner.push_str(&format!(
                "<div class=\"context\">{}</div>",
                text_object(&block["elements"][0])
            )),
            other => panic!("a block this preview does not draw: {other}"),
        }
    }
    format!(
        "{PAGE}<div class=\"msg\"><div class=\"avatar\">aw</div><div><div class=\"who\"><b>a2a-watcher</b><span class=\"app\">APP</span><span>22:15</span></div>{inner}</div></div></body></html>\n"
    )
}

fn email_html(b: &Value) -> String {
    format!(
        "{PAGE}<div class=\"mail\"><div class=\"head\"><div class=\"subject\">{}</div><div><b>From</b> a2a-watcher &lt;watcher@example.com&gt;</div><div><b>To</b> Ops desk &lt;ops@example.com&gt;</div><div><b>Date</b> Thu, 10 Sep 2026 22:15:01 +0000</div></div><pre>{}</pre></div></body></html>\n",
        escape(b["subject"].as_str().unwrap()),
        escape(b["text"].as_str().unwrap())
    )
}

#[test]
fn the_previews_are_the_bodies_as_sent() {
    let event = manifest_overdue();
    let slack = body::lapse(Format::Slack, &event).body;
    let email = body::lapse(Format::Email, &event).body;
    for (file, html) in [
        ("docs/notify-slack.html", slack_html(&slack)),
        ("docs/notify-email.html", email_html(&email)),
    ] {
        let path = root().join(file);
        if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1") {
            std::fs::write(&path, &html).unwrap();
            continue;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == html,
            "{file} is stale: run `UPDATE_DOCS=1 cargo test -p watcher-notify --test it preview::`, then `bash infra/notify-png.sh`"
        );
    }
}
