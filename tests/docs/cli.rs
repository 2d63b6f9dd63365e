//! The command reference (`docs/reference/cli.md`) ends with every command's `--help`, as the
//! binary prints it: generated here, so that it cannot drift (`UPDATE_DOCS=1 cargo test --test
//! docs` rewrites it; without it the test fails when the page is stale).

use std::process::Command;

/// The line after which `docs/reference/cli.md` is generated.
const MARK: &str = "<!-- Everything below is generated from the binary's --help by `UPDATE_DOCS=1 cargo test --test it docs::`. -->";

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
        "docs/reference/cli.md is stale: run `UPDATE_DOCS=1 cargo test --test it docs::`"
    );
}

#[test]
fn subcommands_are_read_from_the_commands_section() {
    let help = "Usage: x\n\nCommands:\n  serve    Run\n           more\n  probe    Probe\n  help     Print\n\nOptions:\n  -h\n";
    assert_eq!(subcommands(help), ["serve", "probe"]);
}

/// Every command line of the docs' shell examples (```sh, ```bash, ```console; in a console block
/// only the `$ ` lines), continuation lines joined and comments dropped, with where it ends.
pub(super) fn shell_lines() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for doc in super::documents() {
        let name = doc
            .strip_prefix(super::root())
            .unwrap_or(&doc)
            .display()
            .to_string();
        let text = std::fs::read_to_string(&doc).expect("a readable document");
        let mut fence: Option<&str> = None;
        let mut joined = String::new();
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if let Some(lang) = trimmed.strip_prefix("```") {
                fence = match fence {
                    None => Some(if lang.starts_with("console") {
                        "console"
                    } else if ["sh", "bash", "shell"].iter().any(|l| lang.starts_with(l)) {
                        "sh"
                    } else {
                        "other"
                    }),
                    Some(_) => None,
                };
                continue;
            }
            let command = match fence {
                Some("sh") => trimmed,
                Some("console") => match trimmed.strip_prefix("$ ") {
                    Some(c) => c,
                    None => continue,
                },
                _ => continue,
            };
            // A comment line, or the comment after a command.
            let command = command.split(" # ").next().unwrap_or_default();
            if command.starts_with('#') {
                continue;
            }
            joined.push_str(command.trim_end_matches('\\'));
            if command.ends_with('\\') {
                joined.push(' ');
                continue;
            }
            out.push((format!("{name}:{}", i + 1), std::mem::take(&mut joined)));
        }
    }
    out
}

/// The `a2a-watcher` command lines of the docs' shell examples, each as the words after
/// `a2a-watcher` (or `cargo run [-q] [--release] --`), with where it is.
fn documented_commands() -> Vec<(String, Vec<String>)> {
    let invocation = regex::Regex::new(
        r"(?:^|[\s;&|(])(?:a2a-watcher|cargo run(?: -q)?(?: --release)? --)\s+(.*)$",
    )
    .expect("regex");
    shell_lines()
        .into_iter()
        .filter_map(|(at, line)| {
            let c = invocation.captures(&line)?;
            let words = c[1]
                .split_whitespace()
                .take_while(|w| !["&", "&&", "|", ";", ">", "2>&1"].contains(w))
                .map(str::to_owned)
                .collect();
            Some((at, words))
        })
        .collect()
}

#[test]
fn every_command_the_docs_show_is_one_the_binary_takes() {
    let commands = documented_commands();
    assert!(
        commands.len() >= 10,
        "the scan must find the docs' commands; found {}",
        commands.len()
    );
    let mut wrong = Vec::new();
    let mut helps = std::collections::HashMap::new();
    for (at, words) in &commands {
        // The subcommand path: words that are subcommands of the one before.
        let mut path: Vec<&str> = Vec::new();
        let mut text = helps
            .entry(String::new())
            .or_insert_with(|| help(&[]))
            .clone();
        for w in words {
            if subcommands(&text).iter().any(|s| s == w) {
                path.push(w);
                let key = path.join(" ");
                text = helps.entry(key).or_insert_with(|| help(&path)).clone();
            } else {
                break;
            }
        }
        if path.is_empty() {
            wrong.push(format!(
                "{at}: `a2a-watcher {}`: no such command",
                words.join(" ")
            ));
            continue;
        }
        for w in words.iter().filter(|w| w.starts_with('-')) {
            let flag = w.split('=').next().unwrap_or_default();
            let known = text
                .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']')
                .any(|t| {
                    t == flag
                        || t.starts_with(&format!("{flag}="))
                        || t.starts_with(&format!("{flag}<"))
                });
            if !known {
                wrong.push(format!(
                    "{at}: `a2a-watcher {}`: {flag} is not an option of it",
                    path.join(" ")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "commands in the docs the binary does not take:\n{}",
        wrong.join("\n")
    );
}
