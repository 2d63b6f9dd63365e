//! What the conformance suite does not check, on a local moto server (see
//! `learnables_store_dynamodb::testing`): two writers on separate clients racing on one version,
//! the item layout, the 400 KB item limit, corrupt items, and SDK errors kept as sources.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::create_table::CreateTableError;
use aws_sdk_dynamodb::operation::get_item::GetItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use learnables::{
    history, teach, DefinitionId, DefinitionState, HistoryKind, Lesson, LessonDto, Registry,
    TenantId,
};
use learnables_store::conformance::{
    absorb_lesson, assert_both_writers_landed, definition, definition_id as triage,
    definition_with, mark_lesson, now, via, DANA,
};
use learnables_store::{DefinitionBackend, DefinitionStore, DefinitionStoreError, Swapped};
use learnables_store_dynamodb::testing::{
    client, client_as, model_faults, second_handle, store, unique_table,
};
use learnables_store_dynamodb::{create_table, DynamoDefinitionStore, MAX_ITEM_BYTES};
use serde_json::json;
use tokio::sync::Barrier;
use watcher_runtime::store::{is_permanent, unavailability_of, Unavailable};

fn acme() -> TenantId {
    learnables_store::conformance::tenant("acme")
}

/// The raw item of `prealert-triage` of `acme`.
async fn raw_item(store: &DynamoDefinitionStore) -> Option<HashMap<String, AttributeValue>> {
    store
        .client()
        .get_item()
        .table_name(store.table())
        .key("pk", AttributeValue::S("DEF#acme#prealert-triage".into()))
        .key("sk", AttributeValue::S("STATE".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("read the raw item")
        .item
}

/// Overwrites attributes of the raw item of `prealert-triage` of `acme`.
async fn tamper(store: &DynamoDefinitionStore, changes: &[(&str, AttributeValue)]) {
    let mut item = raw_item(store).await.expect("an item to tamper with");
    for (name, value) in changes {
        item.insert((*name).to_owned(), value.clone());
    }
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .expect("tamper with the item");
}

// ---------------------------------------------------------------------------------------------
// Two writers racing on one version.

/// A store handle whose first `get` waits until the other writer's first `get` has answered
/// too, so both writers load the same revision before either writes.
struct MeetAfterFirstLoad {
    inner: DynamoDefinitionStore,
    barrier: Arc<Barrier>,
    met: AtomicBool,
}

#[async_trait]
impl DefinitionBackend for MeetAfterFirstLoad {
    async fn load(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        let loaded = self.inner.load(tenant, id).await;
        if !self.met.swap(true, Ordering::SeqCst) {
            self.barrier.wait().await;
        }
        loaded
    }

    async fn insert(&self, state: &DefinitionState) -> Result<bool, DefinitionStoreError> {
        self.inner.insert(state).await
    }

    async fn swap(
        &self,
        state: &DefinitionState,
        expected_revision: u64,
    ) -> Result<Swapped, DefinitionStoreError> {
        self.inner.swap(state, expected_revision).await
    }
}

/// Two lesson writers, each with its own client (two Lambda instances), load version 1 at the
/// same moment and write through `absorb_with_retry`: one wins at once, the other's conditional
/// put fails, it reloads, re-applies its lesson on the winner's version, and both lessons land
/// as versions 2 and 3 (contract "Rules": never a lost update).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_racing_on_one_version_both_land() {
    let registry = Arc::new(Registry::builtin());
    let store = store().await;
    let v1 = definition("acme", &registry);
    store.create(&acme(), &triage(), &v1).await.expect("create");

    let barrier = Arc::new(Barrier::new(2));
    let mut writers = Vec::new();
    for (pattern, minute) in [("writer-a\\.example", 1), ("writer-b\\.example", 2)] {
        let handle = MeetAfterFirstLoad {
            inner: second_handle(&store).await,
            barrier: barrier.clone(),
            met: AtomicBool::new(false),
        };
        let registry = registry.clone();
        writers.push(tokio::spawn(async move {
            let lesson = mark_lesson(pattern);
            absorb_lesson(&handle, &acme(), &lesson, minute, &registry)
                .await
                .expect("absorbed")
        }));
    }
    let mut attempts = Vec::new();
    for writer in writers {
        let done = writer.await.expect("a writer");
        assert!(
            done.written && done.output.learned,
            "each lesson is learned"
        );
        attempts.push(done.attempts);
    }
    attempts.sort_unstable();
    assert_eq!(
        attempts,
        [1, 2],
        "one writer wins at once; the other loses once and retries on the winner's version"
    );

    let last = store
        .get(&acme(), &triage())
        .await
        .expect("get")
        .expect("stored");
    assert_both_writers_landed(&last);
    let lessons: Vec<_> = history(&last)
        .into_iter()
        .filter(|h| h.kind() == HistoryKind::Lesson)
        .collect();
    assert_eq!(lessons.len(), 2, "history has both lessons");
    assert_eq!(
        lessons
            .iter()
            .map(learnables::HistoryEntry::definition_version)
            .collect::<Vec<_>>(),
        [3, 2],
        "newest first"
    );
    assert_eq!(
        lessons[0].previous_version_id(),
        Some(lessons[1].version_id()),
        "the retried lesson builds on the winner's version"
    );
}

// ---------------------------------------------------------------------------------------------
// Layout, conflicts, limits, corruption, errors.

#[tokio::test]
async fn a_definition_is_one_item_keyed_by_tenant_and_id() {
    let registry = Registry::builtin();
    let store = store().await;
    let v1 = definition("acme", &registry);
    store.create(&acme(), &triage(), &v1).await.expect("create");

    let item = raw_item(&store).await.expect("the item");
    let mut names: Vec<&str> = item.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["pk", "revision", "sk", "state"]);
    assert_eq!(item["revision"], AttributeValue::N("1".into()));
    let AttributeValue::S(json) = &item["state"] else {
        panic!("state is a string: {:?}", item["state"]);
    };
    let stored: DefinitionState = serde_json::from_str(json).expect("the state's JSON");
    assert_eq!(stored, v1);

    let (v2, _) = teach(&v1, &mark_lesson("a\\.example"), via(), now(1), &registry).expect("a");
    let v2 = v2.expect("a change");
    store
        .replace(&acme(), &triage(), &v2, 1)
        .await
        .expect("replace");
    let item = raw_item(&store).await.expect("the item");
    assert_eq!(
        item["revision"],
        AttributeValue::N(v2.revision().to_string())
    );
}

