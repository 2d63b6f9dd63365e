//! The book under `docs/`: its table of contents (`docs/SUMMARY.md`) names every page and only
//! pages that exist, every JSON example parses, the README stays a front door (about 10 KB), and
//! no user document cites an issue number.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::{documents, markdown_under, root};

/// The pages `docs/SUMMARY.md` links, as paths under docs/.
fn summary_pages() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("docs/SUMMARY.md")).expect("docs/SUMMARY.md");
    let link = regex::Regex::new(r"\]\(([^)#\s]+)\)").expect("regex");
    link.captures_iter(&text).map(|c| c[1].to_owned()).collect()
}

#[test]
fn the_table_of_contents_names_every_page_and_only_pages_that_exist() {
    let docs = root().join("docs");
    let listed: BTreeSet<String> = summary_pages().into_iter().collect();
    let missing: Vec<&String> = listed.iter().filter(|p| !docs.join(p).is_file()).collect();
    assert!(
        missing.is_empty(),
        "docs/SUMMARY.md names pages that do not exist: {missing:?}"
    );
    let pages: BTreeSet<String> = markdown_under(&docs)
        .into_iter()
        .filter_map(|p| {
            p.strip_prefix(&docs)
                .ok()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
        })
        .filter(|p| p != "SUMMARY.md")
        .collect();
    let unlisted: Vec<&String> = pages.difference(&listed).collect();
    assert!(
        unlisted.is_empty(),
        "pages under docs/ that docs/SUMMARY.md does not name (the book would not show them): {unlisted:?}"
    );
}

/// `(line, block)` of every fenced ```json block of `text`.
fn json_blocks(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        match &mut current {
            None if fence.starts_with("```json") => current = Some((i + 1, String::new())),
            Some(_) if fence.starts_with("```") => out.extend(current.take()),
            Some((_, block)) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn every_json_example_parses() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a readable document");
        for (line, block) in json_blocks(&text) {
            seen += 1;
            // One JSON value, or JSON Lines (one value a line, as `replay` prints).
            let parsed = serde_json::from_str::<serde_json::Value>(&block).or_else(|e| {
                let lines = block.lines().filter(|l| !l.trim().is_empty());
                lines
                    .map(serde_json::from_str::<serde_json::Value>)
                    .collect::<Result<Vec<_>, _>>()
                    .map(|_| serde_json::Value::Null)
                    .map_err(|_| e)
            });
            if let Err(e) = parsed {
                let name = doc
                    .strip_prefix(root())
                    .unwrap_or(&doc)
                    .display()
                    .to_string();
                bad.push(format!("{name}:{line}: {e}"));
            }
        }
    }
    assert!(
        seen >= 5,
        "the scan must find the docs' JSON examples; found {seen}"
    );
    assert!(
        bad.is_empty(),
        "JSON examples that do not parse:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_json_reader_finds_fenced_blocks() {
    let blocks = json_blocks("a\n```json\n{\"a\": 1}\n```\n```sh\nx\n```\n  ```json\n[1,\n```\n");
    assert_eq!(
        blocks,
        [(2, "{\"a\": 1}\n".to_owned()), (8, "[1,\n".to_owned())]
    );
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    assert!(
        readme.len() <= 12 * 1024,
        "README.md is {} bytes: keep it to the front door (about 10 KB) and move the rest to the book",
        readme.len()
    );
    for must in [
        "cargo run -- demo",
        "bash infra/test-all.sh",
        "## Wire your agent",
    ] {
        assert!(readme.contains(must), "README.md must show {must:?}");
    }
    let first_screen: String = readme.lines().take(80).collect::<Vec<_>>().join("\n");
    assert!(
        first_screen.contains("## Wire your agent"),
        "\"Wire your agent\" must be on the README's first screen (its first 80 lines)"
    );
}

#[test]
fn no_user_document_cites_an_issue_number() {
    let issue = regex::Regex::new(r"(?i)\bissues? #?\d+\b").expect("regex");
    let mut found = Vec::new();
    for doc in documents() {
        if doc.starts_with(root().join("docs/specs"))
            || doc.starts_with(root().join("docs/contracts"))
        {
            continue; // the specifications and contracts are the team's, kept as they are
        }
        let text = std::fs::read_to_string(&doc).expect("a readable document");
        for (i, line) in text.lines().enumerate() {
            if let Some(m) = issue.find(line) {
                let name: PathBuf = doc.strip_prefix(root()).unwrap_or(&doc).to_path_buf();
                found.push(format!("{}:{}: {}", name.display(), i + 1, m.as_str()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "user documents cite issue numbers:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_login_cookie_lasts_what_the_docs_say() {
    let page = std::fs::read_to_string(root().join("docs/howto/operator-view.md"))
        .expect("docs/howto/operator-view.md");
    let secs = watcher_http::web::COOKIE_MAX_AGE_SECS;
    assert_eq!(secs % 3600, 0, "the docs state the lifetime in hours");
    let said = format!("lasts {} hours (`Max-Age={secs}`)", secs / 3600);
    assert!(
        page.contains(&said),
        "docs/howto/operator-view.md must say the cookie {said}"
    );
}

#[test]
fn the_tables_the_docs_show_fit_a_hundred_columns() {
    let mut wide = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a readable document");
        for (i, line) in text.lines().enumerate() {
            let boxed = line.starts_with(['┌', '│', '╞', '└']);
            if boxed && line.chars().count() > 100 {
                let name = doc
                    .strip_prefix(root())
                    .unwrap_or(&doc)
                    .display()
                    .to_string();
                wide.push(format!(
                    "{name}:{}: {} columns",
                    i + 1,
                    line.chars().count()
                ));
            }
        }
    }
    assert!(
        wide.is_empty(),
        "tables wider than 100 columns:\n{}",
        wide.join("\n")
    );
}
