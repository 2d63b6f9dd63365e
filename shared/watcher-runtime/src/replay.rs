//! `a2a-watcher replay`: a scenario on a simulated clock (contracts/replay.md). Runs the real
//! engine and store; prints what happened as JSON Lines; sends nothing.

use std::sync::Arc;

use serde_json::{json, Value};
use watcher_core::card::declaration_from_card;
use watcher_core::engine::{AgentProfile, Effect, Input};
use watcher_core::fact::parse_fact;
use watcher_core::ids::{AgentId, Source, Tenant};
use watcher_core::ingest::push_items;
use watcher_core::lapse::Delivery;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;

use crate::directory::{AgentEntry, Directory};
use crate::store::Store;
use crate::watcher::{Applied, ApplyError, Watcher};

/// A malformed scenario: which part, and why (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{location}: {reason}")]
pub struct ScenarioError {
    /// e.g. `steps[3].push.agent` or `agents[0].card`.
    pub location: String,
    /// What is wrong.
    pub reason: String,
}

/// A failure while running a well-formed scenario.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The scenario is malformed.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The store or engine shell failed.
    #[error("running the scenario failed: {0}")]
    Apply(#[from] ApplyError),
}

fn bad(location: impl Into<String>, reason: impl Into<String>) -> ScenarioError {
    ScenarioError {
        location: location.into(),
        reason: reason.into(),
    }
}

enum StepKind {
    Push {
        tenant: Tenant,
        agent: AgentId,
        event: Value,
    },
    Fact {
        tenant: Tenant,
        facts: Vec<watcher_core::engine::ReportedFact>,
    },
}

struct Step {
    at: Instant,
    kind: StepKind,
}

struct Scenario {
    start: Instant,
    until: Instant,
    settings: Settings,
    directory: Directory,
    steps: Vec<Step>,
}

fn instant(v: Option<&Value>, location: &str) -> Result<Instant, ScenarioError> {
    let text = v
        .and_then(Value::as_str)
        .ok_or_else(|| bad(location, "is required and must be an RFC 3339 instant"))?;
    Instant::parse(text).map_err(|r| bad(location, r))
}

fn tenant(v: Option<&Value>, location: &str) -> Result<Tenant, ScenarioError> {
    match v {
        None | Some(Value::Null) => Ok(Tenant::default_tenant()),
        Some(Value::String(s)) => Tenant::parse(s.clone()).map_err(|r| bad(location, r)),
        Some(_) => Err(bad(location, "must be a string")),
    }
}