#[tokio::test]
async fn conflicts_say_what_was_found() {
    let registry = Registry::builtin();
    let store = store().await;
    let v1 = definition("acme", &registry);
    let missing = store.replace(&acme(), &triage(), &v1, 0).await;
    match missing {
        Err(DefinitionStoreError::Conflict(m)) => {
            assert_eq!(m, "definition prealert-triage does not exist");
        }
        other => panic!("expected a conflict: {other:?}"),
    }

    store.create(&acme(), &triage(), &v1).await.expect("create");
    match store.create(&acme(), &triage(), &v1).await {
        Err(DefinitionStoreError::Conflict(m)) => {
            assert_eq!(m, "definition prealert-triage already exists");
        }
        other => panic!("expected a conflict: {other:?}"),
    }
    let (a, _) = teach(&v1, &mark_lesson("a\\.example"), via(), now(1), &registry).expect("a");
    let a = a.expect("a change");
    store.replace(&acme(), &triage(), &a, 1).await.expect("a");
    let (b, _) = teach(&v1, &mark_lesson("b\\.example"), via(), now(2), &registry).expect("b");
    let b = b.expect("a change");
    match store.replace(&acme(), &triage(), &b, 1).await {
        Err(DefinitionStoreError::Conflict(m)) => assert_eq!(
            m,
            format!(
                "definition prealert-triage is at revision {}, not 1",
                a.revision()
            )
        ),
        other => panic!("expected a conflict: {other:?}"),
    }
}

/// A column-mapping definition whose one entry holds `headers` headers of 500 characters.
fn column_mapping(headers: usize, registry: &Registry) -> DefinitionState {
    let headers: Vec<String> = (0..headers)
        .map(|i| format!("{i:05}{}", "h".repeat(495)))
        .collect();
    definition_with(
        "acme",
        &json!({ "fields": {
            "learnable": "column-mapping", "entry": "field",
            "teaches": "which field a spreadsheet column holds",
            "entries": { "amount": { "label": "Amount", "value": { "headers": headers } } }
        } }),
        registry,
    )
}

