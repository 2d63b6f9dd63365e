//! Incidents (expectations-v1 §13.1; docs/howto/incidents.md): a lapse task in the outbox and
//! its resolution ([`watcher_runtime::resolution`]), as `GET /v1/incidents`, `/ui/incidents` and
//! `a2a-watcher incidents` show them.
//!
//! An incident is *open* while its entry has no resolution, *resolved* once it has one. A page
//! is read agent by agent from the store's per-agent lanes, never from a list of all lapses:
//! [`watcher_runtime::store::Outbox::outbox_open`] (unresolved entries by `lapsedAt`) or [`watcher_runtime::store::Outbox::outbox_resolved`]
//! (resolved entries by the resolution's instant). Each agent's read is at most `limit + 1`
//! entries (plus the entries of the agent that share the cursor's instant and were shown
//! already), so a page costs at most (agents of the tenant) × (`limit` + 1) entries read; the
//! per-agent pages are merged oldest first.
//!
//! The order across agents is (instant, agent id, the store's order within the agent at that
//! instant). The cursor holds the last position shown: the instant, the agent, the messageId and
//! its ordinal among the agent's entries at that instant. A page stops where the first agent's
//! read ran out (the *frontier*), so no agent's later entry is ever passed over; a page may
//! therefore hold fewer than `limit` incidents (even none, with `kind`) and still have a
//! `nextCursor`. When the cursor's own incident leaves the lane between two pages (resolved),
//! the next page starts right after the ones before it; if other incidents of the agent at that
//! very instant left too, as many later ones of that instant are passed over by that walk
//! (a fresh walk shows them).

use std::cmp::Ordering;

use futures_util::stream::{self, StreamExt};
use watcher_core::ids::{AgentId, ExpectationId, Subject, Tenant};
use watcher_core::lapse::LapseBlock;
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_core::EXPECTATIONS_URI;
use watcher_runtime::resolution::{Resolution, ResolutionReason};
use watcher_runtime::store::{DeliveryState, OutboxEntry, Store, StoreError};

/// The largest ordinal a cursor may hold: the entries of one agent at one instant that a walk
/// passes in pages (a cursor is read back by reading them again), so a cursor cannot ask for
/// an unbounded read.
pub const MAX_ORDINAL: usize = 100_000;

/// How many agents' lanes one page reads at once.
const CONCURRENT_READS: usize = 8;

/// Which incidents a list shows: `open` (not resolved; by `lapsedAt`) or `resolved` (by the
/// resolution's instant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncidentState {
    /// Not resolved: [`watcher_runtime::store::Lane::Open`].
    Open,
    /// Resolved: [`watcher_runtime::store::Lane::Resolved`].
    Resolved,
}

impl IncidentState {
    /// `open` or `resolved`.
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentState::Open => "open",
            IncidentState::Resolved => "resolved",
        }
    }

    /// The state named `text` (`open` or `resolved`).
    ///
    /// # Errors
    /// Any other text: the reason quotes it and names both.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "open" => Ok(IncidentState::Open),
            "resolved" => Ok(IncidentState::Resolved),
            other => Err(format!("{other:?} is not one of open, resolved")),
        }
    }

    /// The letter the cursor keeps, so a cursor of one state is refused by the other.
    fn letter(self) -> char {
        match self {
            IncidentState::Open => 'o',
            IncidentState::Resolved => 'r',
        }
    }
}

/// The lapse kind named `text` (`overdue`, `skipped` or `stalled`).
///
/// # Errors
/// Any other text: the reason quotes it and lists the three.
pub fn parse_kind(text: &str) -> Result<LapseKind, String> {
    [LapseKind::Overdue, LapseKind::Skipped, LapseKind::Stalled]
        .into_iter()
        .find(|k| k.as_str() == text)
        .ok_or_else(|| format!("{text:?} is not one of overdue, skipped, stalled"))
}

/// A position in the merged order: the last incident a page showed (or the frontier it stopped
/// at). Opaque to clients: [`IncidentCursor::encode`] / [`IncidentCursor::decode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncidentCursor {
    /// The list it belongs to.
    pub state: IncidentState,
    /// The instant of the position (`lapsedAt`, or the resolution's `at`).
    pub at: Instant,
    /// The agent of the position.
    pub agent: AgentId,
    /// Its ordinal (1-based) among the agent's entries at `at`, in the store's order.
    pub ordinal: usize,
    /// The messageId at the position.
    pub message_id: String,
}

