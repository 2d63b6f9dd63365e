//! Undo and tombstones (learnables-v1 §10.3, §14).

use super::*;

#[tokio::test]
async fn activating_version_1_undoes_the_lesson() {
    let app = memory_app();
    let v1 = create_definition(&app).await;
    let taught = teach(&app, TEACHER, billing_lesson()).await;
    let v2_id = taught.ok()["versionId"].clone();
    assert_eq!(
        show_back(&app, TEACHER).await["customer"]["settled"],
        json!(true)
    );

    let text = |id: &Value| id.as_str().expect("a versionId").to_owned();
    undo_to_version_1(&app, &text(&v1["versionId"]), &text(&v2_id)).await;
    cannot_tell_yet(&app).await;
    assert_eq!(get(&app, DEF, OPERATOR).await.ok(), &v1);

    let h = history(&app, DEF, TEACHER).await;
    assert_eq!(h.len(), 3);
    assert_eq!(h[0]["kind"], json!("activation"));
    assert_eq!(h[0]["definitionVersion"], json!(1));
    assert_eq!(h[0]["taughtBy"], json!(DANA));
    assert_eq!(h[0]["via"], json!("teacher-console"));
    assert_eq!(h[0]["reason"], json!("wrong customer"));

    let noop = activate(
        &app,
        TEACHER,
        json!({ "definitionVersion": 1, "taughtBy": DANA }),
    )
    .await;
    assert_eq!(noop.ok()["activated"], json!(false));
    assert_eq!(history(&app, DEF, TEACHER).await.len(), 3);
    activate(
        &app,
        TEACHER,
        json!({ "definitionVersion": 9, "taughtBy": DANA }),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_tombstoned_version_answers_410_and_stays_in_history() {
    let app = memory_app();
    create_definition(&app).await;
    teach(&app, TEACHER, billing_lesson()).await.ok();

    // The active version cannot be tombstoned.
    let active = post(
        &app,
        &format!("{DEF}/versions/2/tombstone"),
        TEACHER,
        json!({ "taughtBy": DANA }),
    )
    .await;
    active.problem(StatusCode::CONFLICT);

    activate(
        &app,
        TEACHER,
        json!({ "definitionVersion": 1, "taughtBy": DANA }),
    )
    .await
    .ok();
    let gone = post(
        &app,
        &format!("{DEF}/versions/2/tombstone"),
        TEACHER,
        json!({ "taughtBy": DANA, "reason": "holds a personal address" }),
    )
    .await;
    assert_eq!(gone.ok()["tombstoned"], json!(true));
    assert_eq!(gone.ok()["definitionVersion"], json!(2));

    get(&app, &format!("{DEF}/versions/2"), OPERATOR)
        .await
        .problem(StatusCode::GONE);
    activate(
        &app,
        TEACHER,
        json!({ "definitionVersion": 2, "taughtBy": DANA }),
    )
    .await
    .problem(StatusCode::GONE);
    let again = post(
        &app,
        &format!("{DEF}/versions/2/tombstone"),
        TEACHER,
        json!({ "taughtBy": DANA }),
    )
    .await;
    assert_eq!(again.ok()["tombstoned"], json!(false));

    let h = history(&app, DEF, TEACHER).await;
    assert_eq!(h[0]["kind"], json!("tombstone"));
    assert_eq!(h[0]["definitionVersion"], json!(2));
    assert_eq!(h[0]["reason"], json!("holds a personal address"));
    let lesson = h
        .iter()
        .find(|e| e["kind"] == json!("lesson"))
        .expect("the lesson stays in history");
    assert_eq!(lesson["definitionVersion"], json!(2));
    assert_eq!(lesson["taughtBy"], json!(DANA));
    assert_eq!(lesson["via"], json!("teacher-console"));
    assert_eq!(lesson["redacted"], json!(true));
    assert_eq!(lesson["describes"], Value::Null);
    assert_eq!(lesson["reason"], Value::Null);

    // Version 1 still serves; teaching again makes version 3 from the active version.
    get(&app, &format!("{DEF}/versions/1"), TEACHER).await.ok();
    let retaught = teach(&app, TEACHER, billing_lesson()).await;
    assert_eq!(retaught.ok()["definitionVersion"], json!(3));
}
