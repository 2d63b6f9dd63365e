//! Every reference to a section of a document exists: a link to an anchor (`README.md#run-it`,
//! `../howto/operating.md#delivering-lapse-tasks`), a section named by its title after the
//! document (`README "Run it"`, `README.md, "Deploy to AWS"`, `docs/dynamodb.md "Leased sends"`,
//! the README's "Run it" section), in the documents and in the code's comments, scripts and
//! templates alike. A section renamed or removed fails here until every reference follows.
//!
//! A README section is one of its headings. Another document's may also be a labelled
//! paragraph (`- **Bearer token or signature.** …`, `- Outbound: …`) or, for a quotation, the
//! words themselves. A title may be the start of the heading's (`"Leased sends"` for "Leased
//! sends and their claims"). A document the repository does not hold (a team note) is not
//! checked here.

use std::path::{Path, PathBuf};

use super::root;

/// The files whose text may name a section: documents, code, scripts, templates. Not what is
/// installed or built (`target`, `node_modules`, hidden folders other than `.ci`), not the
/// specifications (the team's, cited as they are) and not the changelog (history names
/// sections as they were).
fn citing_files() -> Vec<PathBuf> {
    const TEXT: &[&str] = &[
        "rs", "md", "sh", "py", "toml", "yaml", "yml", "ts", "js", "sql", "html",
    ];
    let mut out = Vec::new();
    let mut stack = vec![root()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a readable folder").flatten() {
            let p = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                let skip = name == "target"
                    || name == "node_modules"
                    || (name.starts_with('.') && name != ".ci")
                    || p == root().join("docs/specs");
                if !skip {
                    stack.push(p);
                }
            } else {
                let text = p.parent() == Some(&root().join(".ci"))
                    || p.extension()
                        .is_some_and(|x| TEXT.contains(&x.to_string_lossy().as_ref()));
                if text && p != root().join("CHANGELOG.md") {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// Every Markdown document of the repository a reference may resolve to.
fn markdown_files() -> Vec<PathBuf> {
    citing_files()
        .into_iter()
        .chain(std::iter::once(root().join("CHANGELOG.md")))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect()
}

/// The document `name` (as cited in `from`) is: `README`/`README.md` the repository's README;
/// a path from the citing file's folder or from the root, or the one document whose path ends
/// so; a bare file name, the one document so named. `None` when none (or more than one) is.
fn resolve(name: &str, from: &Path, docs: &[PathBuf]) -> Option<PathBuf> {
    if name == "README" || name == "README.md" {
        return Some(root().join("README.md"));
    }
    let name = name.trim_start_matches("./");
    for base in [from.parent().unwrap_or(&root()), &root()] {
        let p = base.join(name);
        if p.is_file() {
            return p.canonicalize().ok();
        }
    }
    let suffix = format!("/{}", name.trim_start_matches("../"));
    let mut found = docs
        .iter()
        .filter(|d| d.to_string_lossy().ends_with(&suffix));
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one.clone()),
        _ => None,
    }
}

/// The document's section titles: its headings (outside fenced code), in order.
fn headings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            let title = line.trim_start_matches('#');
            if title.starts_with(' ') {
                out.push(title.trim().to_owned());
            }
        }
    }
    out
}

/// The labels of a document's paragraphs: `**Label**` opening a line or a list item, and
/// `- Label:` opening a list item.
fn labels(text: &str) -> Vec<String> {
    let bold = regex::Regex::new(r"^\s*(?:[-*] )?\*\*([^*]+)\*\*").expect("regex");
    let item = regex::Regex::new(r"^\s*[-*] ([^:*`]{2,80}):").expect("regex");
    text.lines()
        .flat_map(|l| {
            let b = bold.captures(l).map(|c| c[1].to_owned());
            let i = item.captures(l).map(|c| c[1].to_owned());
            b.into_iter().chain(i)
        })
        .collect()
}

/// A title as compared: lower case, without Markdown's marks and a closing full stop.
fn plain(s: &str) -> String {
    s.replace(['`', '*', '_'], "")
        .trim()
        .trim_end_matches('.')
        .to_lowercase()
}

/// A heading's anchor, as mdBook and GitHub make it: lower case; letters, digits, `-` and `_`
/// kept; each space a `-`; everything else dropped.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some('-')
            } else if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_ascii_lowercase())
            } else {
                None
            }
        })
        .collect::<String>()
        .to_lowercase()
}

/// A reference to a section of document `doc`: by `title`, or by `anchor`.
#[derive(Debug, PartialEq, Eq)]
enum Section {
    Title(String),
    Anchor(String),
}

