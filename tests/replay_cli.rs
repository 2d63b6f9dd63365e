//! `a2a-watcher replay` as a user runs it (contracts/replay.md): JSON Lines on stdout, exit 0
//! when the scenario ran, exit 2 naming the step for a malformed one.

use std::process::Command;

use serde_json::Value;

fn replay(path: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(["replay", path])
        .output()
        .expect("run a2a-watcher");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_worked_example_prints_four_lapse_tasks_then_the_record() {
    let (code, stdout, stderr) = replay(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/worked-example.json"
    ));
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let ids: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "lapseTask")
        .map(|l| {
            l["request"]["message"]["messageId"]
                .as_str()
                .expect("messageId")
        })
        .collect();
    assert_eq!(
        ids,
        [
            "lapse:exp-01J8Q0MANIFEST:overdue:2026-09-10T20:15:00Z",
            "lapse:exp-01J8Q0MANIFEST:skipped:2026-09-10T20:15:00Z",
            "lapse:exp-01J8Q0ARRIVE:overdue:2026-09-11T04:26:00Z",
            "lapse:exp-01J8Q0ARRIVE:stalled:2026-09-11T04:26:00Z",
        ]
    );
    let last = lines.last().expect("a last line");
    assert_eq!(last["type"], "record");
    assert_eq!(last["expectations"].as_array().map(Vec::len), Some(3));
}

#[test]
fn a_malformed_scenario_exits_2_naming_the_step() {
    let dir = std::env::temp_dir().join(format!("replay-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    let mut doc: Value =
        serde_json::from_str(include_str!("../examples/worked-example.json")).unwrap();
    doc["steps"][1]["at"] = Value::String("2026-09-09T00:00:00Z".into());
    std::fs::write(&path, doc.to_string()).unwrap();
    let (code, stdout, stderr) = replay(path.to_str().unwrap());
    assert_eq!(code, 2);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("steps[1].at"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_scenario_giving_a_member_twice_exits_2_naming_it() {
    let dir = std::env::temp_dir().join(format!("replay-cli-twice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("twice.json");
    let text = include_str!("../examples/worked-example.json");
    // `until` given twice: serde_json alone would keep the second and run a shorter scenario.
    let twice = text.replacen('{', r#"{"until": "2026-09-10T01:00:00Z","#, 1);
    std::fs::write(&path, twice).unwrap();
    let (code, stdout, stderr) = replay(path.to_str().unwrap());
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("twice.json: the member \"until\" appears twice"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
