//! Withdrawal follows the lineage (expectations-v1 §8.1, §10.2, §13.6; docs/interpretation.md
//! "Withdrawal follows the lineage"): what a lapse task raises, and what a task started by a
//! request whose `referenceTaskIds` lead back to an earlier task raises, is withdrawn when a task
//! of that lineage is canceled, fails or is rejected, as far as the lineage bound.

use super::*;
use watcher_core::engine::lineage::DESCENDANTS_KEPT;

/// A pushed `Task` snapshot of `task` in [`CTX`], in `state`, whose request (a `ROLE_USER`
/// message in its history) names `refs` in `referenceTaskIds`, with one artifact raising `exps`
/// when there are any.
fn task_started_by(task: &str, state: &str, refs: &[&str], exps: &[common::Exp]) -> Value {
    let mut snapshot = json!({ "task": {
        "id": task,
        "contextId": CTX,
        "status": { "state": state },
        "history": [ {
            "messageId": format!("request-{task}"),
            "role": "ROLE_USER",
            "parts": [ { "text": "please" } ],
            "referenceTaskIds": refs,
        } ],
    } });
    if !exps.is_empty() {
        let list: Vec<Value> = exps.iter().map(common::Exp::json).collect();
        snapshot["task"]["artifacts"] = json!([ {
            "artifactId": format!("artifact-{task}"),
            "parts": [ { "text": "an artifact" } ],
            "extensions": [URI],
            "metadata": { URI: { "expectations": list } },
        } ]);
    }
    snapshot
}

/// The reason of an expectation of `task` withdrawn because `ancestor` of its lineage reached
/// `state`.
fn lineage_reason(task: &str, ancestor: &str, state: &str) -> String {
    format!(
        "task {ancestor} of the lineage of origin task {task} reached {state} (expectations-v1 §8.1)"
    )
}

/// Three generations: [`TASK`] raises A; A lapses at 02:00 and the agent handles the lapse
/// task in `task-lapse` (its request names [`TASK`], as every lapse task's does), which raises B
/// (a new expectation, not a successor); while handling it the agent starts `task-3` (its
/// request names `task-lapse`), which raises C. [`TASK`]'s cancel, pushed, withdraws B and C,
/// and C never lapses.
#[test]
fn canceling_the_original_withdraws_what_its_lapse_task_and_the_task_raised_from_it_raised() {
    let out = raised(&[exp("A", &t("10T02:00"))])
        .push_event(
            &t("10T02:10"),
            task_started_by(
                "task-lapse",
                "TASK_STATE_WORKING",
                &[TASK],
                &[exp("B", &t("10T04:00"))],
            ),
        )
        .push_event(
            &t("10T02:20"),
            task_started_by(
                "task-3",
                "TASK_STATE_WORKING",
                &["task-lapse"],
                &[exp("C", &t("10T05:00"))],
            ),
        )
        .push_unstamped_state(&t("10T03:00"), TASK, CTX, "TASK_STATE_CANCELED")
        .run();
    for (id, task) in [("B", "task-lapse"), ("C", "task-3")] {
        let rec = out.record(id);
        assert_eq!(rec["status"], "withdrawn", "{id}");
        assert_eq!(
            rec["withdrawal"],
            json!({
                "withdrawnAt": t("10T03:00"),
                "reason": lineage_reason(task, TASK, "TASK_STATE_CANCELED"),
            }),
            "{id}"
        );
    }
    assert_eq!(
        out.lapses(),
        [lapse("A", "overdue", &t("10T02:00"))],
        "no lapse task for the grandchild's expectation"
    );
}

/// The same, with the original's end found failed in a `Task` snapshot (as reconciliation's
/// `GetTask` answer is ingested): the grandchild's expectation is withdrawn.
#[test]
fn a_failure_found_in_a_snapshot_withdraws_the_grandchilds_expectation() {
    let out = raised(&[exp("A", &t("10T06:00"))])
        .push_event(
            &t("10T01:10"),
            task_started_by("task-2", "TASK_STATE_COMPLETED", &[TASK], &[]),
        )
        .push_event(
            &t("10T01:20"),
            task_started_by(
                "task-3",
                "TASK_STATE_WORKING",
                &["task-2"],
                &[exp("C", &t("10T05:00"))],
            ),
        )
        .push_event(
            &t("10T02:00"),
            task_started_by(TASK, "TASK_STATE_FAILED", &[], &[]),
        )
        .run();
    assert_eq!(out.record("A")["status"], "withdrawn");
    assert_eq!(
        out.record("C")["withdrawal"]["reason"],
        lineage_reason("task-3", TASK, "TASK_STATE_FAILED")
    );
    assert_eq!(out.lapses(), []);
}

