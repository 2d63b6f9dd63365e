//! [`Cards`](watcher_runtime::store::Cards) on SQLite: agent cards and lifecycle descriptors ([`watcher_runtime::store::Cards`]).

use super::*;
use serde_json::Value;
use watcher_runtime::store::{CardKey, CardKind, Cards};

/// The SQL of one kind of kept document: its upsert (tenant, agent, [protocol version,]
/// document, instant), its keyed read (document, instant), and the instant's column as errors
/// name it.
struct Table {
    upsert: &'static str,
    select: &'static str,
    at: &'static str,
}

const AGENT_CARDS: Table = Table {
    upsert: "INSERT INTO agent_cards (tenant, agent, card, read_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (tenant, agent) DO UPDATE SET card = excluded.card, read_at = excluded.read_at",
    select: "SELECT card, read_at FROM agent_cards WHERE tenant = ?1 AND agent = ?2",
    at: "read_at",
};

const LIFECYCLE: Table = Table {
    upsert: "INSERT INTO lifecycle (tenant, agent, protocol_version, descriptor, probed_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (tenant, agent, protocol_version) DO UPDATE
             SET descriptor = excluded.descriptor, probed_at = excluded.probed_at",
    select: "SELECT descriptor, probed_at FROM lifecycle
             WHERE tenant = ?1 AND agent = ?2 AND protocol_version = ?3",
    at: "probed_at:",
};

/// The table of `key`'s kind and the row's key (tenant, agent, and the protocol version of a
/// lifecycle descriptor), owned for the connection's thread.
fn row_of(key: CardKey<'_>) -> (&'static Table, Vec<String>) {
    let mut row = vec![
        key.tenant.as_str().to_owned(),
        key.agent.as_str().to_owned(),
    ];
    match key.kind {
        CardKind::AgentCard => (&AGENT_CARDS, row),
        CardKind::Lifecycle(version) => {
            row.push(version.to_owned());
            (&LIFECYCLE, row)
        }
    }
}

#[async_trait]
impl Cards for SqliteStore {
    async fn keep(&self, key: CardKey<'_>, doc: &Value, at: Instant) -> Result<(), StoreError> {
        let (table, mut row) = row_of(key);
        row.extend([doc.to_string(), at.to_string()]);
        self.write(move |conn| {
            conn.prepare_cached(table.upsert)
                .map_err(db)?
                .execute(rusqlite::params_from_iter(&row))
                .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn kept(&self, key: CardKey<'_>) -> Result<Option<(Value, Instant)>, StoreError> {
        let (table, row) = row_of(key);
        let what = key.what();
        self.read(move |conn| {
            let kept: Option<(String, String)> = conn
                .prepare_cached(table.select)
                .map_err(db)?
                .query_row(rusqlite::params_from_iter(&row), |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(db)?;
            kept.map(|(doc, at)| {
                let doc = serde_json::from_str(&doc)
                    .map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))?;
                let at = Instant::parse(&at)
                    .map_err(|e| StoreError::Corrupt(format!("{what}: {} {e}", table.at)))?;
                Ok((doc, at))
            })
            .transpose()
        })
        .await
    }
}
