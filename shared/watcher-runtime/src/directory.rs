//! The agents a deployment knows: who they are, what their cards declare, whether the watcher
//! submits their lapse tasks, and how — and, per configured agent, the health of its card
//! (serve.md "Agents are independent": one agent's unreachable or invalid card never stops the
//! watcher or another agent).
//!
//! A [`Directory`] is shared: clones see the same agents, and a card read later (a retry after
//! an outage) is inserted while the watcher runs.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use watcher_core::engine::AgentProfile;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_core::time::Instant;

use crate::origins::OriginQueue;

/// One registered agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEntry {
    /// Its tenant.
    pub tenant: Tenant,
    /// Id and validated Expectations declaration.
    pub profile: AgentProfile,
    /// Whether the watcher submits this agent's lapse tasks: `keepsTime: false`, or
    /// `submit_lapses = true` in its configuration (semantics.md, "Who keeps time").
    pub submits_lapses: bool,
    /// Push configuration and interface tenant for its lapse tasks.
    pub delivery: Delivery,
}

/// Where a configured agent's card stands (serve.md "Agents are independent").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CardHealth {
    /// `ok` (the card was read and is in use), `stale` (the last card read is in use because
    /// reading it now fails), or `unavailable` (no card was ever read: the agent's pushes answer
    /// 503 until one is).
    pub state: CardState,
    /// When the card was last read successfully (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_at: Option<Instant>,
    /// Since when reading it fails (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<Instant>,
    /// Why the last read failed, naming the card and the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the next read is tried (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_try_at: Option<Instant>,
}

/// The state in [`CardHealth`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum CardState {
    /// Read and in use.
    Ok,
    /// The last card read is in use; reading it now fails.
    Stale,
    /// Never read: the agent is not served yet.
    Unavailable,
}

type Key = (Tenant, AgentId);

/// What the lifecycle probe found for an agent at one protocol version
/// (docs/specs/agent-card-vs-lifecycle-conformance.md; `a2a-watcher probe`, and `probe = true`
/// on an `[[agents]]` entry). Only a probe promotes an agent to lifecycle-trusted; the card
/// alone never does.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lifecycle {
    /// The protocol version probed (the card interface's `protocolVersion`, e.g. `1.0`).
    pub protocol_version: String,
    /// Whether the probe promoted the agent: every status timestamped, exactly one terminal
    /// event, `GetTask` served, pushes arrived when the card offers them, and the probe's
    /// canceled task had its cancel pushed exactly once.
    pub lifecycle_trusted: bool,
    /// Why it was not promoted (the conformance note's demotion rules), in words; empty when
    /// trusted.
    pub demotions: Vec<String>,
    /// When the probe ran (UTC).
    pub probed_at: Instant,
    /// The probe's whole descriptor, as `a2a-watcher probe` prints it.
    pub descriptor: serde_json::Value,
}

