//! Operators' commands (docs/howto/operator-view.md): `subject`, `lapses`, `timeline`, `agents` and
//! `incidents` ([`incidents`]),
//! read from a running watcher (`--url`, `--token` or `A2A_WATCHER_URL`, `A2A_WATCHER_TOKEN`) over
//! its operator routes (contracts/serve.md), or from the local SQLite database (`--db PATH`, or
//! `--config watcher.toml` for its `database` and agents). Readable tables by default; `--json`
//! prints the routes' JSON bodies for scripts.

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use watcher_runtime::store::{LapseLog, Records as _};

use crate::table::{output_width, render, table};
use anyhow::{bail, Context};
use clap::builder::PossibleValue;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};
use watcher_core::ids::{AgentId, Subject, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::store::{DeliveryState, LapseQuery};
use watcher_runtime::view::{AgentView, AgentsPage};
use watcher_store_sqlite::SqliteStore;

/// Where the record is read from, and how it is printed.
#[derive(Args, Debug, Clone)]
pub struct Source {
    /// A running watcher's base URL (else the environment's `A2A_WATCHER_URL`).
    #[arg(long, global = true)]
    url: Option<String>,
    /// An operator's bearer token for `--url` (else the environment's `A2A_WATCHER_TOKEN`).
    #[arg(long, global = true)]
    token: Option<String>,
    /// Read the local SQLite database instead of a running watcher.
    #[arg(long, global = true, conflicts_with = "url")]
    db: Option<PathBuf>,
    /// Read the database (and the agents) named by this configuration file.
    #[arg(long, global = true, conflicts_with = "url")]
    config: Option<PathBuf>,
    /// The tenant to read with `--db`/`--config` (a token names its own tenant).
    #[arg(long, global = true, default_value = "default")]
    tenant: String,
    /// Print JSON (the routes' bodies) instead of tables.
    #[arg(long, global = true)]
    json: bool,
}

/// The operator's read commands.
#[derive(Subcommand, Debug)]
pub enum OperatorCommand {
    /// Print a subject's expectations (projected and current due times, basis, lapses) and facts.
    Subject {
        /// The subject's type, e.g. `shipment`.
        subject_type: String,
        /// The subject's id, e.g. `PA-2026-0901`.
        id: String,
        #[command(flatten)]
        source: Source,
    },
    /// Print lapse tasks with their delivery and task state, oldest first.
    Lapses {
        /// Only this agent's.
        #[arg(long)]
        agent: Option<String>,
        /// Only lapses at or after this RFC 3339 instant (`2026-09-10T20:15:00Z`, or with an
        /// offset `±HH:MM`), read as every instant the watcher reads.
        #[arg(long, value_parser = parse_instant)]
        since: Option<Instant>,
        /// Only this delivery state (any state the list shows).
        #[arg(long, value_enum)]
        delivery: Option<DeliveryArg>,
        #[command(flatten)]
        source: Source,
    },
    /// Write a subject's timeline picture (SVG; docs/howto/operator-view.md "Timeline") to a file.
    Timeline {
        /// The subject's type.
        subject_type: String,
        /// The subject's id.
        id: String,
        /// The file to write.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        #[command(flatten)]
        source: Source,
    },
    /// Print each agent's lapse-task delivery health (`ok`, `retrying`, `failing`) and card.
    Agents {
        #[command(flatten)]
        source: Source,
    },
    /// Print the open incidents (lapses not yet resolved) with their age and agent, oldest
    /// first, or the resolved ones (`--state resolved`); `incidents ack AGENT MESSAGE_ID --by
    /// WHO` acknowledges one (docs/howto/incidents.md).
    Incidents(incidents::IncidentsArgs),
}

/// Runs `command`, printing to stdout.
///
/// # Errors
/// An unreachable watcher, a refused credential (the problem's `detail`), an unreadable
/// database, or a subject nothing is recorded about.
pub async fn run(command: OperatorCommand) -> anyhow::Result<()> {
    match command {
        OperatorCommand::Subject {
            subject_type,
            id,
            source,
        } => {
            let view = match Reader::new(&source)? {
                Reader::Remote(r) => {
                    r.get_json(&["v1", "subjects", &subject_type, &id], &[])
                        .await?
                }
                Reader::Local(l) => l.subject_view(&subject_type, &id).await?,
            };
            if source.json {
                print_json(&view)
            } else {
                print!("{}", subject_tables(&view, output_width()));
                Ok(())
            }
        }
        OperatorCommand::Lapses {
            agent,
            since,
            delivery,
            source,
        } => {
            let filter = LapseFilter {
                agent,
                since,
                delivery: delivery.map(|d| d.0),
            };
            let lapses = match Reader::new(&source)? {
                Reader::Remote(r) => r.lapses(&filter).await?,
                Reader::Local(l) => l.lapses(&filter).await?,
            };
            let lapses: Vec<Value> = lapses.into_iter().filter(|l| filter.keeps(l)).collect();
            if source.json {
                print_json(&json!({ "lapses": lapses }))
            } else {
                print!("{}", lapses_table(&lapses, output_width()));
                Ok(())
            }
        }
        OperatorCommand::Timeline {
            subject_type,
            id,
            output,
            source,
        } => {
            let svg = match Reader::new(&source)? {
                Reader::Remote(r) => {
                    r.get_text(&["v1", "subjects", &subject_type, &id, "timeline.svg"])
                        .await?
                }
                Reader::Local(l) => {
                    let view = l.subject_view(&subject_type, &id).await?;
                    watcher_timeline::render_string(&view, jiff::Timestamp::now())?
                }
            };
            std::fs::write(&output, svg)
                .with_context(|| format!("Failed to write {}", output.display()))?;
            if source.json {
                print_json(&json!({ "written": output }))
            } else {
                println!("wrote {}", output.display());
                Ok(())
            }
        }
        OperatorCommand::Incidents(args) => incidents::run(args).await,
        OperatorCommand::Agents { source } => {
            let body = match Reader::new(&source)? {
                Reader::Remote(r) => r.get_json(&["v1", "agents"], &[]).await?,
                Reader::Local(l) => l.agents().await?,
            };
            if source.json {
                print_json(&body)
            } else {
                print!("{}", agents_table(&body, output_width()));
                Ok(())
            }
        }
    }
}

fn print_json(v: &Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// A command-line instant: read by [`Instant::parse`], the one grammar, range and leap-second
/// rule of every instant the watcher reads (semantics.md "Time"); clap names the flag when it
/// is refused.
fn parse_instant(text: &str) -> Result<Instant, String> {
    Instant::parse(text)
}

/// `--delivery`: one of [`DeliveryState::ALL`], the states the lapse list shows and
/// `GET /v1/lapses?delivery=` accepts (clap lists them in `--help` and refuses anything else,
/// naming the flag and the values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryArg(pub DeliveryState);

impl ValueEnum for DeliveryArg {
    fn value_variants<'a>() -> &'a [Self] {
        static VARIANTS: LazyLock<Vec<DeliveryArg>> =
            LazyLock::new(|| DeliveryState::ALL.into_iter().map(DeliveryArg).collect());
        &VARIANTS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.as_str()))
    }
}