impl IncidentCursor {
    /// The cursor's text (`crate::page::encode`, kind `i`).
    pub fn encode(&self) -> String {
        let text = format!(
            "{}\n{}\n{}\n{}\n{}",
            self.state.letter(),
            self.at.as_nanos(),
            self.ordinal,
            self.agent.as_str(),
            self.message_id
        );
        crate::page::encode('i', &crate::page::Cursor::Agent(text))
    }

    /// The cursor of `text` as [`crate::page::parse`] decoded it, for a list of `state`.
    ///
    /// # Errors
    /// Malformed, or a cursor of the other state: the reason says which.
    pub fn decode(text: &str, state: IncidentState) -> Result<Self, String> {
        let bad = || "malformed".to_owned();
        let mut parts = text.splitn(5, '\n');
        let letter = parts.next().ok_or_else(bad)?;
        if letter.len() != 1 || !letter.starts_with(state.letter()) {
            return Err(format!(
                "not a cursor of state={}; pass the `nextCursor` of the same list",
                state.as_str()
            ));
        }
        let nanos: i128 = parts.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        let at = Instant::from_nanos(nanos).map_err(|_| bad())?;
        let ordinal: usize = parts
            .next()
            .and_then(|n| n.parse().ok())
            .filter(|n| (1..=MAX_ORDINAL).contains(n))
            .ok_or_else(bad)?;
        let agent = parts
            .next()
            .and_then(|a| AgentId::parse(a.to_owned()).ok())
            .ok_or_else(bad)?;
        let message_id = parts.next().ok_or_else(bad)?.to_owned();
        Ok(IncidentCursor {
            state,
            at,
            agent,
            ordinal,
            message_id,
        })
    }
}

/// What one list read asks for.
#[derive(Debug, Clone)]
pub struct IncidentQuery {
    /// Open or resolved.
    pub state: IncidentState,
    /// Only this agent's (one lane read); every agent of the tenant without it.
    pub agent: Option<AgentId>,
    /// Only this lapse kind (applied to what the lanes answer).
    pub kind: Option<LapseKind>,
    /// Incidents per page, 1..=[`crate::page::MAX_LIMIT`].
    pub limit: usize,
    /// Where the page starts (after this position).
    pub after: Option<IncidentCursor>,
}

/// How an incident ended: `{ "at", "reason", "state"?, "detail"?, "by"? }`, the outbox entry's
/// resolution ([`Resolution`]) with the reason's own member beside `reason`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResolutionView {
    /// When it was resolved (UTC).
    pub at: Instant,
    /// `fact`, `task`, `withdrawn`, `superseded` or `acknowledged`.
    pub reason: String,
    /// For `task`: the Task's state (`TASK_STATE_COMPLETED`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// For `withdrawn`: the withdrawal's reason, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For `superseded`: the successor's expectationId; for `acknowledged`: who acknowledged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl ResolutionView {
    /// The view of `r`.
    pub fn of(r: &Resolution) -> Self {
        let (state, detail, by) = match &r.reason {
            ResolutionReason::Fact => (None, None, None),
            ResolutionReason::Task { state } => (Some(state.clone()), None, None),
            ResolutionReason::Withdrawn { detail } => (None, Some(detail.clone()), None),
            ResolutionReason::Superseded { by } => (None, None, Some(by.to_string())),
            ResolutionReason::Acknowledged { by } => (None, None, Some(by.clone())),
        };
        ResolutionView {
            at: r.at,
            reason: r.reason.as_str().to_owned(),
            state,
            detail,
            by,
        }
    }
}

/// One incident: `{ "messageId", "expectationId", "agent", "kind", "lapsedAt", "ageSeconds",
/// "subject"?, "expectationKind"?, "delivery", "taskId"?, "taskState"?, "resolved"? }`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct IncidentView {
    /// The lapse task's deterministic `messageId`: the incident's key.
    pub message_id: String,
    /// The expectation that lapsed.
    pub expectation_id: ExpectationId,
    /// The agent the lapse task is for: the incident's owner.
    pub agent: AgentId,
    /// The lapse kind: `overdue`, `skipped` or `stalled`.
    pub kind: LapseKind,
    /// When the watcher determined the lapse (UTC).
    pub lapsed_at: Instant,
    /// Whole seconds the incident has been open: from `lapsedAt` to the time of the read while
    /// open, to the resolution once resolved; never negative.
    pub age_seconds: u64,
    /// The subject, from the lapse block the lapse task carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// The expectation's kind (e.g. `shipment.arrival`), from the same block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expectation_kind: Option<String>,
    /// The lapse task's delivery state.
    pub delivery: DeliveryState,
    /// The agent's Task for the lapse task, once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// That Task's last known state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_state: Option<String>,
    /// How it ended; absent while open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ResolutionView>,
}

