//! One test per rule of expectations-v1 and semantics.md, each driven through
//! `replay::run` on a fresh `MemoryStore` and asserting the values the contracts give.

use crate::common;

use common::{exp, key_of, lapse, question_of, raised, s, scenario, t, CTX, FEED, SHIP, TASK, URI};
use serde_json::{json, Value};

fn pair(kind: &str, at: &str) -> (String, String) {
    (kind.to_string(), at.to_string())
}

fn asked() -> common::Scenario {
    scenario().push_question(&t("10T01:00"), "task-q", CTX, &[question_of("task-q")])
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