/// `(line, document as cited, section)` of every section reference in `text`.
fn references(text: &str) -> Vec<(usize, String, Section)> {
    let doc = r"((?:\.\./)*[A-Za-z0-9_./-]*?(?:README|[A-Za-z0-9_-]+\.md))";
    let titled = regex::Regex::new(&format!(
        r#"{doc}`?(?:'s)?,?\s+(?:section\s+)?["“]([^"”\n]{{2,80}})["”]"#
    ))
    .expect("regex");
    let unquoted =
        regex::Regex::new(r"\b(README(?:\.md)?)'s ([A-Z][^.,;:\x22\n]{1,60}?) section\b")
            .expect("regex");
    let anchored = regex::Regex::new(&format!(r"{doc}#([A-Za-z0-9_-]+)")).expect("regex");
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    // (offset, line, document, section): in the order they stand in the text.
    let mut out = Vec::new();
    for c in titled.captures_iter(text) {
        let at = c.get(0).expect("match").start();
        out.push((
            at,
            line_of(at),
            c[1].to_owned(),
            Section::Title(c[2].to_owned()),
        ));
    }
    for c in unquoted.captures_iter(text) {
        let at = c.get(0).expect("match").start();
        out.push((
            at,
            line_of(at),
            c[1].to_owned(),
            Section::Title(c[2].to_owned()),
        ));
    }
    for c in anchored.captures_iter(text) {
        let at = c.get(0).expect("match").start();
        out.push((
            at,
            line_of(at),
            c[1].to_owned(),
            Section::Anchor(c[2].to_owned()),
        ));
    }
    out.sort_by_key(|(at, _, _, _)| *at);
    out.into_iter().map(|(_, l, d, s)| (l, d, s)).collect()
}

/// Whether `section` is a section of the document `target` whose text is `text`.
fn has(target: &Path, text: &str, section: &Section) -> bool {
    let heads = headings(text);
    match section {
        Section::Anchor(a) => heads.iter().any(|h| {
            let id = anchor(h);
            // A repeated heading's anchor takes `-1`, `-2`, … after the first.
            *a == id
                || a.strip_prefix(id.as_str())
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
        }),
        Section::Title(t) => {
            let t = plain(t);
            let readme = target == root().join("README.md");
            heads.iter().any(|h| plain(h).starts_with(&t))
                || (!readme && labels(text).iter().any(|l| plain(l).starts_with(&t)))
                || (!readme && text.to_lowercase().contains(&t))
        }
    }
}

#[test]
fn every_section_a_reference_names_exists() {
    let docs = markdown_files();
    let mut dangling = Vec::new();
    let mut checked = 0;
    for file in citing_files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (line, doc, section) in references(&text) {
            let Some(target) = resolve(&doc, &file, &docs) else {
                continue;
            };
            let Ok(target_text) = std::fs::read_to_string(&target) else {
                continue;
            };
            checked += 1;
            if !has(&target, &target_text, &section) {
                let name = file
                    .strip_prefix(root())
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                let shown = match &section {
                    Section::Title(t) => format!("{doc} \"{t}\""),
                    Section::Anchor(a) => format!("{doc}#{a}"),
                };
                let sections = headings(&target_text)
                    .iter()
                    .filter(|h| !h.starts_with('`') || target == root().join("README.md"))
                    .take(12)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" | ");
                dangling.push(format!(
                    "{name}:{line}: {shown}: no such section (its headings: {sections})"
                ));
            }
        }
    }
    assert!(
        checked > 100,
        "the scan must find the repository's section references; found {checked}"
    );
    assert!(
        dangling.is_empty(),
        "references to sections that do not exist (name the section as it is titled now):\n{}",
        dangling.join("\n")
    );
}

#[test]
fn the_scan_finds_section_references_and_checks_them() {
    let found = references(
        "see README \"Run it\" and (README.md, \"Deploy to AWS\"), the README's Tell a person \
         section,\n[ops](../howto/operating.md#delivering-lapse-tasks) and \
         `docs/dynamodb.md` \"Leased sends\"; not a \"quote\" alone.",
    );
    let title = |s: &str| Section::Title(s.to_owned());
    assert_eq!(
        found,
        [
            (1, "README".to_owned(), title("Run it")),
            (1, "README.md".to_owned(), title("Deploy to AWS")),
            (1, "README".to_owned(), title("Tell a person")),
            (
                2,
                "../howto/operating.md".to_owned(),
                Section::Anchor("delivering-lapse-tasks".to_owned())
            ),
            (2, "docs/dynamodb.md".to_owned(), title("Leased sends")),
        ]
    );
    let readme = root().join("README.md");
    let text = "# A\n\n## Run it\n\n```sh\n# Not a heading\n```\n\n## Tell a person (§13.1)\n\
                \n- **Bearer token or signature.** Words.\n";
    assert!(has(&readme, text, &title("Run it")));
    assert!(has(&readme, text, &title("Tell a person")));
    assert!(!has(&readme, text, &title("Not a heading")));
    assert!(!has(&readme, text, &title("--help")));
    // A README section is a heading; another document's may be a labelled paragraph.
    assert!(!has(&readme, text, &title("Bearer token or signature")));
    let other = root().join("docs/interpretation.md");
    assert!(has(&other, text, &title("Bearer token or signature")));
    assert!(has(
        &readme,
        text,
        &Section::Anchor("tell-a-person-131".to_owned())
    ));
    assert!(!has(&readme, text, &Section::Anchor("run".to_owned())));
    assert_eq!(
        anchor("Notification channels (expectations-v1 §13.1)"),
        "notification-channels-expectations-v1-131"
    );
    let docs = markdown_files();
    let from = root().join("docs/howto/operating-aws.md");
    assert_eq!(
        resolve("operating.md", &from, &docs),
        root().join("docs/howto/operating.md").canonicalize().ok()
    );
    assert_eq!(
        resolve("contracts/serve.md", &root().join("src/main.rs"), &docs),
        Some(root().join("docs/contracts/serve.md"))
    );
    assert_eq!(resolve("README", &from, &docs), Some(readme));
}
