//! The command reference (`docs/reference/cli.md`) ends with every command's `--help`, as the
//! binary prints it: generated here, so that it cannot drift (`UPDATE_DOCS=1 cargo test --test
//! docs` rewrites it; without it the test fails when the page is stale).

use std::process::Command;

/// The line after which `docs/reference/cli.md` is generated.
const MARK: &str = "<!-- Everything below is generated from the binary's --help by `UPDATE_DOCS=1 cargo test --test docs`. -->";

/// `a2a-watcher {path} --help`, at a fixed width.
fn help(path: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(path)
        .arg("--help")
        .env("COLUMNS", "100")
        .env_remove("A2A_WATCHER_URL")
        .env_remove("A2A_WATCHER_TOKEN")
        .output()
        .expect("a2a-watcher runs");
    assert!(out.status.success(), "a2a-watcher {path:?} --help failed");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The subcommands a help text lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    let Some(start) = help.find("Commands:\n") else {
        return Vec::new();
    };
    help[start + "Commands:\n".len()..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   ")) // a description's continuation line
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The generated part of the page: one section per command, depth first.
fn generated() -> String {
    let mut out = String::new();
    let mut stack: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = stack.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        let name = if path.is_empty() {
            "a2a-watcher".to_owned()
        } else {
            format!("a2a-watcher {}", path.join(" "))
        };
        out.push_str(&format!(
            "\n### `{name}`\n\n```text\n{}\n```\n",
            text.trim_end()
        ));
        for sub in subcommands(&text).into_iter().rev() {
            let mut next = path.clone();
            next.push(sub);
            stack.push(next);
        }
    }
    out
}

#[test]
fn the_command_reference_is_the_binarys_help() {
    let path = super::root().join("docs/reference/cli.md");
    let page = std::fs::read_to_string(&path).expect("docs/reference/cli.md");
    let at = page
        .find(MARK)
        .expect("the generated part's mark in docs/reference/cli.md");
    let head = &page[..at + MARK.len()];
    let want = format!("{head}\n{}", generated());
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).expect("write docs/reference/cli.md");
        return;
    }
    assert!(
        page == want,
        "docs/reference/cli.md is stale: run `UPDATE_DOCS=1 cargo test --test docs`"
    );
}

#[test]
fn subcommands_are_read_from_the_commands_section() {
    let help = "Usage: x\n\nCommands:\n  serve    Run\n           more\n  probe    Probe\n  help     Print\n\nOptions:\n  -h\n";
    assert_eq!(subcommands(help), ["serve", "probe"]);
}
