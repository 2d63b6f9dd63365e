//! Agent cards kept with a write only when they changed (docs/dynamodb.md "Cards and lifecycle
//! descriptors across functions").

use super::*;
use watcher_core::time::IsoDuration;
use watcher_runtime::store::Cards as _;

/// The kept card's item, as stored.
async fn card_item(store: &DynamoStore) -> Item {
    store
        .client()
        .get_item()
        .table_name(store.table())
        .key("pk", AttributeValue::S("CARD#tenant-cards#booking".into()))
        .key("sk", AttributeValue::S("#".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("read the card item")
        .item
        .expect("a card kept")
}

/// Adds an attribute no write of the store makes to the kept card's item, or removes one: a
/// `PutItem` of the card replaces the whole item, so the mark is gone after any write.
async fn update_card_item(store: &DynamoStore, expression: &str, values: Option<&str>) {
    let mut update = store
        .client()
        .update_item()
        .table_name(store.table())
        .key("pk", AttributeValue::S("CARD#tenant-cards#booking".into()))
        .key("sk", AttributeValue::S("#".into()))
        .update_expression(expression);
    if let Some(v) = values {
        update = update.expression_attribute_values(":v", AttributeValue::S(v.into()));
    }
    update.send().await.expect("update the card item");
}

fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}

/// Every function instance keeps each card it reads at its cold start. Twenty reads of an
/// unchanged card within five minutes make one write: the item keeps a mark no write of the
/// card would keep, and its `readAt`; the read five minutes after the kept one is written
/// (`readAt` recorded), as is a changed card, and a card an earlier version kept with no
/// `digest` is written once, then not again.
#[tokio::test]
async fn refreshes_of_an_unchanged_card_write_it_once() {
    let store = store().await.counting_work();
    let (t, booking) = (tenant("tenant-cards"), agent("booking"));
    let secs = |n: i64| t0().plus(IsoDuration::parse(&format!("PT{n}S")).expect("a duration"));
    let card = json!({ "name": "Booking agent", "version": "1.0.0", "skills": [{ "id": "book" }] });
    store
        .put_agent_card(&t, &booking, &card, secs(0))
        .await
        .expect("keep the card");
    let item = card_item(&store).await;
    // SHA-256 of the canonical text `{"name":"Booking agent","skills":[{"id":"book"}],"version":"1.0.0"}`.
    assert_eq!(
        text(&item, "digest"),
        Some("575696d37975eca2aae626afd917f3c77f6593ed9d0269f6c772db73d03faf99")
    );
    update_card_item(&store, "SET mark = :v", Some("no write since")).await;
    let before = store.work_done().expect("work counted");
    for n in 1..=20 {
        store
            .put_agent_card(&t, &booking, &card, secs(n * 14))
            .await
            .expect("keep the card again");
    }
    let item = card_item(&store).await;
    assert_eq!(text(&item, "mark"), Some("no write since"), "no write");
    assert_eq!(text(&item, "readAt"), Some(secs(0).to_string().as_str()));
    assert_eq!(
        store.work_done().expect("work counted") - before,
        20,
        "one GetItem each, no PutItem"
    );
    assert_eq!(
        store.agent_card(&t, &booking).await.expect("agent_card"),
        Some((card.clone(), secs(0)))
    );

    store
        .put_agent_card(&t, &booking, &card, secs(300))
        .await
        .expect("keep the card 5 minutes on");
    let item = card_item(&store).await;
    assert_eq!(text(&item, "mark"), None, "written");
    assert_eq!(text(&item, "readAt"), Some(secs(300).to_string().as_str()));

    // A card an earlier version kept: no `digest`.
    update_card_item(&store, "REMOVE digest SET mark = :v", Some("earlier")).await;
    store
        .put_agent_card(&t, &booking, &card, secs(301))
        .await
        .expect("keep it");
    let item = card_item(&store).await;
    assert_eq!(text(&item, "mark"), None, "written once");
    assert!(text(&item, "digest").is_some());
    update_card_item(&store, "SET mark = :v", Some("no write since")).await;
    store
        .put_agent_card(&t, &booking, &card, secs(302))
        .await
        .expect("keep it again");
    assert_eq!(
        text(&card_item(&store).await, "mark"),
        Some("no write since")
    );

    let changed = json!({ "name": "Booking agent", "version": "1.1.0" });
    store
        .put_agent_card(&t, &booking, &changed, secs(303))
        .await
        .expect("keep the changed card");
    let item = card_item(&store).await;
    assert_eq!(text(&item, "mark"), None, "a changed card is written");
    assert_eq!(
        store.agent_card(&t, &booking).await.expect("agent_card"),
        Some((changed, secs(303)))
    );
}