/// `--agent`, `--since`, `--delivery`: sent to the server as query parameters and applied here
/// too, so a server that ignores them answers the same.
#[derive(Debug, Default)]
struct LapseFilter {
    agent: Option<String>,
    since: Option<Instant>,
    delivery: Option<DeliveryState>,
}

impl LapseFilter {
    fn keeps(&self, lapse: &Value) -> bool {
        let agent_ok = self
            .agent
            .as_deref()
            .is_none_or(|a| lapse["agent"].as_str() == Some(a));
        let delivery_ok = self
            .delivery
            .is_none_or(|d| lapse["delivery"].as_str() == Some(d.as_str()));
        let since_ok = self.since.is_none_or(|since| {
            lapse["lapsedAt"]
                .as_str()
                .and_then(|t| Instant::parse(t).ok())
                .is_some_and(|t| t >= since)
        });
        agent_ok && delivery_ok && since_ok
    }
}

enum Reader {
    Remote(Remote),
    Local(Local),
}

impl Reader {
    fn new(source: &Source) -> anyhow::Result<Self> {
        if source.db.is_some() || source.config.is_some() {
            return Ok(Reader::Local(Local::open(source)?));
        }
        let url = source
            .url
            .clone()
            .or_else(|| std::env::var("A2A_WATCHER_URL").ok())
            .context("say where the record is: --url (or A2A_WATCHER_URL) for a running watcher, or --db / --config for the local database")?;
        let token = source
            .token
            .clone()
            .or_else(|| std::env::var("A2A_WATCHER_TOKEN").ok())
            .context("an operator's token is needed with --url: --token or A2A_WATCHER_TOKEN")?;
        Ok(Reader::Remote(Remote {
            base: reqwest::Url::parse(&url).with_context(|| format!("--url {url:?}"))?,
            token,
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()?,
        }))
    }
}

