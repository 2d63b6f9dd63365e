//! `a2a-watcher incidents` (docs/howto/incidents.md): the open (or resolved) incidents, oldest
//! first, from a running watcher's `GET /v1/incidents` (every page, following `nextCursor`) or
//! from the local database (`--db`, `--config`: the same pages, read by
//! `watcher_http::incidents::incidents_page`); and `a2a-watcher incidents ack AGENT MESSAGE_ID
//! --by WHO`, which acknowledges one through `POST /v1/incidents/acknowledge` (a write: only
//! through a running watcher, which the notifier of that deployment then tells). A repeated
//! acknowledgement by the same WHO is done, not refused: a script may retry it.

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use watcher_core::ids::AgentId;
use watcher_http::incidents::{
    incidents_page, parse_kind, IncidentCursor, IncidentQuery, IncidentState,
};

use super::{at, output_width, print_json, render, s, table, Reader, Remote, Source, MAX_PAGES};

/// `incidents`: list, or `ack` one.
///
/// `--db`, `--config` and `--tenant` read the local database: they are the list's own flags
/// (not global), so `incidents ack`, a write through a running watcher only, neither lists nor
/// takes them (clap refuses them there, naming the flag).
#[derive(Args, Debug)]
#[command(
    mut_arg("db", |a| a.global(false)),
    mut_arg("config", |a| a.global(false)),
    mut_arg("tenant", |a| a.global(false))
)]
pub struct IncidentsArgs {
    #[command(subcommand)]
    command: Option<IncidentsCommand>,
    /// Only this agent's incidents.
    #[arg(long)]
    agent: Option<String>,
    /// Only this lapse kind: `overdue`, `skipped` or `stalled`.
    #[arg(long, value_parser = ["overdue", "skipped", "stalled"])]
    kind: Option<String>,
    /// `open` (not resolved, by lapse) or `resolved` (by the resolution's instant).
    #[arg(long, default_value = "open", value_parser = ["open", "resolved"])]
    state: String,
    #[command(flatten)]
    source: Source,
}

/// `incidents ack`.
#[derive(Subcommand, Debug)]
enum IncidentsCommand {
    /// Acknowledge an open incident (POST /v1/incidents/acknowledge): it is resolved, reason
    /// `acknowledged`, by WHO. Already acknowledged by the same WHO (a retry): exit 0, the
    /// incident printed. Exit 1 when it is not stored or was resolved otherwise (with `--json`,
    /// the answer's problem+json on stdout).
    Ack {
        /// The agent the lapse task went to.
        agent: String,
        /// The lapse task's messageId (the `message id` column of `incidents`).
        message_id: String,
        /// Who acknowledges it (kept in the resolution; 1 to 256 characters).
        #[arg(long)]
        by: String,
    },
}

/// Runs `args`, printing to stdout.
///
/// # Errors
/// An unreachable watcher, a refused request (the problem's `detail`), an unreadable database,
/// `ack` without `--url`.
pub async fn run(args: IncidentsArgs) -> anyhow::Result<()> {
    let source = &args.source;
    if let Some(IncidentsCommand::Ack {
        agent,
        message_id,
        by,
    }) = &args.command
    {
        let Reader::Remote(remote) = Reader::new(source)? else {
            bail!("`incidents ack` writes through a running watcher: give --url (or A2A_WATCHER_URL), not --db or --config");
        };
        return acknowledge(&remote, agent, message_id, by, source.json).await;
    }
    let incidents = match Reader::new(source)? {
        Reader::Remote(r) => {
            remote_incidents(&r, &args.state, args.agent.as_deref(), args.kind.as_deref()).await?
        }
        Reader::Local(l) => {
            let state = IncidentState::parse(&args.state).map_err(anyhow::Error::msg)?;
            let agent = args
                .agent
                .clone()
                .map(AgentId::parse)
                .transpose()
                .map_err(|r| anyhow::anyhow!("--agent: {r}"))?;
            let agents = match (&agent, &l.agents) {
                (Some(a), _) => vec![a.clone()],
                (None, Some(all)) => all
                    .iter()
                    .filter(|(t, _)| *t == l.tenant)
                    .map(|(_, a)| a.clone())
                    .collect(),
                (None, None) => bail!(
                    "`incidents` needs the agents: --agent, the configuration (--config), or --url"
                ),
            };
            let mut query = IncidentQuery {
                state,
                agent,
                kind: args
                    .kind
                    .as_deref()
                    .map(parse_kind)
                    .transpose()
                    .map_err(anyhow::Error::msg)?,
                limit: watcher_http::page::MAX_LIMIT,
                after: None,
            };
            let now = watcher_core::time::Instant::from_timestamp(jiff::Timestamp::now())
                .context("the system clock is out of range")?;
            let mut out = Vec::new();
            loop {
                let page = incidents_page(&*l.store, &l.tenant, &agents, &query, now).await?;
                for i in &page.incidents {
                    out.push(serde_json::to_value(i)?);
                }
                match page.next_cursor {
                    Some(_) => {
                        // The page's own position, decoded back: the local read resumes there.
                        let text = page.next_cursor.unwrap_or_default();
                        let after = decode_local(&text, state)?;
                        query.after = Some(after);
                    }
                    None => break,
                }
            }
            out
        }
    };
    if source.json {
        print_json(&json!({ "incidents": incidents }))
    } else {
        print!(
            "{}",
            incidents_table(&incidents, &args.state, output_width())
        );
        Ok(())
    }
}