/// What a task raises after a task of its lineage ended is recorded and withdrawn at once, as a
/// late artifact of an ended task is (semantics.md "Supersession, withdrawal, lineage"); so is
/// what it raised before it was linked to an ancestor that had ended.
#[test]
fn what_a_descendant_raises_after_its_ancestor_ended_is_withdrawn_at_once() {
    let out = raised(&[exp("A", &t("10T06:00"))])
        .push_unstamped_state(&t("10T01:30"), TASK, CTX, "TASK_STATE_REJECTED")
        .push_event(
            &t("10T02:00"),
            task_started_by("task-2", "TASK_STATE_WORKING", &[TASK], &[]),
        )
        .push_event(
            &t("10T02:30"),
            task_started_by(
                "task-3",
                "TASK_STATE_WORKING",
                &["task-2"],
                &[exp("C", &t("10T05:00"))],
            ),
        )
        .run();
    let c = out.record("C");
    assert_eq!(c["status"], "withdrawn");
    assert_eq!(c["withdrawal"]["withdrawnAt"], t("10T02:30"));
    assert_eq!(
        c["withdrawal"]["reason"],
        lineage_reason("task-3", TASK, "TASK_STATE_REJECTED")
    );
    // Linked only after it raised: withdrawn when the link arrives.
    let late = raised(&[exp("A", &t("10T06:00"))])
        .push_unstamped_state(&t("10T01:30"), TASK, CTX, "TASK_STATE_CANCELED")
        .push_event(
            &t("10T02:00"),
            task_started_by(
                "task-3",
                "TASK_STATE_WORKING",
                &["task-2"],
                &[exp("C", &t("10T05:00"))],
            ),
        )
        .push_event(
            &t("10T02:30"),
            task_started_by("task-2", "TASK_STATE_WORKING", &[TASK], &[]),
        )
        .run();
    assert_eq!(late.record("C")["status"], "withdrawn");
    assert_eq!(late.record("C")["withdrawal"]["withdrawnAt"], t("10T02:30"));
    assert_eq!(late.lapses(), []);
}

/// A link learnt after the tasks below it were linked reaches them: `task-3` (below `task-2`)
/// raised C before `task-2` was known to descend from [`TASK`]; [`TASK`]'s cancel withdraws C.
#[test]
fn a_link_learnt_late_reaches_the_tasks_already_below() {
    let out = raised(&[exp("A", &t("10T06:00"))])
        .push_event(
            &t("10T01:10"),
            task_started_by(
                "task-3",
                "TASK_STATE_WORKING",
                &["task-2"],
                &[exp("C", &t("10T05:00"))],
            ),
        )
        .push_event(
            &t("10T01:20"),
            task_started_by("task-2", "TASK_STATE_WORKING", &[TASK], &[]),
        )
        .push_unstamped_state(&t("10T02:00"), TASK, CTX, "TASK_STATE_CANCELED")
        .run();
    assert_eq!(
        out.record("C")["withdrawal"]["reason"],
        lineage_reason("task-3", TASK, "TASK_STATE_CANCELED")
    );
}

/// The lineage is followed `lineageBound + 1` tasks up (expectations-v1 §10.3 bounds lineage):
/// with a bound of 1, `g3` (whose lineage is `g2`, `g1`) is out of [`TASK`]'s reach, `g2` (whose
/// lineage is `g1`, [`TASK`]) is not. A completed ancestor withdraws nothing.
#[test]
fn the_lineage_is_followed_as_far_as_the_bound() {
    let chain = |end: &str| {
        raised(&[exp("A", &t("10T06:00"))])
            .settings(json!({ "lineageBound": 1 }))
            .push_event(
                &t("10T01:10"),
                task_started_by("g1", "TASK_STATE_WORKING", &[TASK], &[]),
            )
            .push_event(
                &t("10T01:20"),
                task_started_by(
                    "g2",
                    "TASK_STATE_WORKING",
                    &["g1"],
                    &[exp("B", &t("10T05:00"))],
                ),
            )
            .push_event(
                &t("10T01:30"),
                task_started_by(
                    "g3",
                    "TASK_STATE_WORKING",
                    &["g2"],
                    &[exp("C", &t("10T05:00"))],
                ),
            )
            .push_unstamped_state(&t("10T02:00"), TASK, CTX, end)
            .run()
    };
    let out = chain("TASK_STATE_CANCELED");
    assert_eq!(out.record("B")["status"], "withdrawn");
    assert_eq!(
        out.record("C")["status"],
        "open",
        "beyond the bound: three tasks up with a bound of 1"
    );
    let done = chain("TASK_STATE_COMPLETED");
    assert_eq!(done.record("B")["status"], "open");
    assert_eq!(done.record("C")["status"], "open");
}

