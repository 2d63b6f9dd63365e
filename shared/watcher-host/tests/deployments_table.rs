//! `docs/deployments.md`'s table of guarantees is the declared service lists
//! (`watcher_host::services::SERVE` and `AWS`), rendered by `watcher_host::services::table`:
//! this test fails when the two differ and prints the table to put there;
//! `UPDATE_DOCS=1 cargo test -p watcher-host --test deployments_table` writes it.

use std::path::PathBuf;

fn doc() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/deployments.md")
}

/// The document split around its table: the text before it, the table, the text after it. The
/// table is the first run of lines starting with `| service |` and then `|`.
fn split(text: &str) -> (String, String, String) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("| service |"))
        .expect("docs/deployments.md has a table starting with `| service |`");
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
    let path = doc();
    let text = std::fs::read_to_string(&path).expect("docs/deployments.md");
    let (before, table, after) = split(&text);
    let expected = watcher_host::services::table();
    if table == expected {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, format!("{before}{expected}{after}")).expect("write the table");
        return;
    }
    panic!(
        "docs/deployments.md's table differs from the declared service lists \
         (shared/watcher-host/src/services.rs); put this table there, or run \
         `UPDATE_DOCS=1 cargo test -p watcher-host --test deployments_table`:\n\n{expected}"
    );
}
