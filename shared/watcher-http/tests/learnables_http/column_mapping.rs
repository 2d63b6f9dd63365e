//! One code path for a value with no `pattern` (learnables-v1 §9): a column mapping.

use super::*;

#[tokio::test]
async fn a_column_mapping_goes_through_the_same_routes() {
    let app = memory_app();
    let uri = "/v1/definitions/sheet-import";
    let created = put_definition(&app, uri, TEACHER, fields()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let read = |app: Router| async move {
        show_back_of(&app, uri, OPERATOR, json!({ "header": "Inv #" }))
            .await
            .ok()
            .clone()
    };
    assert_eq!(read(app.clone()).await["field"]["settled"], json!(false));

    let mapping = json!({
        "collection": "fields", "entry": "invoice_number",
        "value": { "header": "Inv #" }, "taughtBy": DANA, "reason": "the new supplier sheet"
    });
    let check = post(
        &app,
        &format!("{uri}/lessons:check"),
        TEACHER,
        json!({ "lesson": mapping, "corpus": [{ "header": "Inv #" }, { "header": "Total" }] }),
    )
    .await;
    assert_eq!(
        check.ok(),
        &json!({ "matches": 1, "changes": [{ "input": 0, "from": null, "to": "invoice_number" }] })
    );
    let taught = post(&app, &format!("{uri}/lessons"), TEACHER, mapping.clone()).await;
    assert_eq!(taught.ok()["learned"], json!(true));
    assert_eq!(taught.ok()["definitionVersion"], json!(2));
    let after = read(app.clone()).await;
    assert_eq!(after["field"]["settled"], json!(true));
    assert_eq!(after["field"]["winner"], json!("invoice_number"));
    let again = post(&app, &format!("{uri}/lessons"), TEACHER, mapping).await;
    assert_eq!(again.ok()["learned"], json!(false));

    let empty_header = post(
        &app,
        &format!("{uri}/lessons"),
        TEACHER,
        json!({ "collection": "fields", "entry": "amount", "value": { "header": "  " }, "taughtBy": DANA }),
    )
    .await;
    empty_header.problem(StatusCode::UNPROCESSABLE_ENTITY);
    let d = get(&app, &format!("{uri}/descriptors"), OPERATOR).await;
    assert_eq!(d.ok()["learnables"][0]["collection"], json!("fields"));
}
