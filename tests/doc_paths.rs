//! Every path README.md and docs/*.md cite exists in the repository: a path under one of the
//! repository's top-level folders (`docs/specs/expectations-v1.md`,
//! `shared/watcher-http/src/lib.rs`), and every relative Markdown link target. A note the docs
//! rely on that is not in the repository is cited by its title, never by a path.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Files the docs name that the watcher makes when it runs (never checked in).
const MADE_WHEN_RUN: &[&str] = &["examples/watcher.db"];

/// The documents checked: README.md and every Markdown file directly in docs/.
fn documents() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// `(line, path)` of every cited path in `text`: tokens starting with a top-level folder of the
/// repository, and relative link targets `](target)`.
fn cited(text: &str) -> Vec<(usize, String)> {
    let folder = regex::Regex::new(
        r"(?:^|[^A-Za-z0-9_./-])((?:\.\./)*(?:docs|shared|functions|tests|infra|examples|fuzz|src|\.ci)/[A-Za-z0-9_.+/-]*[A-Za-z0-9_/+-])",
    )
    .expect("regex");
    let link = regex::Regex::new(r"\]\(([^)#\s]+)").expect("regex");
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for c in folder.captures_iter(text) {
        let m = c.get(1).expect("group 1");
        out.push((line_of(m.start()), m.as_str().to_owned()));
    }
    for c in link.captures_iter(text) {
        let m = c.get(1).expect("group 1");
        if !m.as_str().contains("://") && !m.as_str().starts_with("mailto:") {
            out.push((line_of(m.start()), m.as_str().to_owned()));
        }
    }
    out
}

fn exists(doc: &Path, cited: &str) -> bool {
    MADE_WHEN_RUN.contains(&cited)
        || root().join(cited).exists()
        || doc.parent().is_some_and(|d| d.join(cited).exists())
}

#[test]
fn every_path_the_docs_cite_exists() {
    let mut dangling = Vec::new();
    let mut seen = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a readable document");
        for (line, path) in cited(&text) {
            seen += 1;
            if !exists(&doc, &path) {
                let name = doc
                    .strip_prefix(root())
                    .unwrap_or(&doc)
                    .display()
                    .to_string();
                dangling.push(format!("{name}:{line}: {path}"));
            }
        }
    }
    assert!(
        seen > 50,
        "the scan must find the docs' paths; found {seen}"
    );
    assert!(
        dangling.is_empty(),
        "paths cited in the docs that are not in the repository (cite a note that is not in the repository by its title):\n{}",
        dangling.join("\n")
    );
}

#[test]
fn the_scan_finds_paths_and_links() {
    let found: Vec<String> = cited(
        "see docs/specs/gone.md and (`shared/x/src/lib.rs`), [a](../b.md), [w](https://x.example/docs/a)\nnot a/docs/c",
    )
    .into_iter()
    .map(|(_, p)| p)
    .collect();
    assert_eq!(
        found,
        ["docs/specs/gone.md", "shared/x/src/lib.rs", "../b.md"]
    );
    assert!(!exists(&root().join("README.md"), "docs/specs/gone.md"));
    assert!(exists(
        &root().join("README.md"),
        "docs/specs/expectations-v1.md"
    ));
}
