//! The goal load's short version (`cargo bench --bench goal_load -- --short`, docs/performance.md
//! "The goal load on the scale model"), run by the test suite through the same driver
//! (`benches/goal_load/driver.rs`) on the debug function binaries: K = 100 with shorter phases
//! (100 agents over 4 tenants, 100 raises and 100 facts a second offered for 20 s, a burst of
//! 50 lapses due at one instant, one agent's backlog of 50 lapse tasks). It asserts what must hold at any K and on any
//! machine: every due lapse arrives (lost 0), no `messageId` arrives twice, every lapse that
//! arrives was due, and the JSON line parses with its figures. It asserts no timing.

#[path = "../benches/goal_load/driver.rs"]
#[allow(
    dead_code,
    reason = "the bench's command line (`Options::parse`, `USAGE`) is not used by the test"
)]
mod driver;

use serde_json::Value;

use crate::common::aws_stack::{aws_missing, bin_dir, skipped};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "about 4 minutes (the model's throttled work comes back after 30 s visibility \
            timeouts and 10 s sweeps): CI runs it on its own, `cargo test --test it goal_load \
            -- --ignored`"]
async fn the_goal_loads_short_version_loses_nothing_and_sends_nothing_twice() {
    if skipped(
        "the_goal_loads_short_version_loses_nothing_and_sends_nothing_twice",
        aws_missing(),
        true,
    ) {
        return;
    }
    let options = driver::Options {
        bin_dir: Some(bin_dir()),
        // Free ports: the suite runs other stacks at the same time.
        api_port: 0,
        agents_port: 0,
        moto_port: 0,
        dynamodb_port: 0,
        log: Some(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("goal-load-short.log")),
        ..driver::Options::short()
    };
    let report = driver::run(&options).await.expect("the goal load runs");
    print!("{}", report.table());
    let line = report.json_line();
    println!("{line}");
    let j: Value = serde_json::from_str(&line).expect("the JSON line parses");
    let g = &j["goal_load"];
    assert_eq!(g["scale"], 100, "{line}");
    assert_eq!(g["agents"], 100, "{line}");
    // The burst and the backlog were raised (their pushes sent again while the model refuses
    // them, up to two seconds before their due instant) and are due; the steady window's
    // lapsing raises too when the API took any (at 1/100 it may answer most of them 500, as
    // API Gateway answers a throttled Lambda).
    for group in ["burst", "backlog"] {
        assert!(
            g["lateness"][group]["due"].as_u64().is_some_and(|n| n > 0),
            "no {group} lapse was raised: {line}"
        );
    }
    assert_eq!(g["lost"], 0, "due lapses never arrived: {line}");
    assert_eq!(g["sent_twice"], 0, "a messageId arrived twice: {line}");
    assert_eq!(report.lost(), 0);
    assert_eq!(report.sent_twice(), 0);
    assert_eq!(
        g["unexpected_lapses"], 0,
        "a lapse that was not due arrived: {line}"
    );
    assert_eq!(g["raised_after_due"], false, "{line}");
    for group in ["steady", "burst", "backlog", "all"] {
        let l = &g["lateness"][group];
        if group == "steady" && l.is_null() {
            continue;
        }
        assert_eq!(l["arrived"], l["due"], "{group}: {line}");
        assert!(l["p50_s"].as_f64().is_some(), "{group} p50: {line}");
        assert!(
            l["max_s"].as_f64() >= l["p99_s"].as_f64(),
            "{group}: {line}"
        );
    }
    // The function runs were counted from the stack's REPORT lines, and priced.
    assert!(
        g["function_runs"]["api"]["runs"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{line}"
    );
    assert!(
        g["cost"]["usd_per_million_expectations"]
            .as_f64()
            .is_some_and(|c| c > 0.0),
        "{line}"
    );
}
