//! The worked example (expectations-v1 Appendix B) as semantics.md "The worked example" lists
//! it: four lapse tasks, in order, and the final record.

use crate::common;

use common::{run_doc, Outcome, URI};
use serde_json::{json, Value};

const WORKED_EXAMPLE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/worked-example.json"
));

const MANIFEST: &str = "exp-01J8Q0MANIFEST";
const DEPART: &str = "exp-01J8Q0DEPART";
const ARRIVE: &str = "exp-01J8Q0ARRIVE";

fn outcome() -> Outcome {
    let doc: Value = serde_json::from_str(WORKED_EXAMPLE).expect("the worked example is JSON");
    Outcome {
        lines: run_doc(&doc),
    }
}

/// What semantics.md lists for one lapse task.
struct Expected {
    id: &'static str,
    kind: &'static str,
    expects: &'static str,
    lapse: &'static str,
    at: &'static str,
    due_at: &'static str,
    projected: &'static str,
    last_fact_at: Option<&'static str>,
    satisfied_after: Option<&'static [&'static str]>,
}

const EXPECTED: [Expected; 4] = [
    Expected {
        id: MANIFEST,
        kind: "shipment.manifest",
        expects: "the airline manifest for PA-2026-0901",
        lapse: "overdue",
        at: "2026-09-10T22:15:00Z",
        due_at: "2026-09-10T20:15:00Z",
        projected: "2026-09-10T20:15:00Z",
        last_fact_at: None,
        satisfied_after: None,
    },
    Expected {
        id: MANIFEST,
        kind: "shipment.manifest",
        expects: "the airline manifest for PA-2026-0901",
        lapse: "skipped",
        at: "2026-09-11T02:41:07Z",
        due_at: "2026-09-10T20:15:00Z",
        projected: "2026-09-10T20:15:00Z",
        last_fact_at: Some("2026-09-11T02:41:00Z"),
        satisfied_after: Some(&[DEPART]),
    },
    Expected {
        id: ARRIVE,
        kind: "shipment.arrival",
        expects: "an arrival event at DOH",
        lapse: "overdue",
        at: "2026-09-11T10:26:00Z",
        due_at: "2026-09-11T04:26:00Z",
        projected: "2026-09-11T05:00:00Z",
        last_fact_at: Some("2026-09-11T02:41:00Z"),
        satisfied_after: None,
    },
    Expected {
        id: ARRIVE,
        kind: "shipment.arrival",
        expects: "an arrival event at DOH",
        lapse: "stalled",
        at: "2026-09-13T05:00:00Z",
        due_at: "2026-09-11T04:26:00Z",
        projected: "2026-09-11T05:00:00Z",
        last_fact_at: Some("2026-09-11T02:41:00Z"),
        satisfied_after: None,
    },
];

#[test]
fn four_lapse_tasks_in_order_with_the_listed_values() {
    let out = outcome();
    let tasks = out.lapse_tasks();
    assert_eq!(
        tasks.len(),
        4,
        "the watcher submits four lapse tasks: {tasks:#?}"
    );
    for (line, want) in tasks.iter().zip(EXPECTED.iter()) {
        let what = format!("{} {}", want.lapse, want.id);
        assert_eq!(line["agent"], "booking", "{what}");
        assert_eq!(line["at"], want.at, "{what}: line at");
        let request = &line["request"];
        let message = &request["message"];
        assert_eq!(
            message["messageId"],
            format!("lapse:{}:{}:{}", want.id, want.lapse, want.due_at),
            "{what}"
        );
        assert_eq!(message["role"], "ROLE_USER", "{what}");
        assert_eq!(message["contextId"], "ctx-northgate-sep", "{what}");
        assert_eq!(
            message["referenceTaskIds"],
            json!(["task-booking-7f3a"]),
            "{what}"
        );
        assert!(message.get("taskId").is_none(), "{what}: no taskId");
        assert_eq!(message["extensions"], json!([URI]), "{what}");
        let parts = message["parts"].as_array().expect("parts");
        assert_eq!(parts.len(), 1, "{what}: one text part");
        let text = parts[0]["text"].as_str().expect("a text part");
        assert!(!text.trim().is_empty(), "{what}: the text states the lapse");
        assert_eq!(
            request["configuration"]["returnImmediately"],
            json!(true),
            "{what}"
        );

        let block = &message["metadata"][URI]["lapse"];
        assert_eq!(block["expectationId"], want.id, "{what}");
        assert_eq!(block["kind"], want.kind, "{what}");
        assert_eq!(
            block["subject"],
            json!({ "type": "shipment", "id": "PA-2026-0901" }),
            "{what}"
        );
        assert_eq!(block["expects"], want.expects, "{what}");
        assert_eq!(block["lapse"], want.lapse, "{what}");
        assert_eq!(block["dueAt"], want.due_at, "{what}: dueAt");
        assert_eq!(
            block["projectedDueAt"], want.projected,
            "{what}: projectedDueAt"
        );
        assert_eq!(block["lapsedAt"], line["at"], "{what}: lapsedAt = line at");
        assert_eq!(block["lineage"], json!(0), "{what}");
        match want.last_fact_at {
            Some(t) => assert_eq!(block["lastFactAt"], t, "{what}: lastFactAt"),
            None => assert!(block.get("lastFactAt").is_none(), "{what}: no lastFactAt"),
        }
        match want.satisfied_after {
            Some(ids) => assert_eq!(block["satisfiedAfter"], json!(ids), "{what}"),
            None => assert!(
                block.get("satisfiedAfter").is_none(),
                "{what}: satisfiedAfter only on skipped"
            ),
        }
    }
}