/// The position a local page's `nextCursor` holds.
fn decode_local(text: &str, state: IncidentState) -> anyhow::Result<IncidentCursor> {
    let uri: axum::http::Uri = format!("/?cursor={text}").parse()?;
    let params = watcher_http::page::parse(&uri, 'i', &[])
        .map_err(|e| anyhow::anyhow!("cursor: {}", e.detail))?;
    match params.after {
        Some(watcher_http::page::Cursor::Agent(t)) => {
            IncidentCursor::decode(&t, state).map_err(anyhow::Error::msg)
        }
        _ => bail!("cursor: not an incident position"),
    }
}

/// `incidents ack`: `POST /v1/incidents/acknowledge`, then the incident printed (`--json`: as
/// the route answers it). A 409 for an incident acknowledged already by `by` is a retry that
/// succeeded before: exit 0, the incident printed (`already acknowledged …`).
///
/// # Errors
/// An unreachable watcher; any other refusal (400, 404, a 409 resolved otherwise), as
/// `{url}: {status}: {detail}`, with `json` after printing the answer's problem+json on stdout.
async fn acknowledge(
    remote: &Remote,
    agent: &str,
    message_id: &str,
    by: &str,
    json: bool,
) -> anyhow::Result<()> {
    let body = json!({ "agent": agent, "messageId": message_id, "by": by });
    let (url, status, answer) = remote
        .post(&["v1", "incidents", "acknowledge"], &body)
        .await?;
    let (incident, again) = if status.is_success() {
        (answer, false)
    } else if let Some(incident) = acknowledged_by(status, by, &answer) {
        (incident, true)
    } else {
        if json {
            print_json(&problem(status, &answer))?;
        }
        let detail = answer["detail"]
            .as_str()
            .or(answer["title"].as_str())
            .unwrap_or("no detail");
        bail!("{url}: {status}: {detail}");
    };
    if json {
        return print_json(&incident);
    }
    println!(
        "{}acknowledged {} of agent {} by {} at {}",
        if again { "already " } else { "" },
        s(&incident["messageId"]),
        s(&incident["agent"]),
        s(&incident["resolved"]["by"]),
        at(&incident["resolved"]["at"])
    );
    Ok(())
}

/// The answer of a refused request as problem+json: as given, or (an answer that is not a
/// JSON object, e.g. a proxy's page) `{"status", "title"}` of the HTTP status.
fn problem(status: reqwest::StatusCode, answer: &Value) -> Value {
    if answer.is_object() {
        answer.clone()
    } else {
        json!({ "status": status.as_u16(), "title": status.canonical_reason().unwrap_or("") })
    }
}

/// The incident of a refused acknowledgement when the refusal is a 409 whose `incident` member
/// (the route's problem+json) was resolved `acknowledged` by exactly `by`: an earlier try of the
/// same acknowledgement (a retry), else `None`.
fn acknowledged_by(status: reqwest::StatusCode, by: &str, answer: &Value) -> Option<Value> {
    let incident = &answer["incident"];
    (status == reqwest::StatusCode::CONFLICT
        && incident["resolved"]["reason"] == "acknowledged"
        && incident["resolved"]["by"] == by)
        .then(|| incident.clone())
}

