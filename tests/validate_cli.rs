//! `a2a-watcher validate` accepts the shipped examples and refuses each broken one under
//! examples/invalid/ with the message naming the field at fault (issue 14).

use std::process::Command;

const URI: &str = "https://rsaxb.com/a2a/expectations/v1";

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run a2a-watcher");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn the_shipped_examples_are_valid() {
    let (code, out) = run(&["validate", "card", "examples/booking-card.json"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("a valid card"), "{out}");
    let (code, out) = run(&[
        "validate",
        "artifact",
        "examples/booking-artifact.json",
        "--card",
        "examples/booking-card.json",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("a valid artifact"), "{out}");
}

#[test]
fn each_broken_example_is_refused_naming_the_field() {
    let ext = "capabilities.extensions[0]";
    let exp = format!("artifactUpdate.artifact.metadata[\"{URI}\"].expectations[0]");
    let cases: Vec<(&str, String)> = vec![
        (
            "card-lapse-skill-not-on-card.json",
            format!("error: {ext}.params.lapseSkill: \"chase_lapse\" does not name a skill on the card"),
        ),
        (
            "card-placeholder-describes.json",
            format!("error: {ext}.params.kinds[1].describes: \"TODO\" is a placeholder"),
        ),
        (
            "card-required-true.json",
            format!("error: {ext}.required: must be false"),
        ),
        (
            "card-keeps-time-missing.json",
            format!("error: {ext}.params.keepsTime: is required"),
        ),
        (
            "artifact-due-at-without-offset.json",
            format!("error: {exp}.dueAt: \"2026-09-10T20:15:00\" has no offset"),
        ),
        (
            "artifact-horizon-before-due.json",
            format!("error: {exp}.horizon: 2026-09-09T00:00:00Z is earlier than dueAt 2026-09-10T20:15:00Z"),
        ),
        (
            "artifact-satisfied-by-missing.json",
            format!("error: {exp}.satisfiedBy: is required"),
        ),
        ("artifact-grace-in-months.json", format!("error: {exp}.grace: ")),
        (
            "artifact-fact-without-observed-at.json",
            format!("error: artifactUpdate.artifact.metadata[\"{URI}\"].facts[0].observedAt: is required"),
        ),
        (
            "artifact-kind-not-on-card.json",
            format!("error: {exp}.kind: \"shipment.customs\" is not declared on the agent's card"),
        ),
    ];
    let shipped = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/invalid"))
        .unwrap()
        .count();
    assert_eq!(shipped, cases.len(), "every broken example has a case");
    for (file, expected) in cases {
        let path = format!("examples/invalid/{file}");
        let args: Vec<&str> = if file.starts_with("card-") {
            vec!["validate", "card", &path]
        } else {
            vec![
                "validate",
                "artifact",
                &path,
                "--card",
                "examples/booking-card.json",
            ]
        };
        let (code, out) = run(&args);
        assert_eq!(code, 1, "{file}: {out}");
        assert!(
            out.contains(&expected),
            "{file}: expected {expected:?} in\n{out}"
        );
        assert!(out.contains("not a valid"), "{file}: {out}");
    }
    // grace in months names the reason.
    let (_, out) = run(&[
        "validate",
        "artifact",
        "examples/invalid/artifact-grace-in-months.json",
    ]);
    assert!(out.contains("months"), "{out}");
}

#[test]
fn an_unreadable_file_fails() {
    let (code, out) = run(&["validate", "card", "examples/no-such-card.json"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("cannot read examples/no-such-card.json"),
        "{out}"
    );
}

#[test]
fn a_file_giving_a_member_twice_is_refused_naming_it() {
    let dir = std::env::temp_dir().join(format!("validate-cli-twice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let card = dir.join("card.json");
    let text = include_str!("../examples/booking-card.json");
    std::fs::write(&card, text.replacen('{', r#"{"name": "Other agent","#, 1)).unwrap();
    let (code, out) = run(&["validate", "card", card.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("card.json: the member \"name\" appears twice"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reader that goes away (`a2a-watcher validate … | head -0`) ends the command quietly: no
/// panic, nothing on stderr. The reader here exits at once; the command writes after it has.
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let bin = env!("CARGO_BIN_EXE_a2a-watcher");
    let card = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/booking-card.json");
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"(sleep 0.3; "$0" validate card "$1") | true"#)
        .arg(bin)
        .arg(card)
        .output()
        .expect("sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "quiet: {stderr}");
}
