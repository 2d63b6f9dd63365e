//! `docs/deployments.md`'s table of guarantees is the declared service lists
//! (`watcher_host::services::SERVE` and `AWS`), rendered by `watcher_host::services::table`, and
//! its table of functions is `watcher_host::functions::table`: these tests fail when a table
//! differs and print the table to put there;
//! `UPDATE_DOCS=1 cargo test -p watcher-host --test deployments_table` writes it.

use std::path::PathBuf;

fn doc() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/deployments.md")
}

/// The document split around one table: the text before it, the table, the text after it. The
/// table is the first run of lines starting with `header` and then `|`.
fn split(text: &str, header: &str) -> (String, String, String) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with(header))
        .unwrap_or_else(|| panic!("docs/deployments.md has a table starting with `{header}`"));
    let end = lines[start..]
        .iter()
        .position(|l| !l.starts_with('|'))
        .map_or(lines.len(), |n| start + n);
    (
        lines[..start].concat(),
        lines[start..end].concat(),
        lines[end..].concat(),
    )
}

#[test]
fn the_deployments_table_is_the_declared_service_lists() {
    check("| service |", &watcher_host::services::table());
}

/// The table of which function runs what is `watcher_host::functions::table`.
#[test]
fn the_functions_table_is_the_declared_hosting() {
    check("| function |", &watcher_host::functions::table());
}

fn check(header: &str, expected: &str) {
    let path = doc();
    let text = std::fs::read_to_string(&path).expect("docs/deployments.md");
    let (before, table, after) = split(&text, header);
    if table == expected {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, format!("{before}{expected}{after}")).expect("write the table");
        return;
    }
    panic!(
        "docs/deployments.md's table starting `{header}` differs from the declared lists \
         (shared/watcher-host/src/services.rs, functions.rs); put this table there, or run \
         `UPDATE_DOCS=1 cargo test -p watcher-host --test deployments_table`:\n\n{expected}"
    );
}