/// Two tasks naming each other: the second link would close a cycle and is not recorded; the
/// first stands.
#[test]
fn a_link_that_would_close_a_cycle_is_not_recorded() {
    let out = scenario()
        .push_event(
            &t("10T01:00"),
            task_started_by(
                "task-a",
                "TASK_STATE_WORKING",
                &["task-b"],
                &[exp("A", &t("10T05:00"))],
            ),
        )
        .push_event(
            &t("10T01:10"),
            task_started_by(
                "task-b",
                "TASK_STATE_WORKING",
                &["task-a"],
                &[exp("B", &t("10T05:00"))],
            ),
        )
        .push_unstamped_state(&t("10T02:00"), "task-a", CTX, "TASK_STATE_CANCELED")
        .run();
    assert_eq!(out.record("A")["status"], "withdrawn");
    assert_eq!(
        out.record("B")["status"],
        "open",
        "task-b is not below task-a"
    );
    let out = scenario()
        .push_event(
            &t("10T01:00"),
            task_started_by(
                "task-a",
                "TASK_STATE_WORKING",
                &["task-b"],
                &[exp("A", &t("10T05:00"))],
            ),
        )
        .push_unstamped_state(&t("10T02:00"), "task-b", CTX, "TASK_STATE_FAILED")
        .run();
    assert_eq!(
        out.record("A")["withdrawal"]["reason"],
        lineage_reason("task-a", "task-b", "TASK_STATE_FAILED")
    );
}

/// Past the list of descendants a task record keeps ([`DESCENDANTS_KEPT`]): [`TASK`]'s cancel
/// does not write the record of `past`, linked after the list was full, so what `past` raised
/// before the cancel stays open until it would lapse, and is withdrawn then instead, naming
/// [`TASK`] (docs/interpretation.md "Withdrawal follows the lineage"): C at its deadline, Y when
/// the fact satisfying X (whose `after` names Y) would lapse it `skipped`. No lapse task for
/// either; X itself, open when its fact came, is satisfied.
#[test]
fn what_a_descendant_past_the_list_raised_is_withdrawn_when_it_would_lapse() {
    let mut listed = raised(&[exp("A", &t("10T06:00"))]);
    for i in 0..DESCENDANTS_KEPT {
        listed = listed.push_event(
            &t(&format!("10T01:{:02}:{:02}", 10 + i / 60, i % 60)),
            task_started_by(&format!("d-{i:02}"), "TASK_STATE_WORKING", &[TASK], &[]),
        );
    }
    let out = listed
        .push_event(
            &t("10T01:50"),
            task_started_by(
                "past",
                "TASK_STATE_WORKING",
                &[TASK],
                &[
                    exp("C", &t("10T05:00")),
                    exp("Y", &t("10T08:00")),
                    exp("X", &t("10T08:00")).after(&["Y"]),
                ],
            ),
        )
        .push_unstamped_state(&t("10T03:00"), TASK, CTX, "TASK_STATE_CANCELED")
        .report(&t("10T04:00"), "X", &t("10T04:00"))
        .run();
    assert_eq!(out.record("A")["status"], "withdrawn");
    for (id, at) in [("C", "10T05:00"), ("Y", "10T04:00")] {
        assert_eq!(
            out.record(id)["withdrawal"],
            json!({
                "withdrawnAt": t(at),
                "reason": lineage_reason("past", TASK, "TASK_STATE_CANCELED"),
            }),
            "{id}"
        );
    }
    assert_eq!(out.record("X")["status"], "satisfied");
    assert_eq!(out.lapses(), []);
}