#[test]
fn the_text_parts_state_each_lapse() {
    let out = outcome();
    let texts: Vec<String> = out
        .lapse_tasks()
        .iter()
        .map(|l| {
            l["request"]["message"]["parts"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert!(
        texts[0].contains("the airline manifest for PA-2026-0901"),
        "{}",
        texts[0]
    );
    assert!(texts[1].contains("departure"), "{}", texts[1]);
    assert!(texts[2].contains("2026-09-11T04:26:00Z"), "{}", texts[2]);
    assert!(texts[3].contains("2026-09-11T02:41:00Z"), "{}", texts[3]);
}

#[test]
fn the_final_record() {
    let out = outcome();
    let records = out.records();
    let ids: Vec<&Value> = records.iter().map(|r| &r["expectationId"]).collect();
    assert_eq!(ids, [MANIFEST, DEPART, ARRIVE], "in order of raising");

    let depart = out.record(DEPART);
    assert_eq!(depart["status"], "satisfied");
    assert_eq!(
        depart["satisfaction"],
        json!({
            "factKey": "shipment.departed:PA-2026-0901",
            "source": "carrier-feed:emirates",
            "satisfiedAt": "2026-09-11T02:41:07Z",
            "observedAt": "2026-09-11T02:41:00Z",
            "late": false,
        })
    );
    assert_eq!(depart["lapses"], json!([]));
    assert_eq!(depart["dueAt"], "2026-09-11T03:15:00Z");

    let arrive = out.record(ARRIVE);
    assert_eq!(arrive["status"], "open");
    assert_eq!(arrive["dueAt"], "2026-09-11T04:26:00Z");
    assert_eq!(arrive["projectedDueAt"], "2026-09-11T05:00:00Z");
    assert_eq!(
        out.record_lapses(ARRIVE),
        [
            ("overdue".to_owned(), "2026-09-11T10:26:00Z".to_owned()),
            ("stalled".to_owned(), "2026-09-13T05:00:00Z".to_owned()),
        ]
    );
    assert_eq!(
        arrive["lapses"][0]["messageId"],
        "lapse:exp-01J8Q0ARRIVE:overdue:2026-09-11T04:26:00Z"
    );

    let manifest = out.record(MANIFEST);
    assert_eq!(manifest["status"], "open");
    assert_eq!(manifest["satisfaction"], Value::Null);
    assert_eq!(manifest["dueAt"], "2026-09-10T20:15:00Z");
    assert_eq!(manifest["projectedDueAt"], "2026-09-10T20:15:00Z");
    assert_eq!(
        out.record_lapses(MANIFEST),
        [
            ("overdue".to_owned(), "2026-09-10T22:15:00Z".to_owned()),
            ("skipped".to_owned(), "2026-09-11T02:41:07Z".to_owned()),
        ],
        "the manifest has no horizon and so does not stall"
    );

    for r in records {
        assert_eq!(r["agent"], "booking");
        assert_eq!(r["tenant"], "default");
        assert_eq!(r["lineage"], json!(0));
        assert_eq!(r["raisedAt"], "2026-09-10T01:00:00Z");
        assert_eq!(
            r["raisedBy"],
            json!({ "taskId": "task-booking-7f3a", "contextId": "ctx-northgate-sep" })
        );
        assert_eq!(r["withdrawal"], Value::Null);
        assert_eq!(r["supersededBy"], Value::Null);
    }
    assert!(out.rejections().is_empty(), "nothing refused");
}
