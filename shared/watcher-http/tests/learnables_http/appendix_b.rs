//! Appendix B of learnables-v1 over HTTP, on memory and on SQLite.

use super::*;

async fn appendix_b(app: Router) {
    // 1. The definition exists at version 1; its descriptors are ready for the card.
    let (v1, v1_id) = version_1(&app).await;
    let again = put_definition(&app, DEF, TEACHER, customers()).await;
    again.problem(StatusCode::CONFLICT);

    assert_builtin_learnables(&app).await;
    let descriptors = get(&app, &format!("{DEF}/descriptors"), TEACHER).await;
    let d = &descriptors.ok()["learnables"][0];
    assert_eq!(d["collection"], json!("customers"));
    assert_eq!(d["entry"], json!("customer"));
    assert_eq!(d["decidedBy"], json!("rules"));
    assert_eq!(d["lessonFields"][0]["name"], json!("pattern"));
    assert_eq!(d["lessonFields"][1]["name"], json!("where"));

    // 2. A message from billing@origin.example: no mark matches.
    let before = cannot_tell_yet(&app).await;

    // 4-5. Dana teaches through the teacher console; a new version is published.
    let v2_id = dana_teaches(&app, &v1_id).await;

    // 6. Show-back displays the effect, for the teacher and for an operator.
    reads_northgate(&app).await;

    // The history carries the lesson with its author, credential and reason, newest first.
    let h = history(&app, DEF, OPERATOR).await;
    assert_eq!(h.len(), 2);
    assert_eq!(h[0]["kind"], json!("lesson"));
    assert_eq!(h[0]["definitionVersion"], json!(2));
    assert_eq!(h[0]["versionId"], json!(v2_id));
    assert_eq!(h[0]["previousVersionId"], json!(v1_id));
    assert_eq!(h[0]["taughtBy"], json!(DANA));
    assert_eq!(h[0]["via"], json!("teacher-console"));
    assert_eq!(h[0]["reason"], json!(REASON));
    assert_eq!(
        h[0]["describes"],
        json!("matches 'billing@origin\\.example' in the from")
    );
    assert_eq!(h[0]["at"], json!("2026-08-17T09:00:00Z"));
    assert_eq!(h[1]["kind"], json!("created"));
    assert_eq!(h[1]["reason"], json!("first cut"));

    // 7. Pinning: version 1 still reads exactly as it did; the active one is 2.
    let pinned = get(&app, &format!("{DEF}/versions/1"), OPERATOR).await;
    assert_eq!(pinned.ok(), &v1);
    assert_eq!(active_version(&app).await, 2);
    let pinned_read = post(
        &app,
        &format!("{DEF}/show-back"),
        TEACHER,
        json!({ "input": billing_message(), "definitionVersion": 1 }),
    )
    .await;
    assert_eq!(pinned_read.ok(), &before);

    // §10.2: the same lesson again learns nothing, makes no version, is not an error.
    the_same_lesson_learns_nothing(&app, &v2_id).await;
    assert_eq!(history(&app, DEF, TEACHER).await.len(), 2);
    let missing = get(&app, &format!("{DEF}/versions/3"), TEACHER).await;
    missing.problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn appendix_b_over_http() {
    appendix_b(memory_app()).await;
}

#[tokio::test]
async fn appendix_b_over_http_on_sqlite() {
    let store = SqliteDefinitionStore::memory().expect("an in-memory database");
    appendix_b(app(Arc::new(store))).await;
}