impl IncidentView {
    /// The incident of outbox entry `o`, read at `now`.
    pub fn of(o: &OutboxEntry, now: Instant) -> Self {
        let block: Option<LapseBlock> = o
            .request
            .pointer("/message/metadata")
            .and_then(|m| m.get(EXPECTATIONS_URI))
            .and_then(|m| m.get("lapse"))
            .and_then(|b| serde_json::from_value(b.clone()).ok());
        let end = o.resolved.as_ref().map_or(now, |r| r.at);
        let age = (end.as_nanos() - o.lapsed_at.as_nanos()).max(0) / 1_000_000_000;
        IncidentView {
            message_id: o.message_id.clone(),
            expectation_id: o.expectation_id.clone(),
            agent: o.agent.clone(),
            kind: o.lapse,
            lapsed_at: o.lapsed_at,
            age_seconds: u64::try_from(age).unwrap_or(u64::MAX),
            subject: block.as_ref().map(|b| b.subject.clone()),
            expectation_kind: block.map(|b| b.kind),
            delivery: o.delivery,
            task_id: o.task_id.clone(),
            task_state: o.task_state.clone(),
            resolved: o.resolved.as_ref().map(ResolutionView::of),
        }
    }
}

/// A page of incidents: `{ "incidents": [IncidentView], "nextCursor": "…" | null }`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct IncidentsPage {
    /// The page's incidents, oldest first.
    pub incidents: Vec<IncidentView>,
    /// Where the next page starts; `null` on the last.
    pub next_cursor: Option<String>,
}

/// The agents of `tenant` the directory knows: registered (card read) and configured, by id.
pub fn tenant_agents(
    directory: &watcher_runtime::directory::Directory,
    tenant: &Tenant,
) -> Vec<AgentId> {
    let ids: std::collections::BTreeSet<AgentId> = directory
        .entries()
        .into_iter()
        .filter(|a| a.tenant == *tenant)
        .map(|a| a.profile.id)
        .chain(directory.configured(tenant).into_iter().map(|(id, _)| id))
        .collect();
    ids.into_iter().collect()
}

/// The instant an entry is ordered by in `state`'s lane.
fn key_of(state: IncidentState, o: &OutboxEntry) -> Instant {
    match state {
        IncidentState::Open => o.lapsed_at,
        IncidentState::Resolved => o.resolved.as_ref().map_or(o.lapsed_at, |r| r.at),
    }
}

/// `at` plus one nanosecond (the lanes' `from` is inclusive), or `at` at the end of time.
fn just_after(at: Instant) -> Instant {
    Instant::from_nanos(at.as_nanos() + 1).unwrap_or(at)
}

/// One entry read, with its place in the merged order.
struct Item {
    at: Instant,
    agent: AgentId,
    ordinal: usize,
    entry: OutboxEntry,
}

impl Item {
    fn order(&self, other: &Item) -> Ordering {
        (self.at, &self.agent, self.ordinal).cmp(&(other.at, &other.agent, other.ordinal))
    }

    fn cursor(&self, state: IncidentState) -> IncidentCursor {
        IncidentCursor {
            state,
            at: self.at,
            agent: self.agent.clone(),
            ordinal: self.ordinal,
            message_id: self.entry.message_id.clone(),
        }
    }
}

