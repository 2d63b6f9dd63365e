//! Tell the sender what was ignored: unknown members of an expectation, of the extension's
//! metadata object and of a fact come back as `warnings` naming the member and the nearest known
//! one; an artifact listing the extension without its metadata is a warning too. Nothing is
//! refused for it. Through the routes in-process on a simulated clock (no process adds anything
//! here; `serve` printing each configuration warning once is `tests/serve_warnings_once.rs`).

use serde_json::{json, Value};

use crate::common::{
    departure_fact, fmt, one_expectation, plus, InProcess, PUSH_TOKEN, SOURCE_TOKEN, URI,
};

/// The source of [`SOURCE_TOKEN`].
const SOURCE_ID: &str = "carrier-feed:emirates";

fn warnings(body: &Value) -> Vec<String> {
    body["warnings"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|w| w.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn ignored_members_are_named_in_the_answer() {
    let w = InProcess::at("2026-09-10T12:00:00Z");
    let due = plus(w.now(), 3600);

    let mut push = one_expectation("task-w", "exp-w", "PA-W", due);
    let block = &mut push["artifactUpdate"]["artifact"]["metadata"][URI];
    block["expectations"][0]["horizn"] = json!(fmt(plus(due, 60)));
    block["withdrow"] = json!([]);
    let answer = w.push(&push).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.body["raised"],
        json!(["exp-w"]),
        "nothing is refused for it"
    );
    let got = warnings(&answer.body);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got.iter()
            .any(|w| w.contains("expectations[0].horizn") && w.contains("`horizon`")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|w| w.contains("withdrow") && w.contains("`withdraw`")),
        "{got:?}"
    );

    // Listing the extension without its metadata raises nothing, and says so.
    let mut bare = one_expectation("task-x", "exp-x", "PA-X", due);
    bare["artifactUpdate"]["artifact"]["metadata"] = json!({});
    let answer = w.push(&bare).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let got = warnings(&answer.body);
    assert!(
        got.iter().any(|w| w.contains("artifact.metadata")),
        "{got:?}"
    );

    // A fact's unknown member.
    let mut fact = departure_fact("PA-W", w.now());
    fact["obsevedBy"] = json!("gate 4");
    let answer = w.report(&json!({ "facts": [fact] })).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let got = warnings(&answer.body);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("facts[0].obsevedBy"), "{got:?}");

    // Kept with the rejections on the record, marked `warning`, not counted as refusals.
    let kept = w.get("/v1/agents/booking/rejections").await;
    assert_eq!(kept.status, 200, "{kept:?}");
    let list = kept.list("rejections");
    let horizn: Vec<&Value> = list
        .iter()
        .filter(|r| {
            r["reason"]
                .as_str()
                .is_some_and(|r| r.contains("expectations[0].horizn"))
        })
        .collect();
    assert_eq!(horizn.len(), 1, "{list:?}");
    assert_eq!(horizn[0]["warning"], json!(true), "{list:?}");
    assert_eq!(horizn[0]["taskId"], json!("task-w"), "{list:?}");
    assert_eq!(horizn[0]["at"], json!(fmt(w.now())), "{list:?}");
    assert!(
        list.iter().any(|r| r["reason"]
            .as_str()
            .is_some_and(|r| r.contains("withdrow") && r.contains("`withdraw`"))),
        "{list:?}"
    );
    assert!(
        list.iter()
            .any(|r| r["warning"] == json!(true) && r["taskId"] == json!("task-x")),
        "the extension listed without metadata is kept too: {list:?}"
    );
    assert!(
        list.iter().all(|r| r["warning"] == json!(true)),
        "nothing was refused: {list:?}"
    );
    // The source's ignored members, kept under the source.
    let path = format!("/v1/sources/{SOURCE_ID}/rejections");
    let kept = w.get(&path).await;
    assert_eq!(kept.status, 200, "{kept:?}");
    let list = kept.list("rejections");
    assert_eq!(list.len(), 1, "{list:?}");
    assert!(list[0]["reason"]
        .as_str()
        .unwrap_or_default()
        .contains("facts[0].obsevedBy"));
    assert_eq!(list[0]["warning"], json!(true));
    // The source itself may read them; another party may not.
    let own = w.get_as(&path, SOURCE_TOKEN).await;
    assert_eq!(own.status, 200, "{own:?}");
    w.get_as(&path, PUSH_TOKEN).await.assert_problem(403);

    // A clean push has no `warnings`.
    let clean = w
        .push(&one_expectation("task-y", "exp-y", "PA-Y", due))
        .await;
    assert!(clean.body.get("warnings").is_none(), "{clean:?}");
}