fn parse_scenario(doc: &Value) -> Result<Scenario, ScenarioError> {
    let obj = doc
        .as_object()
        .ok_or_else(|| bad("scenario", "must be a JSON object"))?;
    let start = instant(obj.get("start"), "start")?;
    let until = instant(obj.get("until"), "until")?;
    if until < start {
        return Err(bad("until", "is earlier than start"));
    }
    let settings: Settings = match obj.get("settings") {
        None | Some(Value::Null) => Settings::default(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| bad("settings", e.to_string()))?,
    };
    let directory = Directory::new();
    let agents = obj
        .get("agents")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("agents", "is required and must be an array"))?;
    for (i, a) in agents.iter().enumerate() {
        let loc = format!("agents[{i}]");
        let id = a
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("{loc}.id"), "is required"))
            .and_then(|s| AgentId::parse(s).map_err(|r| bad(format!("{loc}.id"), r)))?;
        let tenant = tenant(a.get("tenant"), &format!("{loc}.tenant"))?;
        let card = a
            .get("card")
            .ok_or_else(|| bad(format!("{loc}.card"), "is required"))?;
        let declaration = declaration_from_card(card).map_err(|errs| {
            bad(
                format!("{loc}.card"),
                errs.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        let submit = a
            .get("submitLapses")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let interface_tenant = card
            .get("supportedInterfaces")
            .and_then(Value::as_array)
            .and_then(|l| l.first())
            .and_then(|i| i.get("tenant"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        directory.insert(AgentEntry {
            tenant,
            submits_lapses: !declaration.keeps_time || submit,
            profile: AgentProfile { id, declaration },
            delivery: Delivery {
                push: None,
                tenant: interface_tenant,
                resolve_on: None,
            },
        });
    }
    let steps_json = obj
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("steps", "is required and must be an array"))?;
    let mut steps = Vec::with_capacity(steps_json.len());
    let mut last = start;
    for (i, s) in steps_json.iter().enumerate() {
        let loc = format!("steps[{i}]");
        let at = instant(s.get("at"), &format!("{loc}.at"))?;
        if at < last {
            return Err(bad(
                format!("{loc}.at"),
                format!(
                    "{at} is earlier than the step before ({last}); steps must not go back in time"
                ),
            ));
        }
        last = at;
        let kind = if let Some(push) = s.get("push") {
            let agent_name = push
                .get("agent")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("{loc}.push.agent"), "is required"))?;
            let agent =
                AgentId::parse(agent_name).map_err(|r| bad(format!("{loc}.push.agent"), r))?;
            let entry = directory.find(&agent).ok_or_else(|| {
                bad(
                    format!("{loc}.push.agent"),
                    format!("{agent_name:?} is not one of the scenario's agents"),
                )
            })?;
            let event = push
                .get("event")
                .cloned()
                .ok_or_else(|| bad(format!("{loc}.push.event"), "is required"))?;
            let parsed = a2a_types::StreamResponse::from_push_body(event.clone())
                .map_err(|e| bad(format!("{loc}.push.event"), e.to_string()))?;
            // serve answers such a push 400; a scenario holding one is malformed.
            watcher_core::ingest::check_state(&parsed)
                .map_err(|r| bad(format!("{loc}.push.event"), r))?;
            StepKind::Push {
                tenant: entry.tenant.clone(),
                agent,
                event,
            }
        } else if let Some(fact) = s.get("fact") {
            let reporter = s.get("reporter").and_then(Value::as_str).ok_or_else(|| {
                bad(
                    format!("{loc}.reporter"),
                    "is required: the authenticated identity reporting the fact",
                )
            })?;
            let source = Source::parse(reporter).map_err(|r| bad(format!("{loc}.reporter"), r))?;
            let tenant = tenant(s.get("tenant"), &format!("{loc}.tenant"))?;
            let f =
                parse_fact(fact, &source).map_err(|e| bad(format!("{loc}.fact"), e.to_string()))?;
            StepKind::Fact {
                tenant,
                facts: vec![f],
            }
        } else {
            return Err(bad(&loc, "must have `push` or `fact`"));
        };
        steps.push(Step { at, kind });
    }
    Ok(Scenario {
        start,
        until,
        settings,
        directory,
        steps,
    })
}

/// Runs a scenario (replay.md) on `store` and returns the output lines, the last being `record`.
///
/// # Errors
/// [`ReplayError::Scenario`] for a malformed scenario (nothing runs), naming the step.
pub async fn run<S: Store + ?Sized>(doc: &Value, store: Arc<S>) -> Result<Vec<Value>, ReplayError> {
    let scenario = parse_scenario(doc)?;
    let watcher = Watcher::new(store.clone(), scenario.directory, scenario.settings);
    let mut lines = Vec::new();
    let _ = scenario.start;
    for (i, step) in scenario.steps.iter().enumerate() {
        // Timers due strictly before this step's instant fire first, each at its own instant.
        fire_until(&watcher, step.at, false, &mut lines).await?;
        let (tenant, input) = match &step.kind {
            StepKind::Push {
                tenant,
                agent,
                event,
            } => {
                let Some(entry) = watcher.directory.get(tenant, agent) else {
                    continue;
                };
                let parsed = a2a_types::StreamResponse::from_push_body(event.clone())
                    .map_err(|e| bad(format!("steps[{i}].push.event"), e.to_string()))?;
                let items = push_items(&parsed, agent, step.at);
                (
                    tenant.clone(),
                    Input::Push {
                        agent: entry.profile.clone(),
                        items,
                    },
                )
            }
            StepKind::Fact { tenant, facts } => (tenant.clone(), Input::Facts(facts.clone())),
        };
        let applied = watcher.apply(&tenant, &input, step.at).await?;
        report(&watcher, &applied, step.at, &mut lines);
        // Timers due exactly at this instant fire after every step at this instant.
        let next_at = scenario.steps.get(i + 1).map(|s| s.at);
        if next_at != Some(step.at) {
            fire_until(&watcher, step.at, true, &mut lines).await?;
        }
    }
    fire_until(&watcher, scenario.until, true, &mut lines).await?;
    let records = store.all_records().await.map_err(ApplyError::from)?;
    lines.push(json!({
        "type": "record",
        "expectations": records.iter().map(watcher_core::record::ExpectationRecord::to_contract_json).collect::<Vec<_>>(),
    }));
    Ok(lines)
}

