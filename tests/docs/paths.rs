//! Every path the user documents cite exists in the repository: a path under one of the
//! repository's top-level folders (`docs/specs/expectations-v1.md`,
//! `shared/watcher-http/src/lib.rs`), from the repository's root or the document's folder; and
//! every relative Markdown link target, from the document's folder (as the book and a Git host
//! resolve it). A note the docs rely on that is not in the repository is cited by its title,
//! never by a path.

use std::path::Path;

use super::{documents, root};

/// Files the docs name that the watcher makes when it runs, or the test script installs (never
/// checked in).
const MADE_WHEN_RUN: &[&str] = &[
    "examples/watcher.db",
    "examples/typescript-agent/node_modules",
];

/// `(line, path)` of every cited path in `text`: tokens starting with a top-level folder of the
/// repository, and relative link targets `](target)`.
fn cited(text: &str) -> Vec<(usize, Cited)> {
    let folder = regex::Regex::new(
        r"(?:^|[^A-Za-z0-9_./-])((?:\.\./)*(?:docs|shared|functions|tests|infra|examples|fuzz|src|\.ci)/[A-Za-z0-9_.+/-]*[A-Za-z0-9_/+-])",
    )
    .expect("regex");
    let link = regex::Regex::new(r"\]\(([^)#\s]+)").expect("regex");
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for c in folder.captures_iter(text) {
        let m = c.get(1).expect("group 1");
        out.push((line_of(m.start()), Cited::Path(m.as_str().to_owned())));
    }
    for c in link.captures_iter(text) {
        let m = c.get(1).expect("group 1");
        // Site-absolute links (`/a2a/learnables/v1` in the specs) name the spec's web home.
        if !m.as_str().contains("://")
            && !m.as_str().starts_with("mailto:")
            && !m.as_str().starts_with('/')
        {
            out.push((line_of(m.start()), Cited::Link(m.as_str().to_owned())));
        }
    }
    out
}

/// What a document cites: a path named in its text, or a Markdown link's target.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cited {
    Path(String),
    Link(String),
}

impl Cited {
    fn as_str(&self) -> &str {
        match self {
            Cited::Path(p) | Cited::Link(p) => p,
        }
    }
}

fn exists(doc: &Path, cited: &Cited) -> bool {
    let from_doc = |p: &str| doc.parent().is_some_and(|d| d.join(p).exists());
    match cited {
        Cited::Path(p) => {
            MADE_WHEN_RUN.contains(&p.as_str()) || root().join(p).exists() || from_doc(p)
        }
        Cited::Link(p) => from_doc(p),
    }
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
                dangling.push(format!("{name}:{line}: {}", path.as_str()));
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
    .map(|(_, p)| p.as_str().to_owned())
    .collect();
    assert_eq!(
        found,
        ["docs/specs/gone.md", "shared/x/src/lib.rs", "../b.md"]
    );
    let readme = root().join("README.md");
    let page = root().join("docs/howto/operating.md");
    let path = |p: &str| Cited::Path(p.to_owned());
    let link = |p: &str| Cited::Link(p.to_owned());
    assert!(!exists(&readme, &path("docs/specs/gone.md")));
    assert!(exists(&readme, &path("docs/specs/expectations-v1.md")));
    // A cited path may be named from the root; a link resolves from the page, as the book does.
    assert!(exists(&page, &path("docs/specs/expectations-v1.md")));
    assert!(!exists(&page, &link("docs/specs/expectations-v1.md")));
    assert!(exists(&page, &link("../specs/expectations-v1.md")));
}
