//! Appendix B of learnables-v1 over HTTP, on memory and on SQLite.

use super::*;

async fn appendix_b(app: Router) {
    // 1. The definition exists at version 1; its descriptors are ready for the card.
    let v1 = create_definition(&app).await;
    assert_eq!(v1["definitionVersion"], json!(1));
    let v1_id = v1["versionId"].as_str().expect("a versionId").to_owned();
    assert!(v1_id.starts_with("sha256:"), "{v1_id}");
    let again = call(
        &app,
        "PUT",
        DEF,
        TEACHER,
        Some(json!({ "collections": customers(), "taughtBy": DANA })),
    )
    .await;
    again.problem(StatusCode::CONFLICT);

    let learnables = get(&app, "/v1/learnables", OPERATOR).await;
    let names: Vec<&str> = learnables.ok()["learnables"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert_eq!(names, ["marks", "column-mapping"]);
    let descriptors = get(&app, &format!("{DEF}/descriptors"), TEACHER).await;
    let d = &descriptors.ok()["learnables"][0];
    assert_eq!(d["collection"], json!("customers"));
    assert_eq!(d["entry"], json!("customer"));
    assert_eq!(d["decidedBy"], json!("rules"));
    assert_eq!(d["lessonFields"][0]["name"], json!("pattern"));
    assert_eq!(d["lessonFields"][1]["name"], json!("where"));

    // 2. A message from billing@origin.example: no mark matches.
    let before = show_back(&app, TEACHER).await;
    assert_eq!(before["customer"]["settled"], json!(false));
    assert_eq!(
        before["customer"]["reads"],
        json!("Still cannot tell whose this is.")
    );

    // 4-5. Dana teaches through the teacher console; a new version is published.
    let taught = post(&app, &format!("{DEF}/lessons"), TEACHER, billing_lesson()).await;
    let result = taught.ok();
    assert_eq!(result["learned"], json!(true));
    assert_eq!(
        result["describes"],
        json!("matches 'billing@origin\\.example' in the from")
    );
    assert_eq!(result["definitionVersion"], json!(2));
    assert_eq!(result["previousVersionId"], json!(v1_id));
    let v2_id = result["versionId"]
        .as_str()
        .expect("a versionId")
        .to_owned();
    assert_ne!(v2_id, v1_id);

    // 6. Show-back displays the effect, for the teacher and for an operator.
    for token in [TEACHER, OPERATOR] {
        let after = show_back(&app, token).await;
        assert_eq!(after["customer"]["settled"], json!(true));
        assert_eq!(after["customer"]["winner"], json!("northgate"));
        assert_eq!(
            after["customer"]["reads"],
            json!("Reads as Northgate Motors Ltd, on billing@origin.example")
        );
    }

    // The history carries the lesson with its author, credential and reason, newest first.
    let history = get(&app, &format!("{DEF}/history"), OPERATOR).await;
    let h = history.ok()["history"].as_array().expect("a list").clone();
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
    let same = post(&app, &format!("{DEF}/lessons"), TEACHER, billing_lesson()).await;
    let same = same.ok();
    assert_eq!(same["learned"], json!(false));
    assert_eq!(same["definitionVersion"], json!(2));
    assert_eq!(same["versionId"], json!(v2_id));
    assert!(same.get("previousVersionId").is_none(), "{same}");
    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    assert_eq!(history.ok()["history"].as_array().map(Vec::len), Some(2));
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