/// Fires, one at a time at its own instant, every timer due before `until` (or at it, when
/// `inclusive`).
async fn fire_until<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    until: Instant,
    inclusive: bool,
    lines: &mut Vec<Value>,
) -> Result<(), ReplayError> {
    let mut fired = std::collections::BTreeSet::new();
    loop {
        let Some(next) = watcher.store.next_timer().await.map_err(ApplyError::from)? else {
            return Ok(());
        };
        let due = if inclusive {
            next.at <= until
        } else {
            next.at < until
        };
        if !due || !fired.insert((next.tenant.clone(), next.key.clone(), next.at)) {
            return Ok(());
        }
        let applied = watcher
            .apply(&next.tenant, &Input::Timer(next.key.clone()), next.at)
            .await?;
        report(watcher, &applied, next.at, lines);
    }
}

/// Output lines for what one input did (replay.md "Output").
fn report<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    applied: &Applied,
    at: Instant,
    lines: &mut Vec<Value>,
) {
    for e in &applied.effects {
        match e {
            Effect::Lapsed(l) => match applied
                .outbox
                .iter()
                .find(|o| o.agent == l.agent && o.message_id == l.message_id)
            {
                Some(o) => lines.push(json!({
                    "type": "lapseTask",
                    "at": l.block.lapsed_at,
                    "agent": l.agent,
                    "request": o.request,
                })),
                None => {
                    let keeps_time = watcher
                        .directory
                        .get(&l.tenant, &l.agent)
                        .is_some_and(|a| a.profile.declaration.keeps_time);
                    lines.push(json!({
                        "type": "lapse",
                        "at": l.block.lapsed_at,
                        "agent": l.agent,
                        "messageId": l.message_id,
                        "lapse": l.block,
                        "submitted": false,
                        "why": if keeps_time { "the agent keeps time itself (keepsTime: true)" } else { "the agent is not registered" },
                    }));
                }
            },
            Effect::Rejected(r) => lines.push(json!({
                "type": "rejected",
                "at": r.at,
                "agent": r.agent,
                "expectationId": r.expectation_id,
                "reason": r.reason,
                "taskId": r.task_id,
            })),
            Effect::Raised { expectation, subject } => lines.push(json!({
                "type": "raised", "at": at, "agent": expectation.agent,
                "expectationId": expectation.id, "subject": subject,
            })),
            Effect::Duplicate { expectation } => lines.push(json!({
                "type": "duplicate", "at": at, "agent": expectation.agent, "expectationId": expectation.id,
            })),
            Effect::Satisfied { expectation, late } => lines.push(json!({
                "type": "satisfied", "at": at, "agent": expectation.agent,
                "expectationId": expectation.id, "late": late,
            })),
            Effect::Reanchored { expectation, due_at } => lines.push(json!({
                "type": "reanchored", "at": at, "agent": expectation.agent,
                "expectationId": expectation.id, "dueAt": due_at,
            })),
            Effect::Withdrawn { expectation, reason } => lines.push(json!({
                "type": "withdrawn", "at": at, "agent": expectation.agent,
                "expectationId": expectation.id, "reason": reason,
            })),
            Effect::FactRecorded { fact_key, source, satisfied, duplicate } => lines.push(json!({
                "type": "fact", "at": at, "factKey": fact_key, "source": source,
                "satisfied": satisfied.iter().map(|s| s.id.to_string()).collect::<Vec<_>>(),
                "duplicate": duplicate,
            })),
            Effect::ArmTimer { .. } | Effect::DisarmTimer { .. } => {}
        }
    }
}
