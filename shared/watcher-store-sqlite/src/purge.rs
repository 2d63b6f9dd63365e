//! Retention (expectations-v1 §14): what `watcher_runtime::retention` allows deleted, in batches of
//! whole items, each batch its own transaction.

use super::*;

/// Rows one batch of [`Upkeep::purge`](watcher_runtime::store::Upkeep::purge) looks at: each batch is its own short transaction, and
/// the connection is free for requests between batches (issue 10: one purge of 98k rows in one
/// transaction stalled every request for half a second).
pub const PURGE_BATCH: usize = 500;

/// Where a batched purge stands: the table being purged and the last key looked at in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PurgeCursor {
    /// Subjects after (tenant, subject_type, subject_id).
    Subjects(Option<(String, String, String)>),
    /// Tasks after (tenant, agent, task_id), once every subject was looked at.
    Tasks(Option<(String, String, String)>),
    /// Outbox rows after `seq`.
    Outbox(i64),
    /// Rejections after `id`.
    Rejections(i64),
}

pub(crate) type Key3 = (String, String, String);

/// One batch of [`Upkeep::purge`](watcher_runtime::store::Upkeep::purge), one write of the writer's group: looks at up to `batch`
/// rows of the table `at` stands in, after its key, deletes those [`watcher_runtime::retention`]
/// allows, and answers what it deleted and where the next batch starts (`None`: done). Which
/// items go is decided by the retention rule; the SQL only narrows the rows it is asked about.
pub(crate) fn purge_batch(
    tx: &Connection,
    before: Instant,
    at: PurgeCursor,
    batch: usize,
) -> Result<(PurgeReport, Option<PurgeCursor>), StoreError> {
    let mut report = PurgeReport::default();
    let limit = limit_of(batch.max(1));
    let full = |n: usize| n >= batch.max(1);
    let next = match at {
        PurgeCursor::Subjects(after) => {
            // A subject with a `live` row has a record that can still lapse: its state is not
            // read. A subject is deleted with its index rows (fact keys, expectation ids,
            // timers), found from its state (`delete_subject_index`).
            let (t, st, sid) = after.clone().unwrap_or_default();
            type Row = (String, String, String, Option<String>, i64);
            let rows: Vec<Row> = {
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT tenant, subject_type, subject_id,
                            CASE WHEN EXISTS (SELECT 1 FROM live AS l WHERE l.tenant = s.tenant
                                AND l.subject_type = s.subject_type
                                AND l.subject_id = s.subject_id) THEN NULL ELSE state END,
                            facts
                         FROM subjects AS s
                         WHERE ?1 = 0 OR (tenant, subject_type, subject_id) > (?2, ?3, ?4)
                         ORDER BY tenant, subject_type, subject_id LIMIT ?5",
                    )
                    .map_err(db)?;
                let rows = stmt
                    .query_map(params![after.is_some(), t, st, sid, limit], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })
                    .map_err(db)?
                    .collect::<Result<Vec<Row>, _>>()
                    .map_err(db)?;
                rows
            };
            for (tenant, st, sid, json, facts) in &rows {
                let Some(json) = json else { continue };
                let mut state: SubjectState = from_json(json, "subject")?;
                with_fact_rows(tx, tenant, &mut state, *facts)?;
                if !subject_retention(&state).purgeable(before) {
                    continue;
                }
                report.subjects += tx
                    .prepare_cached(
                        "DELETE FROM subjects
                         WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
                    )
                    .map_err(db)?
                    .execute(params![tenant, st, sid])
                    .map_err(db)? as u64;
                delete_subject_index(tx, tenant, st, sid, &subject_index(&state))?;
            }
            match rows.last() {
                Some((t, st, sid, _, _)) if full(rows.len()) => {
                    PurgeCursor::Subjects(Some((t.clone(), st.clone(), sid.clone())))
                }
                _ => PurgeCursor::Tasks(None),
            }
        }
        PurgeCursor::Tasks(after) => {
            let (t, ag, id) = after.clone().unwrap_or_default();
            let rows: Vec<(Key3, String)> = {
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT tenant, agent, task_id, state FROM tasks
                         WHERE ?1 = 0 OR (tenant, agent, task_id) > (?2, ?3, ?4)
                         ORDER BY tenant, agent, task_id LIMIT ?5",
                    )
                    .map_err(db)?;
                let rows = stmt
                    .query_map(params![after.is_some(), t, ag, id, limit], |r| {
                        Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?))
                    })
                    .map_err(db)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(db)?;
                rows
            };
            for ((tenant, agent, task_id), json) in &rows {
                let task: TaskRecord = from_json(json, "task")?;
                let mut stored = false;
                for s in &task.subjects {
                    let found: Option<i64> = tx
                        .prepare_cached(
                            "SELECT 1 FROM subjects
                             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
                        )
                        .map_err(db)?
                        .query_row(params![tenant, s.subject_type, s.id], |r| r.get(0))
                        .optional()
                        .map_err(db)?;
                    if found.is_some() {
                        stored = true;
                        break;
                    }
                }
                if !task_retention(&task, stored).purgeable(before) {
                    continue;
                }
                report.tasks += tx
                    .prepare_cached(
                        "DELETE FROM tasks WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3",
                    )
                    .map_err(db)?
                    .execute(params![tenant, agent, task_id])
                    .map_err(db)? as u64;
            }
            match rows.last() {
                Some((key, _)) if full(rows.len()) => PurgeCursor::Tasks(Some(key.clone())),
                _ => PurgeCursor::Outbox(0),
            }
        }
        PurgeCursor::Outbox(after) => {
            // Lapse tasks: queued ones are always kept.
            let rows: Vec<(i64, String)> = keyed_json_rows(
                tx,
                "SELECT seq, entry FROM outbox WHERE seq > ?1 AND delivery <> 'queued'
                 ORDER BY seq LIMIT ?2",
                params![after, limit],
            )?;
            for (seq, json) in &rows {
                let entry: OutboxEntry = from_json(json, "outbox entry")?;
                if outbox_retention(&entry).purgeable(before) {
                    report.outbox += delete_row(tx, "DELETE FROM outbox WHERE seq = ?1", *seq)?;
                }
            }
            match rows.last() {
                Some((seq, _)) if full(rows.len()) => PurgeCursor::Outbox(*seq),
                _ => PurgeCursor::Rejections(0),
            }
        }
        PurgeCursor::Rejections(after) => {
            // `at_key` is the rejection's `at`.
            let rows: Vec<(i64, String)> = keyed_json_rows(
                tx,
                "SELECT id, rejection FROM rejections WHERE id > ?1 AND at_key < ?2
                 ORDER BY id LIMIT ?3",
                params![after, instant_key(before), limit],
            )?;
            for (id, json) in &rows {
                let stored: Rejection = from_json(json, "rejection")?;
                if rejection_retention(&stored).purgeable(before) {
                    report.rejections +=
                        delete_row(tx, "DELETE FROM rejections WHERE id = ?1", *id)?;
                }
            }
            return Ok((
                report,
                match rows.last() {
                    Some((id, _)) if full(rows.len()) => Some(PurgeCursor::Rejections(*id)),
                    _ => None,
                },
            ));
        }
    };
    Ok((report, Some(next)))
}

