//! One test per rule of expectations-v1 and semantics.md, each driven through
//! `replay::run` on a fresh `MemoryStore` and asserting the values the contracts give.

use crate::common;

use common::{
    asked, exp, key_of, lapse, lifecycle_answer, raised, s, scenario, t, CTX, FEED, SHIP, TASK, URI,
};
use serde_json::{json, Value};

fn pair(kind: &str, at: &str) -> (String, String) {
    (kind.to_owned(), at.to_owned())
}

/// `A` due 02:00 with an hour's grace (`overdue` at 03:00) and a horizon at `horizon`, raised at
/// 01:00.
fn a_with_horizon(horizon: &str) -> common::Scenario {
    raised(&[exp("A", &t("10T02:00")).grace("PT1H").horizon(horizon)])
}

mod anchoring;
mod lineage;
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
