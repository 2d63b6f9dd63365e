//! The operator's commands (`a2a-watcher subject|lapses|timeline|agents`) against a spawned
//! `serve` running the worked example on compressed times, over HTTP (`--url`, `--token`, or the
//! environment) and from the local database (`--config`); and the timeline route itself.

use crate::common;

use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};

use common::*;

const PATIENCE: Duration = Duration::from_secs(20);

/// Runs the CLI with `args` (and `env`), answering its output.
fn cli(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_a2a-watcher"));
    cmd.args(args)
        .env_remove("A2A_WATCHER_URL")
        .env_remove("A2A_WATCHER_TOKEN")
        .env_remove("COLUMNS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run a2a-watcher")
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

#[track_caller]
fn json_of(out: &Output) -> Value {
    serde_json::from_str(&ok(out)).expect("--json prints JSON")
}

#[tokio::test]
async fn operator_commands_read_the_worked_example_remotely_and_locally() {
    let (_agent, w) = worked_example_delivered(PATIENCE).await;
    let remote = ["--url", &w.base_url, "--token", OPERATOR_TOKEN];
    let with = |cmd: &[&str], extra: &[&str]| -> Vec<String> {
        cmd.iter()
            .chain(extra.iter())
            .map(ToString::to_string)
            .collect()
    };
    let run = |args: Vec<String>| cli(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[]);

    // subject --json is the route's body; the table names each step with basis and lapses.
    let served = w.get(&format!("/v1/subjects/shipment/{SHIPMENT}")).await;
    assert_eq!(served.status, 200);
    let subject = json_of(&run(with(
        &["subject", "shipment", SHIPMENT, "--json"],
        &remote,
    )));
    assert_eq!(subject, served.body);
    let table = ok(&run(with(&["subject", "shipment", SHIPMENT], &remote)));
    eprintln!("$ a2a-watcher subject shipment {SHIPMENT}\n{table}");
    for needle in [
        "shipment PA-2026-0901",
        "exp-01J8Q0MANIFEST",
        "exp-01J8Q0DEPART",
        "exp-01J8Q0ARRIVE",
        "observed",
        "skipped",
        "stalled",
        "shipment.departed:PA-2026-0901",
        SOURCE_ID,
    ] {
        assert!(table.contains(needle), "{needle:?} missing from\n{table}");
    }

    // lapses: all four, then filtered by agent, delivery and since; the same from the env.
    let all = json_of(&run(with(&["lapses", "--json"], &remote)));
    let kinds: Vec<&str> = all["lapses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lapse"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["overdue", "skipped", "overdue", "stalled"]);
    let sent = json_of(&run(with(
        &[
            "lapses",
            "--agent",
            "booking",
            "--delivery",
            "sent",
            "--json",
        ],
        &remote,
    )));
    assert_eq!(sent["lapses"].as_array().unwrap().len(), 4);
    let none = json_of(&run(with(
        &["lapses", "--agent", "nobody", "--json"],
        &remote,
    )));
    assert_eq!(none["lapses"], json!([]));
    let future = json_of(&run(with(
        &["lapses", "--since", "2999-01-01T00:00:00Z", "--json"],
        &remote,
    )));
    assert_eq!(future["lapses"], json!([]));
    let from_env = cli(
        &["lapses"],
        &[
            ("A2A_WATCHER_URL", &w.base_url),
            ("A2A_WATCHER_TOKEN", OPERATOR_TOKEN),
        ],
    );
    let lapses_table = ok(&from_env);
    eprintln!("$ a2a-watcher lapses\n{lapses_table}");
    assert!(lapses_table.contains("4 lapse task(s)"), "{lapses_table}");
    assert!(lapses_table.contains("stalled") && lapses_table.contains("sent"));
    let bad = run(with(&["lapses", "--delivery", "lost"], &remote));
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--delivery"));

    // timeline -o: the route's SVG, with the manifest's hole and each lapse kind.
    let svg_path = w.dir.path().join("timeline.svg");
    let svg_arg = svg_path.to_str().unwrap();
    ok(&run(with(
        &["timeline", "shipment", SHIPMENT, "-o", svg_arg],
        &remote,
    )));
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
    for class in [
        r#"class="hole""#,
        "lapse lapse-overdue",
        "lapse lapse-skipped",
        "lapse lapse-stalled",
        "basis: observed",
    ] {
        assert!(svg.contains(class), "{class} missing from the timeline");
    }

    // agents: the booking agent's delivery is ok.
    let agents = json_of(&run(with(&["agents", "--json"], &remote)));
    assert_eq!(agents["agents"][0]["agentId"], "booking");
    assert_eq!(agents["agents"][0]["delivery"], "ok");
    assert!(ok(&run(with(&["agents"], &remote))).contains("booking"));

    // A wrong token: the problem's detail, and a failure exit.
    let refused = run(vec![
        "subject".into(),
        "shipment".into(),
        SHIPMENT.into(),
        "--url".into(),
        w.base_url.clone(),
        "--token".into(),
        "nope".into(),
    ]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("401"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    // The local database through the configuration, while serve runs: the same record.
    let config = w.dir.path().join("watcher.toml");
    let local = ["--config", config.to_str().unwrap()];
    let local_subject = json_of(&run(with(
        &["subject", "shipment", SHIPMENT, "--json"],
        &local,
    )));
    assert_eq!(local_subject, served.body);
    let local_lapses = json_of(&run(with(&["lapses", "--json"], &local)));
    assert_eq!(local_lapses["lapses"].as_array().unwrap().len(), 4);
    let local_agents = json_of(&run(with(&["agents", "--json"], &local)));
    assert_eq!(local_agents["agents"][0]["delivery"], "ok");
    let local_svg = w.dir.path().join("local.svg");
    ok(&run(with(
        &[
            "timeline",
            "shipment",
            SHIPMENT,
            "-o",
            local_svg.to_str().unwrap(),
        ],
        &local,
    )));
    assert!(std::fs::read_to_string(&local_svg)
        .unwrap()
        .contains(r#"class="hole""#));
    let missing = run(with(&["subject", "shipment", "nothing-here"], &local));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nothing is recorded"));
}

#[tokio::test]
async fn the_timeline_route_is_for_operators_and_answers_svg() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, "").await;
    assert_eq!(
        w.push(&booking_artifact(BookingTimes::far())).await.status,
        200
    );
    let path = format!("/v1/subjects/shipment/{SHIPMENT}/timeline.svg");
    let anonymous = w.http().get(w.url(&path)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let as_source = w
        .http()
        .get(w.url(&path))
        .bearer_auth(SOURCE_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(as_source.status(), 403);
    let answer = w
        .http()
        .get(w.url(&path))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["content-type"], "image/svg+xml");
    let svg = answer.text().await.unwrap();
    // Nothing happened yet: the arrival's anchor is open, so it is drawn as less certain.
    assert!(svg.contains("current uncertain"));
    assert!(!svg.contains(r#"class="hole""#));
    let unknown = w
        .http()
        .get(w.url("/v1/subjects/shipment/none/timeline.svg"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

/// The states `GET /v1/lapses?delivery=` filters by, as docs/openapi.json declares them (the
/// values of the component its `delivery` parameter refers to).
fn documented_delivery_states() -> Vec<String> {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json"))
            .expect("docs/openapi.json"),
    )
    .expect("JSON");
    let parameter = doc["paths"]["/v1/lapses"]["get"]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "delivery")
        .expect("the delivery parameter")
        .clone();
    let name = parameter["schema"]["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
        .expect("a reference into components.schemas");
    let component = &doc["components"]["schemas"][name];
    let listed: Vec<Value> = match component["oneOf"].as_array() {
        Some(one_of) => one_of.iter().map(|v| v["const"].clone()).collect(),
        None => component["enum"].as_array().cloned().unwrap_or_default(),
    };
    listed
        .iter()
        .map(|v| v.as_str().expect("a string").to_owned())
        .collect()
}

/// Writes two lapse tasks of the booking agent in each delivery state `states` names into the
/// stopped watcher's database: long ids, a completed task and a long last error, for the tables;
/// the queued ones not due for a long time, so the running `serve` leaves them queued.
async fn lapse_tasks_in_every_state(w: &Watcher, states: &[String]) -> Vec<(String, String)> {
    use watcher_core::ids::{AgentId, ExpectationId, Tenant};
    use watcher_core::record::LapseKind;
    use watcher_core::time::Instant;
    use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry, Records as _};

    let store = watcher_store_sqlite::SqliteStore::open(w.dir.path().join("watcher.db"))
        .expect("open the stopped watcher's database");
    let lapsed = Instant::parse("2026-12-01T00:22:02Z").unwrap();
    let mut written = Vec::new();
    let mut entries = Vec::new();
    for (i, state) in states.iter().enumerate() {
        let delivery = DeliveryState::parse(state).expect("a state of the schema");
        for copy in 0..2 {
            let id = format!("exp-01J8Q0{}-{copy}-{i}", state.to_uppercase());
            let message_id = format!("lapse:{id}:overdue:2026-12-01T00:22:00Z");
            let mut o = OutboxEntry::queued(
                Tenant::default_tenant(),
                AgentId::parse("booking").unwrap(),
                message_id.clone(),
                ExpectationId::parse(id).unwrap(),
                LapseKind::Overdue,
                lapsed,
                json!({}),
            );
            o.delivery = delivery;
            o.attempts = 12;
            o.task_state = Some("TASK_STATE_COMPLETED".into());
            o.last_error = Some(
                "transport: error sending request for url (http://127.0.0.1:9/): connection refused"
                    .into(),
            );
            o.next_attempt_at = Instant::parse("9999-12-31T23:59:59Z").unwrap();
            entries.push(o);
            written.push((state.clone(), message_id));
        }
    }
    store
        .commit(&Tenant::default_tenant(), Commit::of_outbox(entries))
        .await
        .expect("commit the lapse tasks");
    written
}

/// issue 39 item 7: every delivery state the lapse list shows is a filter, on `serve`'s route
/// and in `a2a-watcher lapses --delivery` (over `--url` and `--db`), and the values accepted are
/// docs/openapi.json's (generated from the type the answer's `delivery` is).
#[tokio::test]
async fn every_state_the_lapse_list_shows_filters_on_serve_and_in_the_cli() {
    let states = documented_delivery_states();
    for shown in ["queued", "sent", "failed", "withdrawn", "unaddressed"] {
        assert!(states.iter().any(|s| s == shown), "{shown} in {states:?}");
    }
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, "").await;
    w.kill().await;
    let written = lapse_tasks_in_every_state(&w, &states).await;
    w.start().await;
    let db = w.dir.path().join("watcher.db");
    let remote = ["--url", w.base_url.as_str(), "--token", OPERATOR_TOKEN];
    let local = ["--db", db.to_str().unwrap()];
    let ids = |body: &Value| -> Vec<String> {
        body["lapses"]
            .as_array()
            .expect("lapses")
            .iter()
            .map(|l| l["messageId"].as_str().unwrap().to_owned())
            .collect()
    };
    for state in &states {
        let want: Vec<String> = written
            .iter()
            .filter(|(s, _)| s == state)
            .map(|(_, id)| id.clone())
            .collect();
        let served = w.get(&format!("/v1/lapses?delivery={state}")).await;
        assert_eq!(served.status, 200, "delivery={state}: {:?}", served.body);
        assert_eq!(ids(&served.body), want, "GET /v1/lapses?delivery={state}");
        for source in [&remote[..], &local[..]] {
            let mut args = vec!["lapses", "--delivery", state, "--json"];
            args.extend_from_slice(source);
            assert_eq!(ids(&json_of(&cli(&args, &[]))), want, "{args:?}");
        }
    }
    let bad = cli(
        &["lapses", "--delivery", "lost", "--db", db.to_str().unwrap()],
        &[],
    );
    assert!(!bad.status.success());
    let why = String::from_utf8_lossy(&bad.stderr);
    for state in &states {
        assert!(why.contains(state.as_str()), "{state} listed in: {why}");
    }
}

/// issue 39 item 11: `a2a-watcher lapses` fits the width `COLUMNS` gives and never breaks a
/// word (no `COMPLE`/`TED`); where even the longest words side by side do not fit, its lines
/// are wider rather than a word broken.
#[tokio::test]
async fn the_lapses_table_fits_columns_and_never_breaks_a_word() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, "").await;
    w.kill().await;
    let states = documented_delivery_states();
    let written = lapse_tasks_in_every_state(&w, &states).await;
    let db = w.dir.path().join("watcher.db");
    let table = |columns: &str| -> String {
        ok(&cli(
            &["lapses", "--db", db.to_str().unwrap()],
            &[("COLUMNS", columns)],
        ))
    };
    let widest = |out: &str| out.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let words: Vec<String> = written
        .iter()
        .map(|(_, id)| {
            id.strip_prefix("lapse:")
                .and_then(|rest| rest.split(':').next())
                .unwrap()
                .to_owned()
        })
        .chain(
            [
                "COMPLETED",
                "attempt(s)",
                "transport:",
                "unaddressed",
                "2026-12-01",
            ]
            .map(String::from),
        )
        .collect();
    let least = widest(&table("1"));
    for columns in [220, 160, 120, 100, least] {
        let out = table(&columns.to_string());
        eprintln!("$ COLUMNS={columns} a2a-watcher lapses\n{out}");
        assert!(
            widest(&out) <= columns,
            "COLUMNS={columns}: {} wide",
            widest(&out)
        );
        for word in &words {
            assert!(
                out.lines().any(|l| l.contains(word.as_str())),
                "COLUMNS={columns}: {word:?} broken"
            );
        }
        assert!(out.contains(&format!("{} lapse task(s)", written.len())));
    }
    for columns in [least - 1, 40] {
        let out = table(&columns.to_string());
        assert_eq!(
            widest(&out),
            least,
            "COLUMNS={columns}: wider, not broken\n{out}"
        );
        for word in &words {
            assert!(
                out.lines().any(|l| l.contains(word.as_str())),
                "COLUMNS={columns}: {word:?} broken"
            );
        }
    }
    // Without COLUMNS and not on a terminal: the default width.
    let piped = ok(&cli(&["lapses", "--db", db.to_str().unwrap()], &[]));
    assert!(widest(&piped) <= 100.max(least), "{piped}");
}
