//! What the routes tell the watcher of a lesson's review (expectations-v1 §16): a lesson taught
//! with `expiresAt` opens one; the same lesson sent again (`learned: false`, after a watcher
//! that missed it) raises its open review again; a later lesson into the entry closes it; a
//! watcher that fails answers 503 with the version recorded.

use std::sync::Mutex;

use learnables::ReviewChanges;
use watcher_http::lesson_reviews::LessonReviews;

use super::*;

/// Keeps each call's (opened, closed) subject ids; fails while `failing` is set.
#[derive(Default)]
struct Told {
    calls: Mutex<Vec<(Vec<String>, Vec<String>)>>,
    failing: Mutex<bool>,
}

#[async_trait]
impl LessonReviews for Told {
    async fn reviewed(
        &self,
        _tenant: &TenantId,
        definition: &DefinitionId,
        changes: &ReviewChanges,
    ) -> Result<(), String> {
        if *self.failing.lock().unwrap() {
            return Err("the watcher's store is unavailable".into());
        }
        let ids = |l: &[learnables::Review]| l.iter().map(|r| r.subject_id(definition)).collect();
        self.calls
            .lock()
            .unwrap()
            .push((ids(&changes.opened), ids(&changes.closed)));
        Ok(())
    }
}

fn expiring(entry: &str, pattern: &str) -> Value {
    let mut l = lesson(entry, pattern, DANA);
    l["expiresAt"] = json!("2027-03-01T00:00:00Z");
    l
}

#[tokio::test]
async fn lessons_open_raise_again_and_close_their_reviews() {
    let told = Arc::new(Told::default());
    let app = app_with_reviews(Arc::new(MemoryDefinitionStore::new()), Some(told.clone()));
    create_definition(&app).await;
    let lessons = format!("{DEF}/lessons");
    let northgate = "prealert-triage/customers/northgate@2".to_owned();

    // The watcher is down: the version is recorded, the answer says so.
    *told.failing.lock().unwrap() = true;
    let first = post(
        &app,
        &lessons,
        TEACHER,
        expiring("northgate", "billing@origin\\.example"),
    )
    .await;
    let detail = first.problem(StatusCode::SERVICE_UNAVAILABLE);
    assert!(detail.contains("version 2 is recorded"), "{detail}");
    assert_eq!(active_version(&app).await, 2);
    assert!(told.calls.lock().unwrap().is_empty());

    // Sent again: nothing learned, the open review raised again.
    *told.failing.lock().unwrap() = false;
    let again = post(
        &app,
        &lessons,
        TEACHER,
        expiring("northgate", "billing@origin\\.example"),
    )
    .await;
    assert_eq!(again.ok()["learned"], json!(false));
    assert_eq!(
        told.calls.lock().unwrap().last(),
        Some(&(vec![northgate.clone()], vec![]))
    );

    // A later lesson into the entry, without an expiry, closes it.
    let later = post(&app, &lessons, TEACHER, billing_lesson_for_desk()).await;
    assert_eq!(later.ok()["definitionVersion"], json!(3));
    assert_eq!(
        told.calls.lock().unwrap().last(),
        Some(&(vec![], vec![northgate]))
    );
    let calls = told.calls.lock().unwrap().len();
    // A lesson with no review to open or close tells the watcher nothing.
    let other = post(
        &app,
        &lessons,
        TEACHER,
        lesson("alhamra", "hamra-desk\\.example", DANA),
    )
    .await;
    assert_eq!(other.ok()["learned"], json!(true));
    assert_eq!(told.calls.lock().unwrap().len(), calls);
}

fn billing_lesson_for_desk() -> Value {
    lesson("northgate", "desk@origin\\.example", DANA)
}
