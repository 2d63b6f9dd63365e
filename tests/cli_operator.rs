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
        .env_remove("A2A_WATCHER_TOKEN");
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
            .map(|s| s.to_string())
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