/// A running watcher's operator routes.
struct Remote {
    base: reqwest::Url,
    token: String,
    http: reqwest::Client,
}

/// Pages of `GET /v1/lapses` read at most, following `nextCursor`.
const MAX_PAGES: usize = 1000;

impl Remote {
    /// `segments` percent-encoded one by one (an id may hold `/`; contracts/serve.md).
    fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> anyhow::Result<reqwest::Url> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| anyhow::anyhow!("--url {}: cannot hold a path", self.base))?
            .pop_if_empty()
            .extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    async fn get(&self, url: reqwest::Url) -> anyhow::Result<reqwest::Response> {
        let answer = self
            .http
            .get(url.clone())
            .bearer_auth(&self.token)
            .send()
            .await
            .with_context(|| format!("Failed to reach the watcher at {url}"))?;
        let status = answer.status();
        if status.is_success() {
            return Ok(answer);
        }
        // problem+json: its `detail` says what is wrong.
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        let detail = body["detail"]
            .as_str()
            .or(body["title"].as_str())
            .unwrap_or("no detail");
        bail!("{url}: {status}: {detail}")
    }

    async fn get_json(&self, segments: &[&str], query: &[(&str, &str)]) -> anyhow::Result<Value> {
        let url = self.url(segments, query)?;
        self.get(url.clone())
            .await?
            .json()
            .await
            .with_context(|| format!("{url}: the answer is not JSON"))
    }

    async fn get_text(&self, segments: &[&str]) -> anyhow::Result<String> {
        let url = self.url(segments, &[])?;
        Ok(self.get(url).await?.text().await?)
    }

    /// Every page of `GET /v1/lapses`, following `nextCursor` while the server gives one.
    async fn lapses(&self, filter: &LapseFilter) -> anyhow::Result<Vec<Value>> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut query: Vec<(&str, &str)> = Vec::new();
            if let Some(a) = &filter.agent {
                query.push(("agent", a));
            }
            let since = filter.since.map(|s| s.to_string());
            if let Some(s) = &since {
                query.push(("since", s));
            }
            if let Some(d) = filter.delivery {
                query.push(("delivery", d.as_str()));
            }
            if let Some(c) = &cursor {
                query.push(("cursor", c));
            }
            let page = self.get_json(&["v1", "lapses"], &query).await?;
            match page["lapses"].as_array() {
                Some(items) => out.extend(items.iter().cloned()),
                None => bail!("GET /v1/lapses: the answer has no `lapses` array"),
            }
            match page["nextCursor"].as_str() {
                Some(next) if !next.is_empty() && cursor.as_deref() != Some(next) => {
                    cursor = Some(next.to_owned());
                }
                _ => return Ok(out),
            }
        }
        bail!("GET /v1/lapses: more than {MAX_PAGES} pages; narrow with --agent, --since or --delivery")
    }
}

/// The local SQLite database (read while `serve` may be running: SQLite allows readers).
struct Local {
    store: Arc<SqliteStore>,
    tenant: Tenant,
    agents: Option<Vec<(Tenant, AgentId)>>,
}

