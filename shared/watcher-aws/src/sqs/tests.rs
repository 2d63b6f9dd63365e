//! Unit tests of [`super`] (sqs.rs).

use std::collections::HashSet;

use proptest::prelude::*;

use super::*;

fn tenant(t: &str) -> Tenant {
    Tenant::parse(t).unwrap()
}

fn agent(a: &str) -> AgentId {
    AgentId::parse(a).unwrap()
}

fn sqs_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c.is_ascii_punctuation()
}

#[test]
fn group_ids_are_readable_and_unique() {
    let g = message_group_id(&tenant("default"), &agent("planner"));
    assert!(g.starts_with("default/planner~"), "{g}");
    assert_eq!(g.len(), "default/planner~".len() + 32);
    let ids: HashSet<String> = [
        ("default", "planner"),
        ("default", "carrier"),
        ("other", "planner"),
        ("default", "a b"),
        ("default", "a_b"),
        ("default/a", "b"),
        ("default", "a/b"),
    ]
    .into_iter()
    .map(|(t, a)| message_group_id(&tenant(t), &agent(a)))
    .collect();
    assert_eq!(ids.len(), 7);
}

#[test]
fn long_and_unicode_ids_make_valid_group_ids() {
    let long = "é".repeat(200);
    let g = message_group_id(&tenant(&long), &agent("agent with spaces"));
    assert!(g.len() <= MAX_MESSAGE_GROUP_ID_LEN, "{}", g.len());
    assert!(g.chars().all(sqs_char), "{g}");
}

fn queued(t: &str, a: &str, m: &str) -> OutboxEntry {
    OutboxEntry::queued(
        tenant(t),
        agent(a),
        m.to_owned(),
        watcher_core::ids::ExpectationId::parse("e").unwrap(),
        watcher_core::record::LapseKind::Overdue,
        watcher_core::time::Instant::parse("2030-01-01T00:00:00Z").unwrap(),
        serde_json::json!({}),
    )
}

#[test]
fn deduplication_ids_are_hex_digests_of_the_task() {
    let d = deduplication_id(&queued("default", "planner", "lapse:e:overdue:t"));
    assert_eq!(d.len(), 64);
    assert!(d.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(
        d,
        deduplication_id(&queued("default", "planner", "lapse:e:overdue:t"))
    );
    assert_ne!(
        d,
        deduplication_id(&queued("default", "planner", "lapse:e:stalled:t"))
    );
    assert_ne!(
        d,
        deduplication_id(&queued("other", "planner", "lapse:e:overdue:t"))
    );
    assert_ne!(
        d,
        deduplication_id(&queued("default", "booking", "lapse:e:overdue:t")),
        "another agent's lapse task with the same messageId is not dropped as a duplicate"
    );
}

/// A failed lapse task an operator re-queues is a new hand-over: SQS must not drop it as a
/// duplicate of its first message (sent moments before, within the five-minute window).
#[test]
fn a_requeued_lapse_task_is_not_a_duplicate_of_its_first_hand_over() {
    let first = queued("default", "planner", "lapse:e:overdue:t");
    let mut failed = first.clone();
    failed.delivery = watcher_runtime::store::DeliveryState::Failed;
    failed.attempts = 1;
    failed.last_error = Some("agent answered JSON-RPC error -32602".into());
    let at = watcher_core::time::Instant::parse("2030-01-01T00:00:03Z").unwrap();
    let requeued = watcher_runtime::operators::requeue_entry(&failed, at).unwrap();
    assert_ne!(deduplication_id(&first), deduplication_id(&requeued));
    assert_eq!(
        deduplication_id(&requeued),
        deduplication_id(&requeued.clone())
    );
}

#[test]
fn queue_messages_have_the_documented_shape() {
    let m = QueueMessage {
        tenant: tenant("acme"),
        agent: agent("planner"),
        message_id: "lapse:exp-1:overdue:2026-09-10T20:15:00Z".into(),
        entry: None,
    };
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "tenant": "acme",
            "agent": "planner",
            "messageId": "lapse:exp-1:overdue:2026-09-10T20:15:00Z"
        })
    );
    assert_eq!(parse_queue_message(&json.to_string()).unwrap(), m);
}