/// Every page of `GET /v1/incidents` in `state` with the filters, following `nextCursor`.
async fn remote_incidents(
    r: &Remote,
    state: &str,
    agent: Option<&str>,
    kind: Option<&str>,
) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut query: Vec<(&str, &str)> = vec![("state", state), ("limit", "1000")];
        if let Some(a) = agent {
            query.push(("agent", a));
        }
        if let Some(k) = kind {
            query.push(("kind", k));
        }
        if let Some(c) = &cursor {
            query.push(("cursor", c));
        }
        let page = r.get_json(&["v1", "incidents"], &query).await?;
        match page["incidents"].as_array() {
            Some(items) => out.extend(items.iter().cloned()),
            None => bail!("GET /v1/incidents: the answer has no `incidents` array"),
        }
        match page["nextCursor"].as_str() {
            Some(next) if !next.is_empty() && cursor.as_deref() != Some(next) => {
                cursor = Some(next.to_owned());
            }
            _ => return Ok(out),
        }
    }
    bail!("GET /v1/incidents: more than {MAX_PAGES} pages; narrow with --agent or --kind")
}

/// `3d 4h`, `2h 5m`, `7m 30s`, `12s`.
fn age(v: &Value) -> String {
    let Some(secs) = v.as_u64() else {
        return s(v);
    };
    let (d, h, m, sec) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{sec}s"),
        (0, 0, _) => format!("{m}m {sec}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// Incidents as one table drawn to `width` columns; resolved ones with how they ended.
pub fn incidents_table(incidents: &[Value], state: &str, width: usize) -> String {
    let resolved = state == "resolved";
    let mut header = vec!["age", "agent", "lapse / lapsed at", "subject", "message id"];
    if resolved {
        header.push("resolved");
    }
    let mut t = table(&header);
    for i in incidents {
        let subject = match &i["subject"] {
            Value::Null => "-".to_owned(),
            sub => format!("{} {}", s(&sub["type"]), s(&sub["id"])),
        };
        let mut row = vec![
            age(&i["ageSeconds"]),
            s(&i["agent"]),
            format!("{}\n{}", s(&i["kind"]), at(&i["lapsedAt"])),
            subject,
            s(&i["messageId"]),
        ];
        if resolved {
            let r = &i["resolved"];
            let extra = [&r["by"], &r["state"], &r["detail"]]
                .into_iter()
                .find_map(|v| v.as_str())
                .map(|x| format!(" ({x})"))
                .unwrap_or_default();
            row.push(format!("{}{extra}\n{}", s(&r["reason"]), at(&r["at"])));
        }
        t.add_row(row);
    }
    format!(
        "{}\n{} {state} incident(s)\n",
        render(t, width),
        incidents.len()
    )
}

impl Remote {
    /// `POST` `body` to `segments`: the URL, the answer's status and its JSON (`null` when the
    /// answer is not JSON), whatever the status.
    ///
    /// # Errors
    /// A URL that cannot hold the path; the watcher not reached.
    async fn post(
        &self,
        segments: &[&str],
        body: &Value,
    ) -> anyhow::Result<(reqwest::Url, reqwest::StatusCode, Value)> {
        let url = self.url(segments, &[])?;
        let answer = self
            .http
            .post(url.clone())
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .with_context(|| format!("Failed to reach the watcher at {url}"))?;
        let status = answer.status();
        let value: Value = answer.json().await.unwrap_or(Value::Null);
        Ok((url, status, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_age_owner_and_how_a_resolved_one_ended() {
        let open = json!({
            "messageId": "lapse:e-1:overdue:2026-09-11T06:00:00Z", "agent": "booking",
            "kind": "overdue", "lapsedAt": "2026-09-11T06:00:40Z", "ageSeconds": 7260,
            "subject": { "type": "shipment", "id": "PA-1" },
        });
        let text = incidents_table(std::slice::from_ref(&open), "open", 200);
        assert!(text.contains("2h 1m"), "{text}");
        assert!(text.contains("shipment PA-1"), "{text}");
        assert!(text.contains("2026-09-11 06:00:40Z"), "{text}");
        assert!(text.ends_with("1 open incident(s)\n"), "{text}");
        let mut done = open;
        done["resolved"] = json!({ "at": "2026-09-11T08:01:40Z", "reason": "acknowledged", "by": "ops@example.com" });
        let text = incidents_table(&[done], "resolved", 200);
        assert!(text.contains("acknowledged (ops@example.com)"), "{text}");
    }
}
