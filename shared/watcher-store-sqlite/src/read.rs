//! Reading the record: a subject with its fact rows, a task, the due timers, and the slice an input
//! needs (`load`); each in one read transaction.

use super::*;

/// Timers in firing order: instant, raising order, deadline before horizon (then identity, so
/// that the order is total).
pub(crate) const TIMERS_IN_ORDER: &str =
    "SELECT tenant, subject_type, subject_id, agent, expectation_id,
        kind, at_key, order_input, order_index
    FROM timers WHERE at_key <= ?1
    ORDER BY at_key, order_input, order_index, kind, tenant, subject_type, subject_id, agent,
        expectation_id
    LIMIT ?2";

/// Runs `f` in a read transaction (one snapshot), unless `conn` is already in a transaction
/// (a read of `:memory:` inside the writer's group).
pub(crate) fn read_tx<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    if !conn.is_autocommit() {
        return f(conn);
    }
    let tx = conn.transaction().map_err(db)?;
    let out = f(&tx)?;
    tx.commit().map_err(db)?;
    Ok(out)
}

pub(crate) fn subject_of(t: &str, id: &str) -> Result<Subject, StoreError> {
    Subject::parse(t, id).map_err(|e| StoreError::Corrupt(format!("stored subject: {e}")))
}

pub(crate) fn agent_of(text: &str) -> Result<AgentId, StoreError> {
    AgentId::parse(text).map_err(|e| StoreError::Corrupt(format!("stored agent: {e}")))
}

pub(crate) fn tenant_of(text: &str) -> Result<Tenant, StoreError> {
    Tenant::parse(text).map_err(|e| StoreError::Corrupt(format!("stored tenant: {e}")))
}

pub(crate) fn kind_code(kind: TimerKind) -> i64 {
    match kind {
        TimerKind::Deadline => 0,
        TimerKind::Horizon => 1,
    }
}

pub(crate) fn kind_of(code: i64) -> Result<TimerKind, StoreError> {
    match code {
        0 => Ok(TimerKind::Deadline),
        1 => Ok(TimerKind::Horizon),
        other => Err(StoreError::Corrupt(format!("timer kind {other}"))),
    }
}