/// A message carries the entry as queued, in its stored JSON form, and reads back to the
/// same entry; an entry too large for a copy goes by its identity alone.
#[test]
fn queue_messages_carry_a_copy_of_a_small_entry() {
    let entry = queued(
        "acme",
        "planner",
        "lapse:exp-1:overdue:2026-09-10T20:15:00Z",
    );
    let body = body_of(&entry).unwrap();
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        json["messageId"],
        "lapse:exp-1:overdue:2026-09-10T20:15:00Z"
    );
    assert_eq!(json["entry"], serde_json::to_value(&entry).unwrap());
    let read = parse_queue_message(&body).unwrap();
    assert_eq!(read.entry.as_ref(), Some(&entry));
    assert_eq!(
        serde_json::to_string(read.entry.as_ref().unwrap()).unwrap(),
        serde_json::to_string(&entry).unwrap(),
        "the copy serializes to the stored form, byte for byte"
    );

    let mut large = entry;
    large.request = serde_json::json!({ "text": "x".repeat(ENTRY_COPY_MAX_BYTES) });
    let read = parse_queue_message(&body_of(&large).unwrap()).unwrap();
    assert_eq!(read.entry, None);
    assert_eq!(read.message_id, large.message_id);
}

/// A copy of another entry than the one the message names is ignored, never trusted.
#[test]
fn a_copy_of_another_entry_is_dropped() {
    let entry = queued("acme", "planner", "lapse:a");
    let mut json = serde_json::to_value(QueueMessage::from(&entry)).unwrap();
    json["messageId"] = "lapse:b".into();
    let read = parse_queue_message(&json.to_string()).unwrap();
    assert_eq!((read.message_id.as_str(), read.entry), ("lapse:b", None));
    let mut json = serde_json::to_value(QueueMessage::from(&entry)).unwrap();
    json["agent"] = "booking".into();
    assert_eq!(parse_queue_message(&json.to_string()).unwrap().entry, None);
}

#[test]
fn malformed_queue_messages_are_refused() {
    for bad in [
        "",
        "[]",
        r#"{"tenant":"acme","agent":"planner"}"#,
        r#"{"tenant":"","agent":"planner","messageId":"m"}"#,
        r#"{"tenant":"acme","agent":"planner","message_id":"m"}"#,
    ] {
        let e = parse_queue_message(bad).unwrap_err();
        assert!(matches!(e, MessageError::Malformed { .. }), "{bad:?}: {e}");
    }
    for bad in [
        r#"{"tenant":"acme","agent":"planner","messageId":" "}"#.to_owned(),
        format!(
            r#"{{"tenant":"acme","agent":"planner","messageId":"{}"}}"#,
            "m".repeat(MAX_MESSAGE_ID_LEN + 1)
        ),
    ] {
        let e = parse_queue_message(&bad).unwrap_err();
        assert!(matches!(e, MessageError::Invalid { .. }), "{e}");
    }
}

/// One scripted answer of a fake `SendMessageBatch`: per position `Ok`, `Err(retryable)`;
/// `None` fails the request as a whole.
type Answer = Option<Vec<(usize, Result<(), bool>)>>;

/// A fake `SendMessageBatch`: answers each position from `script` (one answer per call,
/// per position: `Ok`, `Err(true)` retryable, `Err(false)` permanent; `None` fails the
/// request as a whole), recording the positions of each call.
fn scripted(
    script: Vec<Answer>,
    calls: &std::sync::Mutex<Vec<Vec<usize>>>,
) -> impl FnMut(Vec<usize>) -> std::future::Ready<Sent> + '_ {
    let mut script = script.into_iter();
    move |positions: Vec<usize>| {
        calls.lock().unwrap().push(positions.clone());
        let answer = script.next().flatten();
        let request_failed = answer.is_none();
        let results = positions
            .iter()
            .map(|p| {
                let outcome = answer
                    .as_ref()
                    .and_then(|a| a.iter().find(|(q, _)| q == p).map(|(_, r)| *r))
                    .unwrap_or(if request_failed { Err(true) } else { Ok(()) });
                outcome.map_err(|retryable| PortError::new(retryable, format!("entry {p}"), None))
            })
            .collect();
        std::future::ready(Sent {
            results,
            request_failed,
        })
    }
}

