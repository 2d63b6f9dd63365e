//! Authorization and tenancy (learnables-v1 §13.2; contracts/learnables.md "Credentials").

use super::*;

#[tokio::test]
async fn sources_agents_and_operators_cannot_write() {
    let app = memory_app();
    for token in [SOURCE, AGENT, OPERATOR] {
        put_definition(&app, DEF, token, customers())
            .await
            .problem(StatusCode::FORBIDDEN);
    }
    create_definition(&app).await;
    let writes = [
        (format!("{DEF}/lessons"), billing_lesson()),
        (
            format!("{DEF}/lessons:check"),
            json!({ "lesson": billing_lesson(), "corpus": [billing_message()] }),
        ),
        (
            format!("{DEF}/activate"),
            json!({ "definitionVersion": 1, "taughtBy": DANA }),
        ),
        (
            format!("{DEF}/versions/1/tombstone"),
            json!({ "taughtBy": DANA }),
        ),
    ];
    for token in [SOURCE, AGENT, OPERATOR] {
        for (uri, body) in &writes {
            post(&app, uri, token, body.clone())
                .await
                .problem(StatusCode::FORBIDDEN);
        }
    }
    // Sources and agents read nothing either; operators read.
    for token in [SOURCE, AGENT] {
        get(&app, DEF, token).await.problem(StatusCode::FORBIDDEN);
        get(&app, &format!("{DEF}/history"), token)
            .await
            .problem(StatusCode::FORBIDDEN);
        show_back_of(&app, DEF, token, billing_message())
            .await
            .problem(StatusCode::FORBIDDEN);
    }
    get(&app, DEF, OPERATOR).await.ok();
    get(&app, &format!("{DEF}/versions/1"), OPERATOR).await.ok();
    get(&app, DEF, "").await.problem(StatusCode::UNAUTHORIZED);
    get(&app, DEF, "nobody-knows-this")
        .await
        .problem(StatusCode::UNAUTHORIZED);
    assert_eq!(active_version(&app).await, 1, "nothing was written");
    assert_eq!(history(&app, DEF, TEACHER).await.len(), 1);
}

#[tokio::test]
async fn taught_by_must_be_the_teacher_or_someone_it_teaches_for() {
    let app = memory_app();
    call(
        &app,
        "PUT",
        DEF,
        TEACHER,
        Some(json!({ "collections": customers(), "taughtBy": "mallory@elsewhere.example" })),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    create_definition(&app).await;
    let detail = teach(
        &app,
        TEACHER,
        lesson(
            "northgate",
            "billing@origin\\.example",
            "mallory@elsewhere.example",
        ),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    assert!(detail.contains("mallory@elsewhere.example"), "{detail}");
    activate(
        &app,
        TEACHER,
        json!({ "definitionVersion": 1, "taughtBy": "mallory@elsewhere.example" }),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    assert_eq!(active_version(&app).await, 1);

    // The teacher's own id is allowed, and is recorded as both author and credential.
    let own = teach(
        &app,
        TEACHER,
        lesson("northgate", "billing@origin\\.example", "teacher-console"),
    )
    .await;
    assert_eq!(own.ok()["learned"], json!(true));
    let h = history(&app, DEF, TEACHER).await;
    assert_eq!(h[0]["taughtBy"], json!("teacher-console"));
    assert_eq!(h[0]["via"], json!("teacher-console"));
}

#[tokio::test]
async fn another_tenants_definition_is_404() {
    let app = memory_app();
    create_definition(&app).await;
    let t = OTHER_TENANT_TEACHER;
    get(&app, DEF, t).await.problem(StatusCode::NOT_FOUND);
    get(&app, &format!("{DEF}/versions/1"), t)
        .await
        .problem(StatusCode::NOT_FOUND);
    get(&app, &format!("{DEF}/history"), t)
        .await
        .problem(StatusCode::NOT_FOUND);
    get(&app, &format!("{DEF}/descriptors"), t)
        .await
        .problem(StatusCode::NOT_FOUND);
    teach(&app, t, billing_lesson())
        .await
        .problem(StatusCode::NOT_FOUND);
    show_back_of(&app, DEF, t, billing_message())
        .await
        .problem(StatusCode::NOT_FOUND);
    activate(&app, t, json!({ "definitionVersion": 1, "taughtBy": DANA }))
        .await
        .problem(StatusCode::NOT_FOUND);
    assert_eq!(active_version(&app).await, 1);

    // The same id in the other tenant is another definition.
    let theirs = put_definition(&app, DEF, t, customers()).await;
    assert_eq!(theirs.status, StatusCode::CREATED, "{}", theirs.body);
    teach(&app, t, billing_lesson()).await.ok();
    assert_eq!(get(&app, DEF, t).await.ok()["definitionVersion"], json!(2));
    assert_eq!(
        active_version(&app).await,
        1,
        "acme's definition is untouched"
    );
}
