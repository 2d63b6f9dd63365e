//! Incidents on `serve` (SQLite): after the worked example's four lapses, `GET /v1/incidents`,
//! `a2a-watcher incidents` (over HTTP and from the local database), `incidents ack` (once: a
//! retry by the same operator is done, exit 0; another's is refused, exit 1), the resolved list,
//! `/ui/incidents` and the open-incidents gauge of `/metrics`, all telling the same story.

use crate::common;

use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use common::*;

const PATIENCE: Duration = Duration::from_secs(20);

fn cli(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(args)
        .env_remove("A2A_WATCHER_URL")
        .env_remove("A2A_WATCHER_TOKEN")
        .env_remove("COLUMNS")
        .output()
        .expect("run a2a-watcher")
}

#[track_caller]
fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("an array")
        .iter()
        .map(|i| i["messageId"].as_str().expect("messageId").to_owned())
        .collect()
}

#[tokio::test]
async fn incidents_are_listed_acknowledged_once_and_counted_on_serve() {
    let (_agent, w) = worked_example_delivered(PATIENCE).await;
    let remote = ["--url", w.base_url.as_str(), "--token", OPERATOR_TOKEN];

    // The four lapses are four open incidents of `booking`, in order of lapse, as the lapse
    // list has them.
    let lapses = w.get("/v1/lapses").await;
    let open = w.get("/v1/incidents").await;
    assert_eq!(open.status, 200, "{}", open.body);
    assert_eq!(ids(&open.body["incidents"]), ids(&lapses.body["lapses"]));
    assert_eq!(open.body["nextCursor"], Value::Null);
    for i in open.body["incidents"].as_array().unwrap() {
        assert_eq!(i["agent"], "booking");
        assert_eq!(i["subject"]["id"], SHIPMENT);
        assert!(i["resolved"].is_null() && i["ageSeconds"].is_u64(), "{i}");
    }
    let kinds: Vec<&str> = open.body["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["overdue", "skipped", "overdue", "stalled"]);
    let first = ids(&open.body["incidents"])[0].clone();

    // The CLI, over HTTP and from the database beside it, lists the same.
    let mut args = vec!["incidents", "--json"];
    args.extend(remote);
    let listed: Value = serde_json::from_str(&ok(&cli(&args))).unwrap();
    assert_eq!(ids(&listed["incidents"]), ids(&open.body["incidents"]));
    let config = w.dir.path().join("watcher.toml");
    let config = config.to_str().unwrap();
    let local: Value =
        serde_json::from_str(&ok(&cli(&["incidents", "--json", "--config", config]))).unwrap();
    assert_eq!(ids(&local["incidents"]), ids(&open.body["incidents"]));
    let mut args = vec!["incidents", "--kind", "overdue"];
    args.extend(remote);
    let table = ok(&cli(&args));
    eprintln!("$ a2a-watcher incidents --kind overdue\n{table}");
    assert!(table.contains("2 open incident(s)"), "{table}");

    // Acknowledged once, through the route. A retry by the same operator is done (exit 0, the
    // incident printed); another operator's is refused (exit 1) and says how it ended.
    let mut args = vec![
        "incidents",
        "ack",
        "booking",
        &first,
        "--by",
        "ops@example.com",
    ];
    args.extend(remote);
    let said = ok(&cli(&args));
    assert!(
        said.starts_with(&format!(
            "acknowledged {first} of agent booking by ops@example.com"
        )),
        "{said}"
    );
    let again = ok(&cli(&args));
    assert!(
        again.starts_with(&format!(
            "already acknowledged {first} of agent booking by ops@example.com"
        )),
        "{again}"
    );
    let mut json_args = args.clone();
    json_args.push("--json");
    let again: Value = serde_json::from_str(&ok(&cli(&json_args))).unwrap();
    assert_eq!(again["messageId"], first.as_str());
    assert_eq!(again["resolved"]["reason"], "acknowledged");
    assert_eq!(again["resolved"]["by"], "ops@example.com");
    let mut other = vec![
        "incidents",
        "ack",
        "booking",
        &first,
        "--by",
        "lead@example.com",
    ];
    other.extend(remote);
    let refused = cli(&other);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("409") && err.contains("acknowledged by ops@example.com"),
        "{err}"
    );
    other.push("--json");
    let refused = cli(&other);
    assert_eq!(refused.status.code(), Some(1));
    let problem: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(problem["status"], 409, "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("acknowledged by ops@example.com"),
        "{problem}"
    );

    // `--db`, `--config` and `--tenant` are the list's: `ack` neither lists nor takes them, and
    // `incidents --config … ack` is told to give --url.
    let help = ok(&cli(&["incidents", "ack", "--help"]));
    for flag in ["--db", "--config", "--tenant"] {
        assert!(!help.contains(flag), "{flag} in\n{help}");
    }
    assert!(help.contains("--url") && help.contains("--json"), "{help}");
    let local_ack = cli(&[
        "incidents",
        "ack",
        "booking",
        &first,
        "--by",
        "x",
        "--config",
        config,
    ]);
    assert_eq!(local_ack.status.code(), Some(2), "clap refuses the flag");
    assert!(String::from_utf8_lossy(&local_ack.stderr).contains("'--config'"));
    let local_ack = cli(&[
        "incidents",
        "--config",
        config,
        "ack",
        "booking",
        &first,
        "--by",
        "x",
    ]);
    assert_eq!(
        local_ack.status.code(),
        Some(1),
        "ack writes through a running watcher only"
    );
    assert!(String::from_utf8_lossy(&local_ack.stderr).contains("give --url"));

    let open = w.get("/v1/incidents").await;
    assert_eq!(open.body["incidents"].as_array().unwrap().len(), 3);
    assert!(!ids(&open.body["incidents"]).contains(&first));
    let resolved = w.get("/v1/incidents?state=resolved").await;
    assert_eq!(ids(&resolved.body["incidents"]), vec![first.clone()]);
    assert_eq!(
        resolved.body["incidents"][0]["resolved"]["reason"],
        "acknowledged"
    );
    assert_eq!(
        resolved.body["incidents"][0]["resolved"]["by"],
        "ops@example.com"
    );

    // The page lists the three left, each with its button.
    let page = w
        .http()
        .get(w.url("/ui/incidents"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert_eq!(html.matches("name=\"message_id\"").count(), 3, "{html}");
    assert!(!html.contains(&format!("value=\"{first}\"")), "{html}");

    // The gauge: one overdue left (the other was acknowledged), one skipped, one stalled.
    let metrics = w.http().get(w.url("/metrics")).send().await.unwrap();
    let text = metrics.text().await.unwrap();
    for (kind, n) in [("overdue", 1), ("skipped", 1), ("stalled", 1)] {
        let line = format!("a2a_watcher_incidents_open{{agent=\"booking\",kind=\"{kind}\"}} {n}\n");
        assert!(text.contains(&line), "{line} in\n{text}");
    }
}

/// `[[agents]] resolve_on` (docs/interpretation.md "When a lapse is resolved"): an agent whose
/// `TASK_STATE_CANCELED` means "nothing left to do" has the lapses its lapse tasks answered
/// CANCELED resolved (reason `task`, the state named), while the one answered COMPLETED, not in
/// its list, stays open.
#[tokio::test]
async fn an_agents_resolve_on_chooses_which_task_states_resolve() {
    use a2a_types::TaskState;
    use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};

    let agent = spawn_capture_agent(Behaviour::from_fn(|n, _| {
        let state = if n == 0 {
            TaskState::Completed
        } else {
            TaskState::Canceled
        };
        Reply::task(format!("task-{}", n + 1), state)
    }))
    .await;
    let w = spawn_watcher_with(
        &agent,
        "",
        "reconcile = false\nresolve_on = [\"TASK_STATE_CANCELED\"]\n",
    )
    .await;
    run_worked_example(&w, &agent, PATIENCE).await;
    wait_for_requests(&agent, 4, PATIENCE).await;
    w.all_sent(4, PATIENCE).await;

    let first = agent
        .sent_message_ids()
        .first()
        .cloned()
        .expect("a first lapse task");
    let settled = wait_until(
        || async {
            let r = w.get("/v1/incidents?state=resolved").await;
            r.body["incidents"].as_array().map(Vec::len) == Some(3)
        },
        PATIENCE,
    )
    .await;
    let resolved = w.get("/v1/incidents?state=resolved").await;
    assert!(settled, "three resolved: {}", resolved.body);
    for i in resolved.body["incidents"].as_array().unwrap() {
        assert_ne!(i["messageId"], first.as_str(), "{i:#}");
        assert_eq!(i["resolved"]["reason"], "task", "{i:#}");
        assert_eq!(i["resolved"]["state"], "TASK_STATE_CANCELED", "{i:#}");
    }
    let open = w.get("/v1/incidents").await;
    assert_eq!(ids(&open.body["incidents"]), [first], "{}", open.body);
}