/// Deletes the rows of a purged subject besides its own: its timer and fact rows (by the
/// subject, their key's prefix), the expectation ids still pointing at it and its fact keys' rows for it. Every
/// record a subject ever held stays in its state, so its index derives every row it was given.
/// Runs `delete`, a `DELETE` of the one row keyed `?1` = `key`; answers how many rows went
/// (0 or 1).
fn delete_row(tx: &Connection, delete: &str, key: i64) -> Result<u64, StoreError> {
    let deleted = tx
        .prepare_cached(delete)
        .map_err(db)?
        .execute(params![key])
        .map_err(db)?;
    Ok(deleted as u64)
}

pub(crate) fn delete_subject_index(
    tx: &Connection,
    t: &str,
    st: &str,
    sid: &str,
    ix: &watcher_runtime::index::SubjectIndex,
) -> Result<(), StoreError> {
    // A subject with a live row is never purged, so it has no live rows to delete.
    for sql in [
        "DELETE FROM timers WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        "DELETE FROM subject_facts WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
    ] {
        tx.prepare_cached(sql)
            .map_err(db)?
            .execute(params![t, st, sid])
            .map_err(db)?;
    }
    for e in &ix.expectations {
        tx.prepare_cached(
            "DELETE FROM id_index WHERE tenant = ?1 AND agent = ?2 AND expectation_id = ?3
                AND subject_type = ?4 AND subject_id = ?5",
        )
        .map_err(db)?
        .execute(params![t, e.agent.as_str(), e.id.as_str(), st, sid])
        .map_err(db)?;
    }
    for k in &ix.fact_keys {
        tx.prepare_cached(
            "DELETE FROM fact_index WHERE tenant = ?1 AND fact_key = ?2
                AND subject_type = ?3 AND subject_id = ?4",
        )
        .map_err(db)?
        .execute(params![t, k.as_str(), st, sid])
        .map_err(db)?;
    }
    Ok(())
}

impl SqliteStore {
    /// [`Upkeep::purge`](watcher_runtime::store::Upkeep::purge) in batches of `batch` rows, each its own transaction; `between(n)` is
    /// awaited after the `n`-th batch (from 1), with the connection free: `serve`'s purge
    /// yields there so requests go on during a large purge, and tests make requests there.
    ///
    /// # Errors
    /// The first batch's error; what earlier batches deleted stays deleted (each batch deletes
    /// whole items: a subject with its index rows).
    pub async fn purge_batched<F, Fut>(
        &self,
        before: Instant,
        batch: usize,
        mut between: F,
    ) -> Result<PurgeReport, StoreError>
    where
        F: FnMut(u64) -> Fut + Send,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let mut report = PurgeReport::default();
        let mut at = Some(PurgeCursor::Subjects(None));
        let mut batches = 0u64;
        while let Some(cursor) = at {
            let (done, next) = self
                .write(move |conn| purge_batch(conn, before, cursor, batch))
                .await?;
            report.subjects += done.subjects;
            report.tasks += done.tasks;
            report.outbox += done.outbox;
            report.rejections += done.rejections;
            batches += 1;
            between(batches).await;
            at = next;
        }
        // Origins followed since before the cut (long past any give_up_after: an agent no
        // longer configured), in batches like the rest.
        loop {
            let deleted = self.purge_origins(before, batch).await?;
            if deleted < batch {
                break;
            }
            between(batches).await;
        }
        Ok(report)
    }
}
