//! Agent text in a notification is shown, never read as markup (`watcher_notify::escape`): a
//! lapse whose every agent-written field (agent, expectation id, kind, subject type and id,
//! `expects`, the lapse task's text, the agent's error answer) holds hostile text — a Slack
//! broadcast mention, `&`, `<`, `>`, a Markdown link, emphasis, code, a Slack link — reaches
//! Slack, Teams and email escaped for each, field by field, with no link made of it. Each body is
//! compared whole, so a field left unescaped fails.

use serde_json::{json, Value};
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::EXPECTATIONS_URI;
use watcher_notify::body::{self, Digest};
use watcher_notify::event::{AgentEvent, EventType, LapseEvent};
use watcher_notify::Format;
use watcher_runtime::store::OutboxEntry;

use crate::common::at;

/// What an agent wrote, in every field it writes.
const HOSTILE: &str = "<!channel> & < > [re-confirm your login here](https://evil.example) *bold* _x_ `code` <https://evil|click>";

/// [`HOSTILE`] in a Slack text object: the URLs defanged, `&`, `<`, `>` as entities; the rest
/// is plain text (the Slack bodies use `plain_text` objects and `"mrkdwn": false`).
const SLACK: &str = "&lt;!channel&gt; &amp; &lt; &gt; [re-confirm your login here](https[:]//evil[.]example) *bold* _x_ `code` &lt;https[:]//evil|click&gt;";

/// [`HOSTILE`] in an Adaptive Card `TextBlock` or `Fact`: the URLs defanged, every Markdown
/// special behind a backslash.
const TEAMS: &str = r"\<!channel\> & \< \> \[re-confirm your login here\]\(https\[:\]//evil\[.\]example\) \*bold\* \_x\_ \`code\` \<https\[:\]//evil|click\>";

/// [`HOSTILE`] in a plain-text email: the URLs defanged.
const EMAIL: &str = "<!channel> & < > [re-confirm your login here](https[:]//evil[.]example) *bold* _x_ `code` <https[:]//evil|click>";

const DUE: &str = "2026-09-11T00:00:05Z";
const LAPSED: &str = "2026-09-11T00:00:10Z";

/// The lapse task of an expectation whose agent, id, kind, subject, `expects` and text are all
/// [`HOSTILE`]; it failed with [`HOSTILE`] as the agent's answer.
fn hostile_entry() -> OutboxEntry {
    let message_id = format!("lapse:{HOSTILE}:overdue:{DUE}");
    let mut entry = OutboxEntry::queued(
        Tenant::parse("default").unwrap(),
        AgentId::parse(HOSTILE).unwrap(),
        message_id.clone(),
        ExpectationId::parse(HOSTILE).unwrap(),
        LapseKind::Overdue,
        at(10),
        json!({ "message": {
            "messageId": message_id,
            "parts": [{ "text": HOSTILE }],
            "metadata": { EXPECTATIONS_URI: { "lapse": {
                "expectationId": HOSTILE, "kind": HOSTILE,
                "subject": { "type": HOSTILE, "id": HOSTILE },
                "expects": HOSTILE, "lapse": "overdue",
                "projectedDueAt": DUE, "dueAt": DUE, "lapsedAt": LAPSED, "lineage": 0,
            } } },
        }}),
    );
    entry.attempts = 3;
    entry.last_error = Some(HOSTILE.to_owned());
    entry
}

fn hostile_lapse() -> LapseEvent {
    let e = LapseEvent::of(1, &hostile_entry(), Some("https://watcher.example"));
    assert!(e.block.is_some(), "the block is read");
    e
}

/// The watcher's own links of the hostile subject (percent-encoded path segments).
fn links(e: &LapseEvent) -> (String, String) {
    let l = e.links.clone().expect("links with a public_url");
    assert!(
        !l.operator.contains(['<', '>', '|', ' ']),
        "percent-encoded: {}",
        l.operator
    );
    (l.operator, l.timeline)
}

