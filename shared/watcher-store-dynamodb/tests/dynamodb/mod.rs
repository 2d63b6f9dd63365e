//! What the conformance suite does not check, on a local moto server (see `tests/common`):
//! conflicts between separate clients, commits of many subjects against the 100-write
//! transaction limit, the TTL attribute, the item size limit, and identifiers too long for a key.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use watcher_runtime::store::{
    Origins as _, Outbox as _, Records as _, TimerIndex as _, Upkeep as _,
};

use aws_sdk_dynamodb::types::{AttributeValue, TimeToLiveStatus};
use common::*;
use serde_json::json;
use watcher_core::engine::Rejection;
use watcher_core::ids::{FactKey, Source, Subject, TaskId, TaskRef, Tenant};
use watcher_core::record::{LapseEntry, LapseKind, Satisfaction, Status, Withdrawal};
use watcher_core::slice::{Scope, StatusSeen, SubjectState, TaskRecord};
use watcher_core::time::Instant;
use watcher_runtime::store::{Commit, DeliveryState, LapseQuery, OutboxEntry, StoreError};
use watcher_store_dynamodb::{
    DynamoStore, DynamoStoreError, MAX_ITEM_BYTES, MAX_TRANSACTION_ITEMS,
};

/// The stored item of `subject`, found by its `state`.
async fn raw_subject(store: &DynamoStore, subject: &Subject) -> Item {
    raw_items(store, "subject")
        .await
        .into_iter()
        .find(|item| match item.get("state") {
            Some(AttributeValue::S(state)) => {
                serde_json::from_str::<SubjectState>(state)
                    .expect("state JSON")
                    .subject
                    == *subject
            }
            _ => false,
        })
        .unwrap_or_else(|| panic!("no stored item for {subject}"))
}

fn expires_at(item: &Item) -> Option<i64> {
    match item.get("expiresAt") {
        Some(AttributeValue::N(v)) => Some(v.parse().expect("expiresAt is an integer")),
        None => None,
        other => panic!("expiresAt is not a number: {other:?}"),
    }
}

/// Epoch seconds of `t` plus the tests' retention.
fn retained_until(t: Instant) -> i64 {
    t.as_second() + i64::from(RETENTION_DAYS) * 86_400
}

fn subjects_only(states: Vec<SubjectState>) -> Commit {
    Commit::of_subjects(states)
}

async fn load_one(store: &DynamoStore, t: &Tenant, s: &Subject) -> SubjectState {
    store
        .subject(t, s)
        .await
        .expect("read the subject")
        .unwrap_or_else(|| SubjectState::new(s.clone()))
}

/// The store's own error behind a [`StoreError::Backend`].
fn dynamo_error(e: &StoreError) -> &DynamoStoreError {
    match e {
        StoreError::Backend(source) => source
            .downcast_ref::<DynamoStoreError>()
            .unwrap_or_else(|| panic!("expected a DynamoStoreError source, got {source:?}")),
        other => panic!("expected StoreError::Backend, got {other:?}"),
    }
}

fn outbox_entry(t: &Tenant, message_id: &str, delivery: DeliveryState) -> OutboxEntry {
    OutboxEntry {
        delivery,
        next_attempt_at: at(61),
        ..OutboxEntry::queued(
            t.clone(),
            agent("booking"),
            message_id.into(),
            expectation_id("exp-1"),
            LapseKind::Overdue,
            at(60),
            json!({ "message": { "messageId": message_id } }),
        )
    }
}

mod cards;
mod commits;
mod limits;
mod live_count;
mod lookups;
mod resolutions;
mod retention;
mod shards;
