//! The documentation: the README and the book under `docs/` (mdBook; `docs/SUMMARY.md` is its
//! table of contents). Every cited path exists ([`paths`]), every route is in the routes table
//! ([`routes`]), every page is in the book and every JSON example parses ([`book`]), the
//! command reference is the binary's own `--help` ([`cli`]), every configuration file reads and
//! every file a command is handed is in the repository ([`configs`]), every section a reference
//! names (`README "Run it"`, `operating.md#delivering-lapse-tasks`), in the docs or the code,
//! exists ([`sections`]), every `serve` log line the docs quote is one `serve` prints
//! ([`log_lines`]), and the README runs no tool that only a script installs ([`tools`]).

use std::path::PathBuf;

#[path = "docs/book.rs"]
mod book;
#[path = "docs/cli.rs"]
mod cli;
#[path = "docs/configs.rs"]
mod configs;
#[path = "docs/log_lines.rs"]
mod log_lines;
#[path = "docs/paths.rs"]
mod paths;
#[path = "docs/routes.rs"]
mod routes;
#[path = "docs/sections.rs"]
mod sections;
#[path = "docs/tools.rs"]
mod tools;

/// The repository's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every Markdown file under `dir`, recursively, sorted; not in what is installed or built
/// (`node_modules`, `target`, hidden folders such as `.venv`), which is not ours.
fn markdown_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a readable folder").flatten() {
            let p = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if p.is_dir() {
                if name != "node_modules" && name != "target" && !name.starts_with('.') {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The user documents: README.md, CHANGELOG.md, every page of the book (every Markdown file
/// under docs/) and each example's README.
fn documents() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md"), root().join("CHANGELOG.md")];
    out.extend(markdown_under(&root().join("docs")));
    out.extend(
        markdown_under(&root().join("examples"))
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n == "README.md")),
    );
    out
}