#[test]
fn slack_shows_agent_text_as_text_in_every_field() {
    let e = hostile_lapse();
    let (operator, timeline) = links(&e);
    let got = body::lapse(Format::Slack, &e).body;
    let want = json!({
        "text": format!("Overdue: {SLACK} for {SLACK} {SLACK} (agent {SLACK})"),
        "mrkdwn": false,
        "blocks": [
            { "type": "header", "text": { "type": "plain_text", "text": format!("Overdue: {SLACK} for {SLACK} {SLACK}") } },
            { "type": "section", "text": { "type": "plain_text", "text": SLACK } },
            { "type": "section", "fields": [
                { "type": "plain_text", "text": format!("Agent: {SLACK}") },
                { "type": "plain_text", "text": format!("Subject: {SLACK} {SLACK}") },
                { "type": "plain_text", "text": format!("Expected: {SLACK}") },
                { "type": "plain_text", "text": format!("Due: {DUE}") },
                { "type": "plain_text", "text": format!("Lapsed: {LAPSED}") },
            ] },
            { "type": "context", "elements": [{ "type": "mrkdwn", "text": format!("<{operator}|Operator page> · <{timeline}|Timeline>") }] },
        ],
    });
    assert_eq!(got, want);
    assert_no_live_markup("slack", &got);
}

#[test]
fn teams_shows_agent_text_as_text_in_every_field() {
    let e = hostile_lapse();
    let (operator, timeline) = links(&e);
    let got = body::lapse(Format::Teams, &e).body;
    let want = json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": [
                    { "type": "TextBlock", "text": format!("Overdue: {TEAMS} for {TEAMS} {TEAMS}"), "wrap": true, "weight": "Bolder", "size": "Medium" },
                    { "type": "TextBlock", "text": TEAMS, "wrap": true },
                    { "type": "FactSet", "facts": [
                        { "title": "Agent", "value": TEAMS },
                        { "title": "Subject", "value": format!("{TEAMS} {TEAMS}") },
                        { "title": "Expected", "value": TEAMS },
                        { "title": "Due", "value": DUE },
                        { "title": "Lapsed", "value": LAPSED },
                    ] },
                ],
                "actions": [
                    { "type": "Action.OpenUrl", "title": "Operator page", "url": operator },
                    { "type": "Action.OpenUrl", "title": "Timeline", "url": timeline },
                ],
            },
        }],
    });
    assert_eq!(got, want);
    assert_no_live_markup("teams", &got);
}

#[test]
fn email_shows_agent_text_with_no_link_in_subject_and_text() {
    let e = hostile_lapse();
    let (operator, timeline) = links(&e);
    let got = body::lapse(Format::Email, &e).body;
    let want = json!({
        "subject": format!("[a2a-watcher] Overdue: {EMAIL} for {EMAIL} {EMAIL} (agent {EMAIL})"),
        "text": format!(
            "{EMAIL}\n\nAgent: {EMAIL}\nSubject: {EMAIL} {EMAIL}\nExpected: {EMAIL}\nDue: {DUE}\nLapsed: {LAPSED}\nLapse task: lapse:{EMAIL}:overdue:{DUE}\n\nOperator page: {operator}\nTimeline: {timeline}\n"
        ),
    });
    assert_eq!(got, want);
    assert_no_live_markup("email", &got);
}

/// The Standard Webhooks (and SNS) body is data for a program, not text for a person: the
/// agent's words are carried exactly, for the receiver to escape for its own format.
#[test]
fn standard_webhooks_carries_agent_text_as_data_unchanged() {
    let got = body::lapse(Format::StandardWebhooks, &hostile_lapse()).body;
    assert_eq!(got["data"]["text"], HOSTILE);
    assert_eq!(got["data"]["agent"], HOSTILE);
    assert_eq!(got["data"]["block"]["subject"]["id"], HOSTILE);
    assert_eq!(got["data"]["block"]["expects"], HOSTILE);
}

/// A digest lists lapses by their agent-written names: escaped the same way.
#[test]
fn digests_escape_each_lapse_they_list() {
    let e = hostile_lapse();
    let d = Digest::of(
        "ops",
        std::slice::from_ref(&e),
        Some("https://watcher.example"),
    )
    .unwrap();
    let line = |s: &str| format!("Overdue: {s} for {s} {s} (agent {s})");
    // In Markdown the watcher's own parentheses are escaped too.
    let teams_line = format!("Overdue: {TEAMS} for {TEAMS} {TEAMS} \\(agent {TEAMS}\\)");

    let slack = body::digest(Format::Slack, &d).body;
    assert_eq!(slack["mrkdwn"], false);
    assert_eq!(slack["text"], "a2a-watcher: 1 lapse (1 overdue)");
    assert_eq!(
        slack["blocks"][1]["text"],
        json!({ "type": "plain_text", "text": format!("• {}", line(SLACK)) })
    );
    assert_no_live_markup("slack", &slack);

    let teams = body::digest(Format::Teams, &d).body;
    // The list item's `- ` is the watcher's Markdown; the line after it is escaped.
    assert_eq!(
        teams["attachments"][0]["content"]["body"][1],
        json!({ "type": "TextBlock", "text": format!("- {teams_line}"), "wrap": true })
    );
    assert_no_live_markup("teams", &teams);

    let email = body::digest(Format::Email, &d).body;
    assert_eq!(
        email["text"],
        format!(
            "1 lapse (1 overdue) from {LAPSED} to {LAPSED}:\n\n- {}\n\nAll lapse tasks: https://watcher.example/ui/lapses\n",
            line(EMAIL)
        )
    );
    assert_no_live_markup("email", &email);
}

