//! One test per rule of expectations-v1 and semantics.md, each driven through
//! `replay::run` on a fresh `MemoryStore` and asserting the values the contracts give.

use crate::common;

use common::{exp, key_of, question_metadata, s, scenario, t, URI};
use serde_json::{json, Value};

const TASK: &str = "task-1";
const CTX: &str = "ctx-1";
const FEED: &str = "carrier-feed:test";
const SHIP: Option<(&str, &str)> = Some(("shipment", "PA-1"));

fn lapse(id: &str, kind: &str, at: &str) -> (String, String, String) {
    (id.to_string(), kind.to_string(), at.to_string())
}

fn pair(kind: &str, at: &str) -> (String, String) {
    (kind.to_string(), at.to_string())
}

fn question() -> common::Exp {
    exp("Q", &t("10T04:00"))
        .kind("question.answer")
        .subject("task", "task-q")
        .key("task.answered:task-q")
        .grace("PT1H")
        .set("basis", json!("declared"))
}

fn asked() -> common::Scenario {
    scenario().push_status(
        &t("10T01:00"),
        "task-q",
        CTX,
        "TASK_STATE_INPUT_REQUIRED",
        Some(&t("10T01:00")),
        Some(question_metadata(&[question()])),
    )
}

mod anchoring;
mod more;
mod questions;
mod raising;
mod refusals;
mod skipped;
mod stalled;
mod supersession;
mod tenancy_and_order;
mod time;
mod withdrawal;