/// One agent's lane read after the cursor: the items past it, and whether the read was full
/// (the agent may have more).
async fn read_agent(
    store: &dyn Store,
    tenant: &Tenant,
    agent: &AgentId,
    query: &IncidentQuery,
) -> Result<(Vec<Item>, bool), StoreError> {
    let limit = query.limit;
    let (from, want, resume) = match &query.after {
        None => (None, limit + 1, None),
        Some(c) => match agent.cmp(&c.agent) {
            // Its entries at the cursor's instant were all shown: start after it.
            Ordering::Less => (Some(just_after(c.at)), limit + 1, None),
            Ordering::Equal => (Some(c.at), (limit + 1).saturating_add(c.ordinal), Some(c)),
            Ordering::Greater => (Some(c.at), limit + 1, None),
        },
    };
    let read = match query.state {
        IncidentState::Open => store.outbox_open(tenant, agent, from, want).await?,
        IncidentState::Resolved => store.outbox_resolved(tenant, agent, from, want).await?,
    };
    let full = read.len() >= want;
    // Ordinals among the entries at one instant, counted from the read's start (which is the
    // first entry at the cursor's instant for the cursor's agent).
    let mut items: Vec<Item> = Vec::with_capacity(read.len());
    for entry in read {
        let at = key_of(query.state, &entry);
        let ordinal = match items.last() {
            Some(prev) if prev.at == at => prev.ordinal + 1,
            _ => 1,
        };
        items.push(Item {
            at,
            agent: agent.clone(),
            ordinal,
            entry,
        });
    }
    if let Some(c) = resume {
        let at_cursor: Vec<&Item> = items.iter().take_while(|i| i.at == c.at).collect();
        // Shown already: up to the cursor's own entry, found by its messageId. If it left the
        // lane since (resolved, as an acknowledgement of the row just read does), the ones
        // before it: ordinal − 1, exact unless others of that instant left too (module docs).
        let shown = at_cursor
            .iter()
            .position(|i| i.entry.message_id == c.message_id)
            .map_or((c.ordinal - 1).min(at_cursor.len()), |p| p + 1);
        // `shown` <= the cursor's ordinal (an entry's place at its instant only moves earlier,
        // as entries before it leave the lane), so a full read keeps `limit + 1` items.
        return Ok((items.into_iter().skip(shown).collect(), full));
    }
    Ok((items, full))
}

/// One page of `tenant`'s incidents as [`IncidentQuery`] asks, over `agents` (the tenant's, or
/// the one of `query.agent`), read at `now`: the per-agent lanes merged oldest first, stopped at
/// the frontier (module docs), cut before [`crate::page::MAX_PAGE_BYTES`].
///
/// # Errors
/// The store's, as it gave them.
pub async fn incidents_page(
    store: &dyn Store,
    tenant: &Tenant,
    agents: &[AgentId],
    query: &IncidentQuery,
    now: Instant,
) -> Result<IncidentsPage, StoreError> {
    let reads: Vec<Result<(Vec<Item>, bool), StoreError>> = stream::iter(agents.iter().cloned())
        .map(|agent| async move { read_agent(store, tenant, &agent, query).await })
        .buffered(CONCURRENT_READS)
        .collect()
        .await;
    let mut items: Vec<Item> = Vec::new();
    let mut frontier: Option<Item> = None;
    for read in reads {
        let (mut agent_items, full) = read?;
        if full {
            // The agent's last entry read bounds the page: beyond it, its next entries are
            // unknown. Kept as a position even when it is filtered out below.
            if let Some(last) = agent_items.pop() {
                let earlier = frontier.as_ref().is_none_or(|f| last.order(f).is_lt());
                let bound = Item {
                    at: last.at,
                    agent: last.agent.clone(),
                    ordinal: last.ordinal,
                    entry: last.entry.clone(),
                };
                items.push(last);
                if earlier {
                    frontier = Some(bound);
                }
            }
        }
        items.extend(agent_items);
    }
    items.sort_by(Item::order);
    let within = |i: &Item| frontier.as_ref().is_none_or(|f| !i.order(f).is_gt());
    let mut shown: Vec<(IncidentCursor, IncidentView)> = Vec::new();
    let mut rest = false;
    for item in items.iter().filter(|i| within(i)) {
        if query.kind.is_some_and(|k| k != item.entry.lapse) {
            continue;
        }
        if shown.len() == query.limit {
            rest = true;
            break;
        }
        shown.push((item.cursor(query.state), IncidentView::of(&item.entry, now)));
    }
    let (incidents, last, cut) = crate::page::fill(shown);
    let next = if cut || rest {
        last
    } else {
        // Every incident up to the frontier is on the page: go on from the frontier.
        frontier.map(|f| f.cursor(query.state))
    };
    Ok(IncidentsPage {
        incidents,
        next_cursor: next.map(|c| c.encode()),
    })
}