impl Lifecycle {
    /// Reads a descriptor as `a2a-watcher probe` prints it (`protocolVersion`,
    /// `lifecycleTrusted`, `demotions`, `cancel`), probed at `probed_at`. A descriptor without
    /// `lifecycleTrusted: true` does not promote. Nor does one kept before the probe exercised a
    /// cancel (no `cancel` member): it is read as it was, with the demotion
    /// [`Lifecycle::NO_CANCEL_LEG`] added, until a fresh probe replaces it.
    pub fn from_descriptor(descriptor: serde_json::Value, probed_at: Instant) -> Lifecycle {
        let mut demotions: Vec<String> = descriptor["demotions"]
            .as_array()
            .map(|d| {
                d.iter()
                    .filter_map(|r| r.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let cancel_leg = descriptor
            .get("cancel")
            .is_some_and(serde_json::Value::is_object);
        if !cancel_leg {
            demotions.push(Self::NO_CANCEL_LEG.to_owned());
        }
        Lifecycle {
            protocol_version: descriptor["protocolVersion"]
                .as_str()
                .unwrap_or("1.0")
                .to_owned(),
            lifecycle_trusted: cancel_leg
                && descriptor["lifecycleTrusted"] == serde_json::Value::Bool(true),
            demotions,
            probed_at,
            descriptor,
        }
    }

    /// The demotion of a descriptor kept before the probe exercised a cancel.
    pub const NO_CANCEL_LEG: &'static str =
        "probed before the probe exercised a cancel: how cancels are pushed is unknown; probe again";
}

/// Registered agents by (tenant, id), and the card health of every configured agent. Cheap to
/// clone; clones share their contents.
#[derive(Debug, Clone, Default)]
pub struct Directory {
    agents: Arc<RwLock<BTreeMap<Key, AgentEntry>>>,
    cards: Arc<RwLock<BTreeMap<Key, CardHealth>>>,
    lifecycle: Arc<RwLock<BTreeMap<Key, Lifecycle>>>,
    /// The origin tasks followed with `GetTask` for agents that are not lifecycle-trusted: kept
    /// here because every holder of the directory (the push route, the delivery lanes) adds to
    /// or reads it.
    origins: Arc<OriginQueue>,
    /// Agents whose configuration says `reconcile = false`.
    unreconciled: Arc<RwLock<std::collections::BTreeSet<Key>>>,
    /// Origins are checked before a lapse task's first send even though the in-memory origin
    /// queue is off ([`Directory::set_origin_checks`]): the serverless deployment, whose
    /// functions keep no state between invocations.
    origin_checks: Arc<std::sync::atomic::AtomicBool>,
    /// Origin tasks are followed in the store, not in [`Directory::origins`]
    /// ([`Directory::set_origins_in_store`]).
    origins_in_store: Arc<std::sync::atomic::AtomicBool>,
}

impl Directory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an agent.
    pub fn insert(&self, entry: AgentEntry) {
        let key = (entry.tenant.clone(), entry.profile.id.clone());
        self.agents
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, entry);
    }

    /// The agent `id` of `tenant`.
    pub fn get(&self, tenant: &Tenant, id: &AgentId) -> Option<AgentEntry> {
        self.agents
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&(tenant.clone(), id.clone()))
            .cloned()
    }

    /// The agent `id` in whichever tenant has it (ids are unique within a deployment).
    pub fn find(&self, id: &AgentId) -> Option<AgentEntry> {
        self.agents
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .find(|a| &a.profile.id == id)
            .cloned()
    }

    /// Every registered agent, in (tenant, id) order.
    pub fn entries(&self) -> Vec<AgentEntry> {
        self.agents
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    /// Records where `agent`'s card stands.
    pub fn set_card_health(&self, tenant: &Tenant, agent: &AgentId, health: CardHealth) {
        self.cards
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((tenant.clone(), agent.clone()), health);
    }

    /// Where `agent`'s card stands; `None` for an agent that is not configured.
    pub fn card_health(&self, tenant: &Tenant, agent: &AgentId) -> Option<CardHealth> {
        self.cards
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&(tenant.clone(), agent.clone()))
            .cloned()
    }

