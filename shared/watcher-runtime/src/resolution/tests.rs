//! The resolution rules, one reason at a time, and the first resolution staying.

use super::*;
use crate::store::OutboxEntry;
use serde_json::json;
use watcher_core::expectation::Expectation;
use watcher_core::ids::{ExpectationRef, FactKey, Source, TaskId, Tenant};
use watcher_core::record::{
    AnchorState, LapseEntry, LapseKind, RaiseOrder, RaisedBy, Satisfaction, Status, Withdrawal,
};

fn at(text: &str) -> Instant {
    Instant::parse(text).expect("a valid instant")
}

const DUE: &str = "2026-12-01T08:00:00Z";
const LAPSED: &str = "2026-12-01T08:05:00Z";
const FACT: &str = "2026-12-01T09:30:00Z";
const NOW: &str = "2026-12-01T10:00:00Z";

fn agent() -> AgentId {
    AgentId::parse("booking".to_owned()).expect("a valid agent")
}

fn id(text: &str) -> ExpectationId {
    ExpectationId::parse(text.to_owned()).expect("a valid expectation id")
}

/// A record of `exp-1` (shipment s-1, due at [`DUE`]) that lapsed `overdue` at [`LAPSED`].
fn lapsed_record() -> ExpectationRecord {
    let e = Expectation::from_json(&json!({
        "expectationId": "exp-1",
        "kind": "shipment.delivery",
        "subject": { "type": "shipment", "id": "s-1" },
        "expects": "delivered",
        "satisfiedBy": { "factKey": "shipment.delivered" },
        "dueAt": DUE,
        "basis": "observed",
    }))
    .expect("a valid expectation");
    ExpectationRecord {
        due_at: e.due_at,
        expectation: e,
        agent: agent(),
        tenant: Tenant::default_tenant(),
        status: Status::Open,
        lineage: 0,
        raised_at: at("2026-12-01T07:00:00Z"),
        raised_by: RaisedBy {
            task_id: TaskId::parse("task-1").expect("a valid task id"),
            context_id: None,
            lineage: Vec::new(),
            trace: None,
        },
        satisfaction: None,
        lapses: vec![LapseEntry {
            lapse: LapseKind::Overdue,
            lapsed_at: at(LAPSED),
            message_id: message_id(),
            due_at: at(DUE),
        }],
        withdrawal: None,
        superseded_by: None,
        order: RaiseOrder { input: 1, index: 0 },
        anchor_state: AnchorState::Unanchored,
        horizon_checked: false,
        question_at: None,
        question_timestamp: None,
        question_answered: false,
    }
}

fn message_id() -> String {
    watcher_core::lapse::message_id(&id("exp-1"), LapseKind::Overdue, at(DUE))
}

fn key() -> ExpectationRef {
    ExpectationRef {
        agent: agent(),
        id: id("exp-1"),
    }
}

fn entry() -> OutboxEntry {
    OutboxEntry::queued(
        Tenant::default_tenant(),
        agent(),
        message_id(),
        id("exp-1"),
        LapseKind::Overdue,
        at(LAPSED),
        json!({}),
    )
}

#[test]
fn a_late_fact_resolves_every_lapse_at_its_receipt() {
    let mut record = lapsed_record();
    record.satisfaction = Some(Satisfaction {
        fact_key: FactKey::parse("shipment.delivered").expect("a valid key"),
        source: Source::parse("carrier-feed:test").expect("a valid source"),
        satisfied_at: at(FACT),
        observed_at: at(FACT),
        claimed_observed_at: None,
        late: true,
    });
    let effect = Effect::Satisfied {
        expectation: key(),
        late: true,
    };
    let found = resolution_of(&effect, &record, at(NOW));
    assert_eq!(
        found,
        vec![(
            "lapse:exp-1:overdue:2026-12-01T08:00:00Z".to_owned(),
            Resolution {
                at: at(FACT),
                reason: ResolutionReason::Fact
            }
        )],
        "the lapse task's messageId, at the fact's receipt, not the step's clock"
    );
}

#[test]
fn a_withdrawal_resolves_with_its_reason_and_a_supersession_names_the_successor() {
    let mut record = lapsed_record();
    record.withdrawal = Some(Withdrawal {
        withdrawn_at: at(FACT),
        reason: "origin task canceled".into(),
    });
    let effect = Effect::Withdrawn {
        expectation: key(),
        reason: "origin task canceled".into(),
    };
    let found = resolution_of(&effect, &record, at(NOW));
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].1,
        Resolution {
            at: at(FACT),
            reason: ResolutionReason::Withdrawn {
                detail: "origin task canceled".into()
            }
        }
    );
    record.superseded_by = Some(id("exp-2"));
    let found = resolution_of(&effect, &record, at(NOW));
    assert_eq!(
        found[0].1.reason,
        ResolutionReason::Superseded { by: id("exp-2") }
    );
}

#[test]
fn nothing_resolves_without_a_lapse_or_for_another_expectation() {
    let effect = Effect::Satisfied {
        expectation: key(),
        late: false,
    };
    let mut record = lapsed_record();
    record.lapses.clear();
    assert!(resolution_of(&effect, &record, at(NOW)).is_empty());
    let other = Effect::Satisfied {
        expectation: ExpectationRef {
            agent: agent(),
            id: id("exp-9"),
        },
        late: true,
    };
    assert!(resolution_of(&other, &lapsed_record(), at(NOW)).is_empty());
    let raised = Effect::Duplicate { expectation: key() };
    assert!(resolution_of(&raised, &lapsed_record(), at(NOW)).is_empty());
}