/// The size a `TooLarge` refusal of `acme/prealert-triage` reports, checking its other fields.
fn too_large(e: &DefinitionStoreError) -> usize {
    match e {
        DefinitionStoreError::TooLarge { what, bytes, limit } => {
            assert_eq!(what, "definition acme/prealert-triage");
            assert_eq!(*limit, MAX_ITEM_BYTES);
            *bytes
        }
        other => panic!("expected DefinitionStoreError::TooLarge, got {other:?}"),
    }
}

#[tokio::test]
async fn a_state_over_400_kb_is_refused_and_nothing_is_written() {
    let registry = Registry::builtin();
    let store = store().await;

    let big = column_mapping(900, &registry);
    let Err(err) = store.create(&acme(), &triage(), &big).await else {
        panic!("a state over 400 KB is refused");
    };
    let bytes = too_large(&err);
    assert!(bytes > MAX_ITEM_BYTES, "{bytes}");
    assert_eq!(
        err.to_string(),
        format!(
            "definition acme/prealert-triage would be {bytes} bytes stored, over the definition \
             store's limit of 409600 bytes; it was refused and nothing was written"
        )
    );
    assert!(raw_item(&store).await.is_none(), "nothing written");

    // Just under the limit is stored; the lesson that takes it over is refused, and the stored
    // definition stays as it was.
    let fits = column_mapping(420, &registry);
    store
        .create(&acme(), &triage(), &fits)
        .await
        .expect("a state under 400 KB");
    let lesson = Lesson::try_from(LessonDto {
        collection: "fields".into(),
        entry: "amount".into(),
        value: json!({ "header": "Total" }),
        taught_by: DANA.into(),
        reason: None,
        expires_at: None,
    })
    .expect("a lesson");
    let taught = absorb_lesson(&store, &acme(), &lesson, 1, &registry).await;
    // Matched rather than `expect_err`, whose panic would print 400 KB of state.
    // `TooLarge` is not retried: the same lesson on the same state is refused the same way.
    match taught {
        Err(learnables_store::AbsorbError::Store(e)) => assert!(too_large(&e) > MAX_ITEM_BYTES),
        Err(other) => panic!("expected a store error: {other}"),
        Ok(_) => panic!("two versions of 210 KB each do not fit one item"),
    }
    let stored = store.get(&acme(), &triage()).await.expect("get");
    assert!(stored == Some(fits), "the stored definition is unchanged");
}

#[tokio::test]
async fn a_corrupt_item_is_reported_corrupt() {
    let registry = Registry::builtin();
    let store = store().await;
    let v1 = definition("acme", &registry);
    store.create(&acme(), &triage(), &v1).await.expect("create");
    let corrupt = |r: Result<Option<DefinitionState>, DefinitionStoreError>| match r {
        Err(DefinitionStoreError::Corrupt(m)) => m,
        other => panic!("expected Corrupt, got {other:?}"),
    };

    tamper(&store, &[("revision", AttributeValue::N("7".into()))]).await;
    assert_eq!(
        corrupt(store.get(&acme(), &triage()).await),
        "definition acme/prealert-triage: the item says revision 7, its state 1"
    );

    tamper(
        &store,
        &[
            ("revision", AttributeValue::N("1".into())),
            ("state", AttributeValue::S("{\"versions\": []}".into())),
        ],
    )
    .await;
    corrupt(store.get(&acme(), &triage()).await);

    let other_tenant = definition("globex", &registry);
    tamper(
        &store,
        &[(
            "state",
            AttributeValue::S(serde_json::to_string(&other_tenant).expect("json")),
        )],
    )
    .await;
    assert_eq!(
        corrupt(store.get(&acme(), &triage()).await),
        "definition acme/prealert-triage: the item holds definition globex/prealert-triage"
    );

    tamper(&store, &[("revision", AttributeValue::S("1".into()))]).await;
    corrupt(store.get(&acme(), &triage()).await);
}