    /// Every configured agent whose card is not `ok`, with its health, in (tenant, id) order.
    pub fn card_problems(&self) -> Vec<(Tenant, AgentId, CardHealth)> {
        self.cards
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|(_, h)| h.state != CardState::Ok)
            .map(|((t, a), h)| (t.clone(), a.clone(), h.clone()))
            .collect()
    }

    /// Every configured agent of `tenant` with its card health, in id order.
    pub fn configured(&self, tenant: &Tenant) -> Vec<(AgentId, CardHealth)> {
        self.cards
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|((t, _), _)| t == tenant)
            .map(|((_, a), h)| (a.clone(), h.clone()))
            .collect()
    }

    /// Records what the lifecycle probe found for `agent` (its latest probe).
    pub fn set_lifecycle(&self, tenant: &Tenant, agent: &AgentId, lifecycle: Lifecycle) {
        self.lifecycle
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((tenant.clone(), agent.clone()), lifecycle);
    }

    /// Forgets what a probe found for `agent` (its card now names a protocol version never
    /// probed).
    pub fn clear_lifecycle(&self, tenant: &Tenant, agent: &AgentId) {
        self.lifecycle
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&(tenant.clone(), agent.clone()));
    }

    /// What the last lifecycle probe of `agent` found, if it was probed.
    pub fn lifecycle(&self, tenant: &Tenant, agent: &AgentId) -> Option<Lifecycle> {
        self.lifecycle
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&(tenant.clone(), agent.clone()))
            .cloned()
    }

    /// Whether a probe promoted `agent` to lifecycle-trusted. `false` for an agent never
    /// probed: the card alone never promotes.
    pub fn lifecycle_trusted(&self, tenant: &Tenant, agent: &AgentId) -> bool {
        self.lifecycle(tenant, agent)
            .is_some_and(|l| l.lifecycle_trusted)
    }

    /// Records whether `agent`'s origin tasks may be reconciled (`[[agents]] reconcile`, default
    /// `true`; `false` is an operator's choice, e.g. for an agent without `GetTask`).
    pub fn set_reconciled(&self, tenant: &Tenant, agent: &AgentId, on: bool) {
        let mut off = self
            .unreconciled
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (tenant.clone(), agent.clone());
        if on {
            off.remove(&key);
        } else {
            off.insert(key);
        }
    }

    /// Whether `agent`'s origin tasks are reconciled with `GetTask`: reconciliation is on
    /// (`[delivery] reconcile_origins` above 0), the agent's configuration does not turn it off,
    /// and no probe promoted it to lifecycle-trusted.
    pub fn reconciles(&self, tenant: &Tenant, agent: &AgentId) -> bool {
        (self.origins.enabled() || self.origins_in_store())
            && !self.lifecycle_trusted(tenant, agent)
            && !self
                .unreconciled
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(&(tenant.clone(), agent.clone()))
    }

    /// Whether a lapse task of `agent` has its origin task asked for with `GetTask` before it is
    /// first sent: reconciliation is on (`[delivery] reconcile_origins` above 0), the agent's
    /// configuration does not turn it off, and no probe found `GetTask` unserved — whether or
    /// not a probe promoted the agent to lifecycle-trusted. A probe sees how its own tasks'
    /// cancels are pushed, not every cancel (an SDK may push nothing for a task canceled after
    /// its executor returned), and one `GetTask` per lapse task is cheap against a lapse task
    /// for canceled work.
    pub fn checks_origin_before_send(&self, tenant: &Tenant, agent: &AgentId) -> bool {
        let key = (tenant.clone(), agent.clone());
        (self.origins.enabled()
            || self
                .origin_checks
                .load(std::sync::atomic::Ordering::Relaxed))
            && !self
                .unreconciled
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(&key)
            && !self
                .lifecycle(tenant, agent)
                .is_some_and(|l| l.descriptor["getTask"] == serde_json::Value::Bool(false))
    }

    /// Turns the origin check before a lapse task's first send on (or off) whatever the
    /// in-memory origin queue's capacity: the serverless functions keep no state between
    /// invocations, so they leave that queue off (capacity 0) and check origins with this
    /// (`[delivery] reconcile_origins` above 0). The agent's `reconcile = false` and a probe that
    /// found `GetTask` unserved still turn the check off
    /// ([`Directory::checks_origin_before_send`]).
    pub fn set_origin_checks(&self, on: bool) {
        self.origin_checks
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Follows origin tasks in the store (`Origins::origin_follow`, polled by whoever calls
    /// `Reconciler::poll_stored_due`: the serverless sweep) instead of the in-memory
    /// [`Directory::origins`], and turns reconciliation on ([`Directory::reconciles`]) without
    /// that queue. Set by the serverless functions when `[delivery] reconcile_origins` is above 0.
    pub fn set_origins_in_store(&self, on: bool) {
        self.origins_in_store
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether origin tasks are followed in the store ([`Directory::set_origins_in_store`]).
    pub fn origins_in_store(&self) -> bool {
        self.origins_in_store
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The origin tasks followed for agents that are not lifecycle-trusted.
    pub fn origins(&self) -> &OriginQueue {
        &self.origins
    }

    /// Follows the origin task `task_id` of `agent` with `GetTask` from `now` when the agent is
    /// not lifecycle-trusted and reconciliation is on (issue 11 item 5): called when the task
    /// raised expectations. Answers whether it is followed now; a full queue is logged.
    pub fn follow_origin(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
        now: Instant,
    ) -> bool {
        if !self.reconciles(tenant, agent) || self.origins_in_store() {
            return false;
        }
        match self.origins.follow_from(tenant, agent, task_id, now) {
            crate::origins::Followed::Added | crate::origins::Followed::Already => true,
            crate::origins::Followed::Full => {
                tracing::warn!(%tenant, %agent, task_id, capacity = self.origins.capacity(),
                    "origin-task reconciliation: the queue is full; this task is not followed \
                     (its origin is still checked once before any lapse task is sent)");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probed(descriptor: serde_json::Value) -> Lifecycle {
        Lifecycle::from_descriptor(descriptor, Instant::parse("2026-12-01T00:00:00Z").unwrap())
    }

    /// The origin check before sending holds for a lifecycle-trusted agent too; only turning
    /// reconciliation off, or a probe that found no `GetTask`, skips it.
    #[test]
    fn origin_checks_turn_on_without_the_in_memory_queue() {
        let d = Directory::new();
        let t = Tenant::default_tenant();
        let a = AgentId::parse("booking").unwrap();
        d.set_origin_checks(true);
        assert!(d.checks_origin_before_send(&t, &a));
        assert!(!d.origins().enabled(), "the in-memory queue stays off");
        assert!(
            !d.reconciles(&t, &a),
            "no origin is followed in one instance's memory"
        );
        d.set_reconciled(&t, &a, false);
        assert!(!d.checks_origin_before_send(&t, &a), "reconcile = false");
    }

    #[test]
    fn origins_followed_in_the_store_never_fill_the_in_memory_queue() {
        let d = Directory::new();
        let t = Tenant::default_tenant();
        let a = AgentId::parse("booking").unwrap();
        let now = Instant::parse("2026-09-10T12:00:00Z").unwrap();
        assert!(!d.reconciles(&t, &a), "off until turned on");
        d.set_origins_in_store(true);
        assert!(d.reconciles(&t, &a), "on without the in-memory queue");
        assert!(!d.follow_origin(&t, &a, "task-1", now));
        assert!(d.origins().is_empty());
    }

    #[test]
    fn origins_are_checked_before_sending_whether_trusted_or_not() {
        let d = Directory::new();
        let t = Tenant::default_tenant();
        let a = AgentId::parse("booking").unwrap();
        assert!(!d.checks_origin_before_send(&t, &a), "off until enabled");
        d.origins().set_capacity(10);
        assert!(d.checks_origin_before_send(&t, &a), "never probed");
        d.set_lifecycle(
            &t,
            &a,
            probed(
                serde_json::json!({ "protocolVersion": "1.0", "lifecycleTrusted": true,
                                       "getTask": true, "demotions": [],
                                       "cancel": { "canceled": true, "pushed": "once" } }),
            ),
        );
        assert!(d.lifecycle_trusted(&t, &a));
        assert!(
            !d.reconciles(&t, &a),
            "a trusted agent's origins are not followed"
        );
        assert!(
            d.checks_origin_before_send(&t, &a),
            "but are checked before sending"
        );
        d.set_lifecycle(
            &t,
            &a,
            probed(
                serde_json::json!({ "protocolVersion": "1.0", "lifecycleTrusted": false,
                                       "getTask": false, "demotions": ["GetTask is not served"],
                                       "cancel": { "canceled": false, "pushed": null } }),
            ),
        );
        assert!(!d.checks_origin_before_send(&t, &a), "no GetTask to ask");
        d.clear_lifecycle(&t, &a);
        d.set_reconciled(&t, &a, false);
        assert!(
            !d.checks_origin_before_send(&t, &a),
            "turned off for the agent"
        );
    }

    /// A descriptor kept before the probe had a cancel leg stays readable, and is untrusted
    /// until probed again, saying so.
    #[test]
    fn a_descriptor_kept_before_the_cancel_leg_is_read_untrusted() {
        let old = serde_json::json!({ "protocolVersion": "1.0", "lifecycleTrusted": true,
                                      "getTask": true, "demotions": [] });
        let l = probed(old.clone());
        assert_eq!(l.protocol_version, "1.0");
        assert!(!l.lifecycle_trusted);
        assert_eq!(l.demotions, [Lifecycle::NO_CANCEL_LEG]);
        assert_eq!(l.descriptor, old, "shown as it was kept");
        let new = probed(
            serde_json::json!({ "protocolVersion": "1.0", "lifecycleTrusted": true,
            "demotions": [], "cancel": { "canceled": true, "pushed": "once" } }),
        );
        assert!(new.lifecycle_trusted);
        assert!(new.demotions.is_empty());
    }
}
