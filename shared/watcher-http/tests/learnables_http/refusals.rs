//! Refusals (learnables-v1 §10.1, §13.3): compiler reasons, size limits, malformed requests, duplicated members, Unicode forms.

use super::*;

#[tokio::test]
async fn an_unbalanced_parenthesis_is_refused_with_the_compilers_reason() {
    let app = memory_app();
    let v1 = create_definition(&app).await;
    refuses_an_unusable_pattern(&app, &v1).await;
}

#[tokio::test]
async fn a_pattern_over_the_size_limit_is_refused() {
    let app = memory_app();
    create_definition(&app).await;
    let refused = teach(&app, TEACHER, lesson("northgate", "\\w{5000}", DANA)).await;
    let detail = refused.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        detail.starts_with(
            "\"\\\\w{5000}\" is not a usable pattern: it compiles to more than 1024 KiB"
        ),
        "{detail}"
    );
    assert_eq!(active_version(&app).await, 1);

    // The same judgement applies to values in PUT.
    let mut bad = customers();
    bad["customers"]["entries"]["alhamra"]["value"]["marks"][0]["pattern"] = json!("(unclosed");
    let put = put_definition(&app, "/v1/definitions/another", TEACHER, bad).await;
    let detail = put.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        detail.contains("is not a usable pattern: unclosed group"),
        "{detail}"
    );
    get(&app, "/v1/definitions/another", TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn malformed_requests_are_400_problems() {
    let app = memory_app();
    create_definition(&app).await;
    let not_json = Request::builder()
        .method("POST")
        .uri(format!("{DEF}/lessons"))
        .header(header::AUTHORIZATION, format!("Bearer {TEACHER}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{ not json"))
        .expect("a request");
    let answer = app.clone().oneshot(not_json).await.expect("an answer");
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    let no_value = teach(
        &app,
        TEACHER,
        json!({ "collection": "customers", "entry": "northgate", "taughtBy": DANA }),
    )
    .await;
    assert!(no_value.problem(StatusCode::BAD_REQUEST).contains("value"));
    get(&app, &format!("{DEF}/versions/abc"), TEACHER)
        .await
        .problem(StatusCode::BAD_REQUEST);
    get(&app, "/v1/definitions/no-such-thing", TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);
    let unknown_collection = teach(
        &app,
        TEACHER,
        json!({ "collection": "suppliers", "entry": "x", "value": {}, "taughtBy": DANA }),
    )
    .await;
    unknown_collection.problem(StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_duplicated_member_is_refused_by_name_and_nothing_is_taught() {
    let app = memory_app();
    create_definition(&app).await;
    // serde_json alone keeps the last "entry": this lesson would teach alhamra.
    let twice = format!(
        r#"{{"collection": "customers", "entry": "northgate", "value": {{"pattern": "billing@origin\\.example", "where": "from"}}, "taughtBy": "{DANA}", "entry": "alhamra"}}"#
    );
    assert_eq!(
        bad_request_for(&app, &format!("{DEF}/lessons"), TEACHER, twice).await,
        "the member \"entry\" appears twice"
    );
    // Deeper, inside the lesson's value.
    let inner = format!(
        r#"{{"collection": "customers", "entry": "northgate", "value": {{"pattern": "a\\.example", "where": "from", "pattern": "b\\.example"}}, "taughtBy": "{DANA}"}}"#
    );
    assert_eq!(
        bad_request_for(&app, &format!("{DEF}/lessons"), TEACHER, inner).await,
        "the member \"pattern\" appears twice"
    );
    let show = r#"{"input": {"from": "billing@origin.example", "from": "x@alhamra.example"}}"#;
    assert_eq!(
        bad_request_for(&app, &format!("{DEF}/show-back"), OPERATOR, show.into()).await,
        "the member \"from\" appears twice"
    );
    assert_eq!(active_version(&app).await, 1, "nothing was taught");
}

#[tokio::test]
async fn text_in_two_unicode_forms_is_one_text() {
    const COMPOSED: &str = "Caf\u{E9} total";
    const DECOMPOSED: &str = "Cafe\u{301} total";
    let app = memory_app();
    let uri = "/v1/definitions/sheet-import";
    let fields = json!({
        "fields": {
            "learnable": "column-mapping",
            "entry": "field",
            "teaches": "which field a spreadsheet column holds",
            "entries": {
                "Montant_d\u{FB01}nal": { "label": "Amount", "value": { "headers": [COMPOSED] } }
            }
        }
    });
    let created = put_definition(&app, uri, TEACHER, fields).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    // A heading taught composed matches the same heading arriving decomposed.
    let read = show_back_of(&app, uri, OPERATOR, json!({ "header": DECOMPOSED })).await;
    assert_eq!(read.ok()["field"]["winner"], json!("Montant_d\u{FB01}nal"));
    // Teaching the decomposed form, to the entry named decomposed, is the same lesson: no twin.
    let again = post(
        &app,
        &format!("{uri}/lessons"),
        TEACHER,
        json!({ "collection": "fields", "entry": "Montant_d\u{FB01}nal",
                "value": { "header": DECOMPOSED }, "taughtBy": DANA }),
    )
    .await;
    assert_eq!(again.ok()["learned"], json!(false), "{}", again.body);
    assert_eq!(again.ok()["definitionVersion"], json!(1));
    // An entry name sent decomposed names the entry stored composed.
    let named = post(
        &app,
        &format!("{uri}/lessons"),
        TEACHER,
        json!({ "collection": "fields", "entry": "Caf\u{E9}",
                "value": { "header": "Prix" }, "taughtBy": DANA }),
    )
    .await;
    assert_eq!(named.ok()["learned"], json!(true));
    let same = post(
        &app,
        &format!("{uri}/lessons"),
        TEACHER,
        json!({ "collection": "fields", "entry": "Cafe\u{301}",
                "value": { "header": "prix" }, "taughtBy": DANA }),
    )
    .await;
    assert_eq!(same.ok()["learned"], json!(false), "{}", same.body);
    let active = get(&app, uri, OPERATOR).await;
    let entries: Vec<String> = active.ok()["collections"]["fields"]["entries"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    assert_eq!(
        entries,
        ["Caf\u{E9}", "Montant_d\u{FB01}nal"],
        "one entry per name, and no compatibility folding of the ligature"
    );
}