/// The three `columns` (as in a `SELECT`) of the row of `subject` of `tenant`, if stored: one
/// keyed read of `subjects`.
fn subject_row<A, B, C>(
    conn: &Connection,
    columns: &str,
    tenant: &Tenant,
    subject: &Subject,
) -> Result<Option<(A, B, C)>, StoreError>
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: rusqlite::types::FromSql,
{
    let select = format!(
        "SELECT {columns} FROM subjects WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3"
    );
    conn.prepare_cached(&select)
        .map_err(db)?
        .query_row(
            params![tenant.as_str(), subject.subject_type, subject.id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(db)
}

pub(crate) fn read_subject(
    conn: &Connection,
    tenant: &Tenant,
    subject: &Subject,
) -> Result<Option<SubjectState>, StoreError> {
    let row: Option<(i64, String, i64)> =
        subject_row(conn, "version, state, facts", tenant, subject)?;
    let Some((version, json, facts)) = row else {
        return Ok(None);
    };
    let mut state: SubjectState = from_json(&json, &format!("subject {subject}"))?;
    if &state.subject != subject {
        return Err(StoreError::Corrupt(format!(
            "the row of subject {subject} holds subject {}",
            state.subject
        )));
    }
    state.version = u64_of(version, "subject version")?;
    with_fact_rows(conn, tenant.as_str(), &mut state, facts)?;
    Ok(Some(state))
}

/// Appends to `state.facts` (empty, or a version 5 row's inline facts) the subject's `count`
/// fact rows, in receipt order.
///
/// # Errors
/// [`StoreError::Corrupt`] when a row does not parse or the rows are not `count`.
pub(crate) fn with_fact_rows(
    conn: &Connection,
    t: &str,
    state: &mut SubjectState,
    count: i64,
) -> Result<(), StoreError> {
    if count == 0 {
        return Ok(());
    }
    let what = format!("fact of subject {}", state.subject);
    let rows: Vec<String> = conn
        .prepare_cached(
            "SELECT fact FROM subject_facts
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3 ORDER BY position",
        )
        .map_err(db)?
        .query_map(
            params![t, state.subject.subject_type, state.subject.id],
            |r| r.get(0),
        )
        .map_err(db)?
        .collect::<Result<_, _>>()
        .map_err(db)?;
    if rows.len() as i64 != count {
        return Err(StoreError::Corrupt(format!(
            "subject {} counts {count} facts but has {} fact rows",
            state.subject,
            rows.len()
        )));
    }
    for json in &rows {
        state.facts.push(from_json(json, &what)?);
    }
    Ok(())
}

/// What a commit reads of a subject's stored row before writing it: its version (the
/// compare-and-set) and its fact rows' count and digest ([`write_facts`]); a subject not stored
/// is at version 0 with no facts.
pub(crate) struct StoredSubject {
    pub(crate) version: u64,
    pub(crate) facts: i64,
    pub(crate) facts_digest: Option<Vec<u8>>,
}

pub(crate) fn stored_subject(
    conn: &Connection,
    tenant: &Tenant,
    subject: &Subject,
) -> Result<StoredSubject, StoreError> {
    let row: Option<(i64, i64, Option<Vec<u8>>)> =
        subject_row(conn, "version, facts, facts_digest", tenant, subject)?;
    match row {
        None => Ok(StoredSubject {
            version: 0,
            facts: 0,
            facts_digest: None,
        }),
        Some((version, facts, facts_digest)) => Ok(StoredSubject {
            version: u64_of(version, "subject version")?,
            facts,
            facts_digest,
        }),
    }
}

pub(crate) fn read_task(
    conn: &Connection,
    tenant: &Tenant,
    task: &TaskRef,
) -> Result<Option<TaskRecord>, StoreError> {
    let row: Option<(i64, String)> = conn
        .prepare_cached(
            "SELECT version, state FROM tasks WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3",
        )
        .map_err(db)?
        .query_row(
            params![tenant.as_str(), task.agent.as_str(), task.task_id.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(db)?;
    let Some((version, json)) = row else {
        return Ok(None);
    };
    let mut rec: TaskRecord = from_json(&json, &format!("task {}", task.task_id))?;
    if &rec.task != task {
        return Err(StoreError::Corrupt(format!(
            "the row of task {} holds task {}",
            task.task_id, rec.task.task_id
        )));
    }
    rec.version = u64_of(version, "task version")?;
    Ok(Some(rec))
}

pub(crate) fn task_version(
    conn: &Connection,
    tenant: &Tenant,
    task: &TaskRef,
) -> Result<u64, StoreError> {
    let v: Option<i64> = conn
        .prepare_cached(
            "SELECT version FROM tasks WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3",
        )
        .map_err(db)?
        .query_row(
            params![tenant.as_str(), task.agent.as_str(), task.task_id.as_str()],
            |r| r.get(0),
        )
        .optional()
        .map_err(db)?;
    v.map_or(Ok(0), |v| u64_of(v, "task version"))
}

/// Rows of `sql` whose single column is JSON of `T`.
pub(crate) fn json_rows<T: serde::de::DeserializeOwned>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    what: &str,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(db)?;
    let texts = stmt
        .query_map(params, |r| r.get::<_, String>(0))
        .map_err(db)?
        .collect::<Result<Vec<String>, _>>()
        .map_err(db)?;
    texts.iter().map(|t| from_json(t, what)).collect()
}

/// The outbox entry (tenant, agent, messageId), if stored.
pub(crate) fn outbox_row(
    conn: &Connection,
    tenant: &Tenant,
    agent: &AgentId,
    message_id: &str,
) -> Result<Option<OutboxEntry>, StoreError> {
    let rows: Vec<OutboxEntry> = json_rows(
        conn,
        "SELECT entry FROM outbox WHERE tenant = ?1 AND agent = ?2 AND message_id = ?3",
        params![tenant.as_str(), agent.as_str(), message_id],
        "outbox entry",
    )?;
    Ok(rows.into_iter().next())
}

pub(crate) fn read_timers(
    conn: &Connection,
    until: &str,
    limit: i64,
) -> Result<Vec<DueTimer>, StoreError> {
    type Row = (
        String,
        String,
        String,
        String,
        String,
        i64,
        String,
        i64,
        i64,
    );
    let mut stmt = conn.prepare_cached(TIMERS_IN_ORDER).map_err(db)?;
    let rows = stmt
        .query_map(params![until, limit], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
            ))
        })
        .map_err(db)?
        .collect::<Result<Vec<Row>, _>>()
        .map_err(db)?;
    rows.into_iter()
        .map(|(tenant, st, sid, agent, eid, kind, at, input, index)| {
            Ok(DueTimer {
                at: instant_from_key(&at)?,
                order: RaiseOrder {
                    input: u64_of(input, "raising order")?,
                    index: u32::try_from(index).map_err(|_| {
                        StoreError::Corrupt(format!("raising index {index} is not a u32"))
                    })?,
                },
                tenant: tenant_of(&tenant)?,
                key: TimerKey {
                    subject: subject_of(&st, &sid)?,
                    expectation: ExpectationRef {
                        agent: agent_of(&agent)?,
                        id: ExpectationId::parse(eid).map_err(|e| {
                            StoreError::Corrupt(format!("stored expectation id: {e}"))
                        })?,
                    },
                    kind: kind_of(kind)?,
                },
            })
        })
        .collect()
}

