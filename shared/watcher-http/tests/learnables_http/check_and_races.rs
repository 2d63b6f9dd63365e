//! `lessons:check` (learnables-v1 §13.1), racing writers, and a definition too large for its store.

use super::*;

#[tokio::test]
async fn lessons_check_reports_the_over_broad_pa_2026_lesson() {
    let app = memory_app();
    create_definition(&app).await;
    let corpus: Vec<Value> = ["PA-2026-0901", "PA-2026-0902", "PA-2025-0001"]
        .iter()
        .map(|r| json!({ "from": "ops@forwarder.example", "subject": format!("Pre-alert {r}") }))
        .collect();
    let broad = json!({
        "collection": "customers", "entry": "alhamra",
        "value": { "pattern": "PA-2026", "where": "subject" }, "taughtBy": DANA
    });
    let report = post(
        &app,
        &format!("{DEF}/lessons:check"),
        TEACHER,
        json!({ "lesson": broad, "corpus": corpus }),
    )
    .await;
    assert_eq!(report.content_type, "application/json");
    assert_eq!(
        report.ok(),
        &json!({ "matches": 2, "changes": [
            { "input": 0, "from": null, "to": "alhamra" },
            { "input": 1, "from": null, "to": "alhamra" }
        ] })
    );
    assert_eq!(active_version(&app).await, 1, "check writes nothing");
    assert_eq!(history(&app, DEF, TEACHER).await.len(), 1);

    // The colon is a literal: `lessons:check` is its own route, not `lessons` nor a capture.
    let plain = post(&app, &format!("{DEF}/lessons:other"), TEACHER, json!({})).await;
    assert_eq!(plain.status, StatusCode::NOT_FOUND);
    let refused = post(
        &app,
        &format!("{DEF}/lessons:check"),
        TEACHER,
        json!({ "lesson": lesson("alhamra", "(", DANA), "corpus": [] }),
    )
    .await;
    refused.problem(StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn two_lessons_posted_at_once_both_land() {
    let store = Arc::new(SqliteDefinitionStore::memory().expect("an in-memory database"));
    let app = app(store);
    create_definition(&app).await;
    let uri = format!("{DEF}/lessons");
    let (a, b) = tokio::join!(
        post(
            &app,
            &uri,
            TEACHER,
            lesson("northgate", "a@origin\\.example", DANA)
        ),
        post(
            &app,
            &uri,
            TEACHER,
            lesson("alhamra", "b@origin\\.example", DANA)
        ),
    );
    assert_eq!(a.ok()["learned"], json!(true));
    assert_eq!(b.ok()["learned"], json!(true));
    assert_eq!(active_version(&app).await, 3);
    for (from, winner) in [
        ("a@origin.example", "northgate"),
        ("b@origin.example", "alhamra"),
    ] {
        let read = show_back_of(&app, DEF, TEACHER, json!({ "from": from })).await;
        assert_eq!(read.ok()["customer"]["winner"], json!(winner));
    }
}

/// A memory store with a size limit: it refuses, as DynamoDB's store does past 400 KB, any state
/// whose JSON is longer than `limit` bytes.
struct Limited {
    inner: MemoryDefinitionStore,
    limit: usize,
}

impl Limited {
    fn check(&self, state: &DefinitionState) -> Result<(), DefinitionStoreError> {
        let bytes = serde_json::to_string(state)
            .expect("a state serializes")
            .len();
        if bytes > self.limit {
            return Err(DefinitionStoreError::TooLarge {
                what: format!("definition {}/{}", state.tenant(), state.id()),
                bytes,
                limit: self.limit,
            });
        }
        Ok(())
    }
}

#[async_trait]
impl DefinitionBackend for Limited {
    async fn load(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        self.inner.load(tenant, id).await
    }

    async fn insert(&self, state: &DefinitionState) -> Result<bool, DefinitionStoreError> {
        self.check(state)?;
        self.inner.insert(state).await
    }

    async fn swap(
        &self,
        state: &DefinitionState,
        expected_revision: u64,
    ) -> Result<Swapped, DefinitionStoreError> {
        self.check(state)?;
        self.inner.swap(state, expected_revision).await
    }
}

/// A write that would take a definition over its store's limit is a 413 problem naming the
/// definition, its size and the limit, and saying nothing was written: a lesson leaves the
/// active version and the history as they were (and is refused the same way again), and a `PUT`
/// creates nothing.
#[tokio::test]
async fn a_definition_too_large_for_its_store_is_413_and_nothing_changes() {
    // Version 1 is stored; a second version (a lesson keeps every version whole) will not fit.
    let inner = MemoryDefinitionStore::new();
    let v1 = create_definition(&app(Arc::new(inner.clone()))).await;
    let tenant = TenantId::parse("acme-logistics").expect("a tenant");
    let id = DefinitionId::parse("prealert-triage").expect("an id");
    let stored = inner.get(&tenant, &id).await.expect("get").expect("stored");
    let limit = serde_json::to_string(&stored).expect("serializes").len() + 100;
    let app = app(Arc::new(Limited { inner, limit }));

    for _ in 0..2 {
        let refused = teach(&app, TEACHER, billing_lesson()).await;
        too_large(&refused, "prealert-triage", limit);
    }
    assert_unchanged(&app, DEF, TEACHER, &v1).await;
    get(&app, &format!("{DEF}/versions/2"), TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);

    let mut bigger = customers();
    bigger["customers"]["entries"]["northgate"]["label"] = json!("N".repeat(200));
    let put = put_definition(&app, "/v1/definitions/another", TEACHER, bigger).await;
    too_large(&put, "another", limit);
    get(&app, "/v1/definitions/another", TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);
}