/// SQS throttles one entry of a batch whose request succeeded: it is sent again alone after
/// a wait within the policy's first ceiling (25 ms), and taken; a permanent failure is not
/// sent again.
#[tokio::test]
async fn a_throttled_batch_entry_is_sent_again_with_backoff() {
    let sleeper = std::sync::Arc::new(watcher_runtime::retry::RecordingSleeper::new());
    let retry = Retry::with_sleeper(ENTRY_RETRY, sleeper.clone());
    let calls = std::sync::Mutex::new(Vec::new());
    let send = scripted(
        vec![
            Some(vec![(1, Err(true)), (2, Err(false))]),
            Some(vec![(1, Ok(()))]),
        ],
        &calls,
    );
    let results = with_entry_retries(3, &retry, send).await;
    assert_eq!(*calls.lock().unwrap(), vec![vec![0, 1, 2], vec![1]]);
    assert!(results[0].is_ok() && results[1].is_ok(), "{results:?}");
    assert!(matches!(results[2], Err(PortError::Permanent { .. })));
    let waits = sleeper.waits();
    assert_eq!(waits.len(), 1);
    assert!(
        waits[0] <= std::time::Duration::from_millis(25),
        "{waits:?}"
    );
}

/// An entry throttled every time is tried `ENTRY_RETRY.max_attempts` (3) times in all, the
/// waits within 25 then 50 ms, and answers its last error.
#[tokio::test]
async fn a_batch_entry_is_tried_at_most_three_times() {
    let sleeper = std::sync::Arc::new(watcher_runtime::retry::RecordingSleeper::new());
    let retry = Retry::with_sleeper(ENTRY_RETRY, sleeper.clone());
    let calls = std::sync::Mutex::new(Vec::new());
    let always = || Some(vec![(0, Err(true))]);
    let send = scripted(vec![always(), always(), always(), always()], &calls);
    let results = with_entry_retries(1, &retry, send).await;
    assert_eq!(calls.lock().unwrap().len(), 3);
    assert!(matches!(results[0], Err(PortError::Retryable { .. })));
    let waits = sleeper.waits();
    assert_eq!(waits.len(), 2);
    assert!(
        waits[0] <= std::time::Duration::from_millis(25)
            && waits[1] <= std::time::Duration::from_millis(50),
        "{waits:?}"
    );
}

/// A request that failed as a whole was retried by the SDK already (standard mode): it is
/// not sent again here.
#[tokio::test]
async fn a_request_that_failed_whole_is_not_sent_again() {
    let sleeper = std::sync::Arc::new(watcher_runtime::retry::RecordingSleeper::new());
    let retry = Retry::with_sleeper(ENTRY_RETRY, sleeper.clone());
    let calls = std::sync::Mutex::new(Vec::new());
    let send = scripted(vec![None, Some(vec![])], &calls);
    let results = with_entry_retries(2, &retry, send).await;
    assert_eq!(calls.lock().unwrap().len(), 1);
    assert!(results
        .iter()
        .all(|r| matches!(r, Err(PortError::Retryable { .. }))));
    assert!(sleeper.waits().is_empty());
}

proptest! {
    #[test]
    fn group_and_deduplication_ids_fit_sqs(
        t in "\\PC{1,120}",
        a in "\\PC{1,120}",
        m in "\\PC{1,120}",
    ) {
        prop_assume!(!t.trim().is_empty() && !a.trim().is_empty());
        let (t, a) = (tenant(&t), agent(&a));
        let g = message_group_id(&t, &a);
        prop_assert!(g.len() <= MAX_MESSAGE_GROUP_ID_LEN);
        prop_assert!(g.chars().all(sqs_char), "{}", g);
        let d = deduplication_id(&OutboxEntry::queued(
            t,
            a,
            m,
            watcher_core::ids::ExpectationId::parse("e").unwrap(),
            watcher_core::record::LapseKind::Overdue,
            watcher_core::time::Instant::parse("2030-01-01T00:00:00Z").unwrap(),
            serde_json::json!({}),
        ));
        prop_assert!(d.len() <= MAX_DEDUPLICATION_ID_LEN);
        prop_assert!(d.chars().all(sqs_char));
    }

    #[test]
    fn distinct_agents_get_distinct_groups(
        pairs in proptest::collection::hash_set(("[a b_/]{1,4}", "[a b_/]{1,4}"), 1..100)
    ) {
        let pairs: Vec<_> = pairs
            .into_iter()
            .filter(|(t, a)| !t.trim().is_empty() && !a.trim().is_empty())
            .collect();
        let ids: HashSet<String> = pairs
            .iter()
            .map(|(t, a)| message_group_id(&tenant(t), &agent(a)))
            .collect();
        prop_assert_eq!(ids.len(), pairs.len());
    }
}