pub(crate) fn limit_of(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

// ---------------------------------------------------------------------------------------------
// Writing rows.

pub(crate) fn load_in(
    conn: &mut Connection,
    tenant: &Tenant,
    scope: &Scope,
    now: Instant,
) -> Result<Slice, StoreError> {
    // One read transaction: every part of the slice comes from the same snapshot.
    read_tx(conn, |tx| load_body(tx, tenant, scope, now))
}

pub(crate) fn load_body(
    tx: &Connection,
    tenant: &Tenant,
    scope: &Scope,
    now: Instant,
) -> Result<Slice, StoreError> {
    let t = tenant.as_str();
    let mut slice = Slice::new(tenant.clone());
    for s in &scope.subjects {
        let state = read_subject(tx, tenant, s)?.unwrap_or_else(|| SubjectState::new(s.clone()));
        slice.subjects.insert(s.clone(), state);
    }
    for k in &scope.fact_keys {
        let mut stmt = tx
            .prepare_cached(
                "SELECT subject_type, subject_id FROM fact_index WHERE tenant = ?1 AND fact_key = ?2",
            )
            .map_err(db)?;
        let rows = stmt
            .query_map(params![t, k.as_str()], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(db)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db)?;
        let set = rows
            .iter()
            .map(|(st, sid)| subject_of(st, sid))
            .collect::<Result<_, _>>()?;
        slice.fact_index.insert(k.clone(), set);
    }
    for e in &scope.expectations {
        let row: Option<(String, String)> = tx
            .prepare_cached(
                "SELECT subject_type, subject_id FROM id_index
                 WHERE tenant = ?1 AND agent = ?2 AND expectation_id = ?3",
            )
            .map_err(db)?
            .query_row(params![t, e.agent.as_str(), e.id.as_str()], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(db)?;
        let subject = row.map(|(st, sid)| subject_of(&st, &sid)).transpose()?;
        slice.id_index.insert(e.clone(), subject);
    }
    for task in &scope.tasks {
        slice
            .tasks
            .insert(task.clone(), read_task(tx, tenant, task)?);
    }
    let now_key = instant_key(now);
    for a in &scope.agents {
        let count: i64 = tx
            .prepare_cached(LIVE_COUNT_SQL)
            .map_err(db)?
            .query_row(params![t, a.as_str(), now_key], |r| r.get(0))
            .map_err(db)?;
        slice
            .agent_live
            .insert(a.clone(), u64_of(count, "live count")?);
    }
    Ok(slice)
}

/// Rows of `sql` as (key, JSON text) pairs, the key being the first column.
pub(crate) fn keyed_json_rows<K: rusqlite::types::FromSql>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<(K, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(db)?;
    let rows = stmt
        .query_map(params, |r| Ok((r.get::<_, K>(0)?, r.get::<_, String>(1)?)))
        .map_err(db)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db)?;
    Ok(rows)
}