/// The SDK error a [`DefinitionStoreError::Backend`] keeps in its source chain, which must be
/// the SDK error of the operation `E` itself: the source, or the source of the mark that
/// classifies it (`BackendFailure`, `PermanentFailure`).
fn sdk_source<E: std::error::Error + Send + Sync + 'static>(
    err: &DefinitionStoreError,
) -> &SdkError<E> {
    let DefinitionStoreError::Backend(source) = err else {
        panic!("expected Backend, got {err:?}");
    };
    let first: &(dyn std::error::Error + 'static) = source.as_ref();
    std::iter::successors(Some(first), |e| e.source())
        .find_map(|e| e.downcast_ref::<SdkError<E>>())
        .unwrap_or_else(|| panic!("the SDK error itself is the source: {source:?}"))
}

#[tokio::test]
async fn sdk_errors_are_kept_as_sources() {
    let client = client().await;
    let nowhere = DynamoDefinitionStore::new(client.clone(), unique_table("definitions-test"));
    let err = nowhere
        .get(&acme(), &triage())
        .await
        .expect_err("no such table");
    assert!(
        is_permanent(&err),
        "a missing table is not a moment's: {err:?}"
    );
    assert_eq!(unavailability_of(&err), None);
    let sdk = sdk_source::<GetItemError>(&err);
    assert!(
        matches!(
            sdk.as_service_error(),
            Some(GetItemError::ResourceNotFoundException(_))
        ),
        "{sdk:?}"
    );

    let table = unique_table("definitions-test");
    create_table(&client, &table).await.expect("create");
    let again = create_table(&client, &table)
        .await
        .expect_err("the table exists");
    let sdk = sdk_source::<CreateTableError>(&again);
    assert!(
        matches!(
            sdk.as_service_error(),
            Some(CreateTableError::ResourceInUseException(_))
        ),
        "{sdk:?}"
    );
}

/// DynamoDB's refusals as the model of AWS makes them (infra/aws_model/faults.py: every call of
/// one client's access key refused, as DynamoDB answers), each classified as the watcher's store
/// classifies it: throttling (`ProvisionedThroughputExceededException`), a write to an item a
/// transaction holds (`TransactionConflictException`), a 500 and a 503 are transient, of the class
/// the HTTP answer's reason and `Retry-After` come from; the SDK error stays in the chain; and
/// nothing was written. The other tests' calls (another access key) are not refused.
#[tokio::test]
async fn refusals_are_classified_for_the_http_answer() {
    const KEY: &str = "AKIDLEARNABLESFAULTS";
    let registry = Registry::builtin();
    let store = store().await;
    let v1 = definition("acme", &registry);
    store.create(&acme(), &triage(), &v1).await.expect("create");
    let faulty = DynamoDefinitionStore::new(client_as(KEY).await, store.table());
    let (v2, _) = teach(
        &v1,
        &mark_lesson("refused\\.example"),
        via(),
        now(1),
        &registry,
    )
    .expect("a lesson that teaches");
    let v2 = v2.expect("a change");
    for (kind, want, status) in [
        ("throttle", Unavailable::Throttled, 400),
        ("conflict", Unavailable::Contended, 400),
        ("error", Unavailable::Failed, 500),
        ("unavailable", Unavailable::Failed, 503),
    ] {
        model_faults(&format!(
            r#"{{"seed": 1, "rates": {{"dynamodb": {{"{kind}": 1.0}}}},
                "operations": ["PutItem"], "callers": ["{KEY}"]}}"#
        ));
        let err = faulty
            .replace(&acme(), &triage(), &v2, 1)
            .await
            .expect_err("refused");
        model_faults("{}");
        assert_eq!(unavailability_of(&err), Some(want), "{kind}: {err:?}");
        assert!(!is_permanent(&err), "{kind}");
        let sdk = sdk_source::<PutItemError>(&err);
        assert_eq!(
            sdk.raw_response().map(|r| r.status().as_u16()),
            Some(status),
            "{kind}"
        );
        assert_eq!(
            store.get(&acme(), &triage()).await.expect("get"),
            Some(v1.clone()),
            "{kind}: nothing written"
        );
    }
    faulty
        .replace(&acme(), &triage(), &v2, 1)
        .await
        .expect("with the faults off, the same write lands");
}