#[test]
fn a_completed_task_resolves_and_other_terminal_states_do_not() {
    let mut e = entry();
    e.task_state = Some("TASK_STATE_FAILED".into());
    assert!(!resolve_by_task(&mut e, at(NOW)));
    assert_eq!(
        e.resolved, None,
        "a failed lapse task leaves the lapse open"
    );
    e.task_state = Some("TASK_STATE_COMPLETED".into());
    assert!(resolve_by_task(&mut e, at(NOW)));
    assert_eq!(
        e.resolved,
        Some(Resolution {
            at: at(NOW),
            reason: ResolutionReason::Task {
                state: "TASK_STATE_COMPLETED".into()
            }
        })
    );
}

#[test]
fn an_agents_resolve_on_chooses_the_resolving_states_and_its_json_stays_out_when_default() {
    // `[[agents]] resolve_on = ["TASK_STATE_FAILED", "TASK_STATE_CANCELED"]`, kept on the entry.
    let mut e = entry();
    e.resolve_on = Some(vec![TaskState::Failed, TaskState::Canceled]);
    e.task_state = Some("TASK_STATE_COMPLETED".into());
    assert!(
        !resolve_by_task(&mut e, at(NOW)),
        "COMPLETED is not among the agent's states"
    );
    e.task_state = Some("TASK_STATE_CANCELED".into());
    assert!(resolve_by_task(&mut e, at(NOW)));
    assert_eq!(
        e.resolved.map(|r| r.reason),
        Some(ResolutionReason::Task {
            state: "TASK_STATE_CANCELED".into()
        })
    );
    let v = serde_json::to_value(e.resolve_on.as_ref()).expect("serialises");
    assert_eq!(
        v,
        serde_json::json!(["TASK_STATE_FAILED", "TASK_STATE_CANCELED"])
    );
    // `resolve_on = []`: no state resolves.
    let mut never = entry();
    never.resolve_on = Some(Vec::new());
    never.task_state = Some("TASK_STATE_COMPLETED".into());
    assert!(!resolve_by_task(&mut never, at(NOW)));
    assert_eq!(never.resolved, None);
    // The default (absent) is not written, so entries of earlier versions read the same.
    let json = serde_json::to_value(entry()).expect("serialises");
    assert!(json.get("resolveOn").is_none(), "{json}");
}

#[test]
fn an_acknowledgement_names_who_and_refuses_no_one() {
    let done = acknowledge(&entry(), "ops@example.com", at(NOW))
        .expect("a valid who")
        .expect("a change");
    assert_eq!(
        done.resolved,
        Some(Resolution {
            at: at(NOW),
            reason: ResolutionReason::Acknowledged {
                by: "ops@example.com".into()
            }
        })
    );
    assert_eq!(
        acknowledge(&entry(), "  ", at(NOW)).unwrap_err(),
        "must name who acknowledges it (1 to 256 characters); it is empty"
    );
    let long = "x".repeat(MAX_WHO_CHARS + 1);
    assert!(acknowledge(&entry(), &long, at(NOW))
        .unwrap_err()
        .contains("257 characters"));
}

#[test]
fn the_first_resolution_stays() {
    let first = Resolution {
        at: at(FACT),
        reason: ResolutionReason::Fact,
    };
    let mut e = entry();
    assert!(resolve(&mut e, first.clone()));
    let later = Resolution {
        at: at(NOW),
        reason: ResolutionReason::Withdrawn {
            detail: "withdrawn".into(),
        },
    };
    assert!(
        !resolve(&mut e, later.clone()),
        "a second reason changes nothing"
    );
    assert_eq!(e.resolved.as_ref(), Some(&first));
    assert_eq!(resolved(&e, &later), None);
    assert_eq!(
        acknowledge(&e, "ops", at(NOW)).expect("a valid who"),
        None,
        "acknowledging a resolved lapse changes nothing"
    );
    e.task_state = Some("TASK_STATE_COMPLETED".into());
    assert!(!resolve_by_task(&mut e, at(NOW)));
    // A writer that read the entry before it was resolved does not unresolve it, nor replace
    // the first reason with its own.
    let mut stale = entry();
    keep_resolution(&mut stale, &e);
    assert_eq!(stale.resolved.as_ref(), Some(&first));
    let mut other = entry();
    other.resolved = Some(later);
    keep_resolution(&mut other, &e);
    assert_eq!(other.resolved.as_ref(), Some(&first));
}

#[test]
fn the_json_names_the_reason_beside_the_instant_and_old_entries_read() {
    let r = Resolution {
        at: at(FACT),
        reason: ResolutionReason::Task {
            state: "TASK_STATE_COMPLETED".into(),
        },
    };
    let v = serde_json::to_value(&r).expect("serialises");
    assert_eq!(
        v,
        json!({ "at": FACT, "reason": "task", "state": "TASK_STATE_COMPLETED" })
    );
    assert_eq!(
        serde_json::from_value::<Resolution>(v).expect("reads back"),
        r
    );
    let plain = serde_json::to_value(entry()).expect("serialises");
    assert!(
        plain.get("resolved").is_none(),
        "skipped while unresolved: {plain}"
    );
    let old: OutboxEntry = serde_json::from_value(plain).expect("an entry without it reads");
    assert_eq!(old.resolved, None);
    let mut e = entry();
    e.resolved = Some(Resolution {
        at: at(NOW),
        reason: ResolutionReason::Superseded { by: id("exp-2") },
    });
    let v = serde_json::to_value(&e).expect("serialises");
    assert_eq!(
        v["resolved"],
        json!({ "at": NOW, "reason": "superseded", "by": "exp-2" })
    );
    assert_eq!(ResolutionReason::Fact.as_str(), "fact");
}
