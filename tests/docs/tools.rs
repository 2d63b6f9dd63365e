//! The commands the docs give run with what the README's own commands install: no README
//! command starts with a tool that only a script of `infra/` installs, into the project's own
//! folders (`mdbook` in `.tools/`, `cfn-lint` in `.venv/`; the script is the command), and every
//! `bash infra/SCRIPT WORD` the docs show is a use its script's header lists.

use std::collections::BTreeSet;

use super::{documents, root};

/// The tools the scripts of `infra/` install into the project's own folders (`cargo install
/// NAME --root .tools`, `pip install "NAME==…"` into a venv): not on anyone's PATH.
fn installed_by_scripts() -> BTreeSet<String> {
    let cargo = regex::Regex::new(r"cargo install ([a-z0-9_-]+)").expect("regex");
    let pip = regex::Regex::new(r#"pip"? install [^\n]*?"([a-z0-9_-]+)(?:\[[^\]]*\])?=="#)
        .expect("regex");
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("infra"))
        .expect("infra/")
        .flatten()
    {
        let p = entry.path();
        if p.extension().is_some_and(|x| x == "sh") {
            let text = std::fs::read_to_string(&p).expect("a readable script");
            for re in [&cargo, &pip] {
                out.extend(re.captures_iter(&text).map(|c| c[1].to_owned()));
            }
        }
    }
    out
}

/// `(line, command)` of every command `text` shows: each inline code span and each line of a
/// fenced `sh` block, with two words at least.
fn commands(text: &str) -> Vec<(usize, String)> {
    let span = regex::Regex::new(r"`([^`\n]+)`").expect("regex");
    let mut out = Vec::new();
    let mut shell = None::<bool>;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        if let Some(lang) = fence.strip_prefix("```") {
            shell = match shell {
                None => Some(matches!(lang.trim(), "sh" | "bash" | "shell" | "console")),
                Some(_) => None,
            };
            continue;
        }
        match shell {
            Some(true) => {
                let l = line.trim_start().trim_start_matches("$ ");
                out.push((i + 1, l.to_owned()));
            }
            Some(false) => {}
            None => out.extend(span.captures_iter(line).map(|c| (i + 1, c[1].to_owned()))),
        }
    }
    out.retain(|(_, c)| c.split_whitespace().count() >= 2);
    out
}

#[test]
fn the_readme_runs_no_tool_only_a_script_installs() {
    let tools = installed_by_scripts();
    for t in ["mdbook", "cfn-lint", "checkov", "moto"] {
        assert!(tools.contains(t), "the scan reads the scripts: {tools:?}");
    }
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let bad: Vec<String> = commands(&readme)
        .into_iter()
        .filter(|(_, c)| {
            let first = c.split_whitespace().next().unwrap_or_default();
            tools.contains(first)
        })
        .map(|(line, c)| format!("README.md:{line}: `{c}`"))
        .collect();
    assert!(
        bad.is_empty(),
        "the README runs tools nothing it runs installs (run them through their infra/ script):\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_infra_script_use_the_docs_show_is_one_its_header_lists() {
    let use_of =
        regex::Regex::new(r"bash infra/([a-z0-9_-]+\.sh) ([a-z][a-z0-9_-]*)\b").expect("regex");
    let mut bad = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a readable document");
        for (line, c) in commands(&text) {
            for u in use_of.captures_iter(&c) {
                seen += 1;
                let script = root().join("infra").join(&u[1]);
                let header = std::fs::read_to_string(&script).unwrap_or_default();
                let listed = format!("#   bash infra/{} {}", &u[1], &u[2]);
                if !header.lines().any(|l| l.starts_with(&listed)) {
                    let name = doc.strip_prefix(root()).unwrap_or(&doc).display();
                    bad.push(format!(
                        "{name}:{line}: `{}` (infra/{} lists no such use)",
                        &u[0], &u[1]
                    ));
                }
            }
        }
    }
    assert!(
        seen >= 1,
        "the scan must find the docs' uses of infra scripts"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_command_reader_finds_spans_and_shell_lines() {
    let found = commands(
        "Read it: `mdbook serve docs`, or `serve`.\n```sh\n$ bash infra/book.sh serve\n```\n\
         ```toml\nkey = \"not a command\"\n```\n",
    );
    assert_eq!(
        found,
        [
            (1, "mdbook serve docs".to_owned()),
            (3, "bash infra/book.sh serve".to_owned()),
        ]
    );
}