/// An agent's event (here a failed lapse task, with the agent's answer in it) escapes its
/// title, its sentence and its facts.
#[test]
fn agent_events_escape_title_sentence_and_facts() {
    let entry = hostile_entry();
    let e = AgentEvent::failed(
        EventType::LapseTaskFailed,
        &entry,
        Some("https://watcher.example"),
    );
    let title = |s: &str| format!("Lapse task failed: {s} for {s} {s} (agent {s})");
    let teams_title = format!("Lapse task failed: {TEAMS} for {TEAMS} {TEAMS} \\(agent {TEAMS}\\)");
    let sentence = |s: &str| {
        format!(
            "The lapse task {s} for {s} {s} to agent {s} failed after 3 attempts: {s}. It waits for an operator's re-queue."
        )
    };
    let when = entry.next_attempt_at.to_string();
    let message_id = |s: &str| format!("lapse:{s}:overdue:{DUE}");

    let slack = body::agent_event(Format::Slack, &e).body;
    assert_eq!(
        slack,
        json!({
            "text": title(SLACK),
            "mrkdwn": false,
            "blocks": [
                { "type": "header", "text": { "type": "plain_text", "text": title(SLACK) } },
                { "type": "section", "text": { "type": "plain_text", "text": sentence(SLACK) } },
                { "type": "section", "fields": [
                    { "type": "plain_text", "text": format!("Agent: {SLACK}") },
                    { "type": "plain_text", "text": format!("Subject: {SLACK} {SLACK}") },
                    { "type": "plain_text", "text": format!("Lapse task: {}", message_id(SLACK)) },
                    { "type": "plain_text", "text": format!("When: {when}") },
                ] },
                { "type": "context", "elements": [{ "type": "mrkdwn", "text": "<https://watcher.example/ui/agents|Agents>" }] },
            ],
        })
    );

    let teams = body::agent_event(Format::Teams, &e).body;
    let card = &teams["attachments"][0]["content"];
    assert_eq!(card["body"][0]["text"], teams_title);
    assert_eq!(card["body"][1]["text"], sentence(TEAMS));
    assert_eq!(
        card["body"][2]["facts"],
        json!([
            { "title": "Agent", "value": TEAMS },
            { "title": "Subject", "value": format!("{TEAMS} {TEAMS}") },
            { "title": "Lapse task", "value": message_id(TEAMS) },
            { "title": "When", "value": when },
        ])
    );
    assert_no_live_markup("teams", &teams);

    let email = body::agent_event(Format::Email, &e).body;
    assert_eq!(email["subject"], format!("[a2a-watcher] {}", title(EMAIL)));
    assert_eq!(
        email["text"],
        format!(
            "{}\n\nAgent: {EMAIL}\nSubject: {EMAIL} {EMAIL}\nLapse task: {}\nWhen: {when}\n\nAgents: https://watcher.example/ui/agents\n",
            sentence(EMAIL),
            message_id(EMAIL)
        )
    );
    assert_no_live_markup("email", &email);
    assert_no_live_markup("slack", &slack);
}

/// Whatever the body, no URL of the hostile text is left for a client to link, and none of its
/// markup is left live for the format: `format` is `slack` (no mention, no `<…>` link), `teams`
/// (no `[…](…)` link) or `email` (plain text: URLs only).
fn assert_no_live_markup(format: &str, body: &Value) {
    let text = body.to_string();
    let live: &[&str] = match format {
        "slack" => &["https://evil", "<!channel>", "|click>"],
        "teams" => &["https://evil", "]("],
        _ => &["https://evil"],
    };
    for raw in live {
        assert!(!text.contains(raw), "{raw:?} in {text}");
    }
}