impl Local {
    fn open(source: &Source) -> anyhow::Result<Self> {
        let (path, agents) = match (&source.db, &source.config) {
            (Some(db), _) => (db.clone(), None),
            (None, Some(config)) => {
                let cfg = watcher_config::Config::load(config)?;
                let agents = cfg
                    .agents
                    .iter()
                    .map(|a| {
                        Ok((
                            Tenant::parse(a.tenant.clone()).map_err(anyhow::Error::msg)?,
                            AgentId::parse(a.id.clone()).map_err(anyhow::Error::msg)?,
                        ))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                (cfg.database, Some(agents))
            }
            (None, None) => unreachable!("Reader::new checks"),
        };
        if !Path::new(&path).exists() {
            bail!("the database {} does not exist", path.display());
        }
        let store = SqliteStore::open(&path)
            .with_context(|| format!("Failed to open the database {}", path.display()))?;
        Ok(Local {
            store: Arc::new(store),
            tenant: Tenant::parse(source.tenant.clone()).map_err(anyhow::Error::msg)?,
            agents,
        })
    }

    async fn subject_view(&self, subject_type: &str, id: &str) -> anyhow::Result<Value> {
        let subject = Subject::parse(subject_type, id).map_err(anyhow::Error::msg)?;
        let state = self
            .store
            .subject(&self.tenant, &subject)
            .await?
            .with_context(|| format!("nothing is recorded about {subject}"))?;
        Ok(serde_json::to_value(watcher_runtime::view::subject_view(
            &state,
        ))?)
    }

    async fn lapses(&self, filter: &LapseFilter) -> anyhow::Result<Vec<Value>> {
        // The pages `GET /v1/lapses` reads, with the same filters, followed to the end.
        let mut query = LapseQuery {
            agent: filter
                .agent
                .clone()
                .map(AgentId::parse)
                .transpose()
                .map_err(|r| anyhow::anyhow!("--agent: {r}"))?,
            delivery: filter.delivery,
            since: filter.since,
            after: None,
            limit: 1000,
        };
        let mut out = Vec::new();
        loop {
            let page = self.store.lapses_page(&self.tenant, &query).await?;
            // The same view as `GET /v1/lapses` answers.
            for (_, o) in &page.entries {
                out.push(serde_json::to_value(watcher_runtime::view::LapseView::of(
                    o,
                ))?);
            }
            match page.next {
                Some(next) => query.after = Some(next),
                None => return Ok(out),
            }
        }
    }

    async fn agents(&self) -> anyhow::Result<Value> {
        let Some(agents) = &self.agents else {
            bail!("`agents` needs the configuration (--config) to know the agents, or --url");
        };
        let mut out = Vec::new();
        for (tenant, id) in agents.iter().filter(|(t, _)| *t == self.tenant) {
            out.push(AgentView {
                agent_id: id.clone(),
                delivery: watcher_runtime::operators::agent_delivery(&*self.store, tenant, id)
                    .await?,
                // `--db` reads the store and the configuration, not the running directory.
                directory: None,
            });
        }
        Ok(serde_json::to_value(AgentsPage {
            agents: out,
            next_cursor: None,
        })?)
    }
}

/// A string member, or `-`.
fn s(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An instant to the second, in UTC, for a table: `2026-09-11 02:41:07Z` (RFC 3339 allows the
/// space, and a narrow column wraps there, date over time); `--json` keeps every digit. Read as
/// every instant is ([`Instant::parse`]: to `9999-12-31T23:59:59.999999999Z`); anything else is
/// shown as given.
fn at(v: &Value) -> String {
    v.as_str()
        .and_then(|t| Instant::parse(t).ok())
        .map(|t| t.to_civil_utc().strftime("%Y-%m-%d %H:%M:%SZ").to_string())
        .unwrap_or_else(|| s(v))
}

/// The subject view as two tables drawn to `width` columns ([`render`]): expectations, then
/// facts.
pub fn subject_tables(view: &Value, width: usize) -> String {
    let mut t = table(&[
        "expectation / kind",
        "status / basis",
        "due (projected)",
        "satisfied (observed)",
        "lapses",
    ]);
    for e in view["expectations"].as_array().into_iter().flatten() {
        let satisfied = match &e["satisfaction"] {
            Value::Null => "-".to_owned(),
            sat => format!(
                "{}{}",
                at(&sat["observedAt"]),
                if sat["late"] == json!(true) {
                    " late"
                } else {
                    ""
                }
            ),
        };
        let lapses: Vec<String> = e["lapses"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| format!("{} {}", s(&l["lapse"]), at(&l["lapsedAt"])))
            .collect();
        let mut due = at(&e["dueAt"]);
        if !e["anchor"].is_null() && e["dueAt"] == e["projectedDueAt"] && e["status"] == "open" {
            let anchor_id = &e["anchor"]["expectationId"];
            // As the timeline draws it (docs/interpretation.md): the anchor still open.
            let anchor_open = view["expectations"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["expectationId"] == *anchor_id)
                .is_none_or(|a| a["status"] == "open");
            if anchor_open {
                due.push_str(" (anchor open)");
            }
        }
        if at(&e["projectedDueAt"]) != at(&e["dueAt"]) {
            due.push_str(&format!("\n(projected {})", at(&e["projectedDueAt"])));
        }
        t.add_row(vec![
            format!("{}\n{}", s(&e["expectationId"]), s(&e["kind"])),
            format!("{}\nbasis: {}", s(&e["status"]), s(&e["basis"])),
            due,
            satisfied,
            if lapses.is_empty() {
                "-".into()
            } else {
                lapses.join("\n")
            },
        ]);
    }
    let mut f = table(&["observed", "fact", "source", "satisfied"]);
    for fact in view["facts"].as_array().into_iter().flatten() {
        let satisfied: Vec<String> = fact["satisfied"]
            .as_array()
            .into_iter()
            .flatten()
            .map(s)
            .collect();
        f.add_row(vec![
            at(&fact["observedAt"]),
            s(&fact["factKey"]),
            s(&fact["source"]),
            if satisfied.is_empty() {
                "-".into()
            } else {
                satisfied.join(", ")
            },
        ]);
    }
    format!(
        "{} {}\n{}\nfacts\n{}\n",
        s(&view["subject"]["type"]),
        s(&view["subject"]["id"]),
        render(t, width),
        render(f, width)
    )
}

/// Lapse tasks as one table drawn to `width` columns ([`render`]: no word is broken, so ids are
/// whole); the task state drops its `TASK_STATE_` prefix and the last error is cut after its
/// first 60 characters, at a space (`--json` keeps both whole).
pub fn lapses_table(lapses: &[Value], width: usize) -> String {
    let mut t = table(&[
        "lapse / lapsed at",
        "agent",
        "expectation",
        "delivery",
        "task state",
        "last error",
    ]);
    for l in lapses {
        let err = shortened(&s(&l["lastError"]), 60);
        let state = s(&l["taskState"]);
        t.add_row(vec![
            format!("{}\n{}", s(&l["lapse"]), at(&l["lapsedAt"])),
            s(&l["agent"]),
            s(&l["expectationId"]),
            format!("{}\n{} attempt(s)", s(&l["delivery"]), s(&l["attempts"])),
            state
                .strip_prefix("TASK_STATE_")
                .unwrap_or(&state)
                .to_owned(),
            err,
        ]);
    }
    format!("{}\n{} lapse task(s)\n", render(t, width), lapses.len())
}

/// `text` cut to its words within `limit` characters, `...` after them; a first word longer than
/// `limit` is kept whole (a word is never broken).
fn shortened(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let mut out = String::new();
    for word in text.split(' ') {
        let next = if out.is_empty() {
            word.chars().count()
        } else {
            out.chars().count() + 1 + word.chars().count()
        };
        if next > limit.saturating_sub(4) && !out.is_empty() {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if next > limit.saturating_sub(4) {
            break;
        }
    }
    out + " ..."
}

/// `GET /v1/agents` as one table drawn to `width` columns ([`render`]).
pub fn agents_table(body: &Value, width: usize) -> String {
    let mut t = table(&["agent", "delivery", "retrying since", "card", "last error"]);
    for a in body["agents"].as_array().into_iter().flatten() {
        let card = match &a["card"] {
            Value::Null => "-".to_owned(),
            Value::Object(c) => c
                .get("status")
                .or_else(|| c.get("state"))
                .map(s)
                .unwrap_or_else(|| Value::Object(c.clone()).to_string()),
            other => s(other),
        };
        t.add_row(vec![
            s(&a["agentId"]),
            s(&a["delivery"]),
            at(&a["retryingSince"]),
            card,
            s(&a["lastError"]),
        ]);
    }
    // Why a card is not in use, under the table (it is too long for a column).
    let mut why = String::new();
    for a in body["agents"].as_array().into_iter().flatten() {
        if let Some(error) = a["card"]["error"].as_str() {
            let next = a["card"]["nextTryAt"]
                .as_str()
                .map(|n| format!(" (read again at {n})"))
                .unwrap_or_default();
            why.push_str(&format!("card of {}: {}{next}\n", s(&a["agentId"]), error));
        }
    }
    format!("{}\n{why}", render(t, width))
}

mod incidents;

#[cfg(test)]
mod tests;
