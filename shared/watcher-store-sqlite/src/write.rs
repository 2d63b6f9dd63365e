//! Writing a commit: the subjects and tasks by compare-and-set, their index rows (fact keys,
//! timers, live rows) derived from `watcher_runtime::index::subject_index`, the outbox and the
//! input numbers.

use super::*;

/// How many of an agent's records count against its bound at `?3` (`is_live`: no end, or an end
/// at or after now): its `live` rows, kept as a counter in `agent_live_rows` by every commit,
/// less the rows whose end has passed — an index range that holds only deadlines not yet fired,
/// so the cost does not grow with the agent's open expectations (issue 10). NULL ends (waiting
/// on an anchor) sort before every key; `live_until > ''` starts the range after them.
pub(crate) const LIVE_COUNT_SQL: &str =
    "SELECT coalesce((SELECT rows FROM agent_live_rows WHERE tenant = ?1 AND agent = ?2), 0)
          - (SELECT COUNT(*) FROM live WHERE tenant = ?1 AND agent = ?2
                AND live_until > '' AND live_until < ?3)";

/// Takes the next raising-order number (inside the writer's group, whose write lock makes the
/// stored value current even with other connections on the file): one more than both the
/// stored value and `high`, the largest this store handed out. The number is answered before
/// its group commits ([`group::Writer::write_answered_early`]); if that group is rolled back,
/// `high` still keeps this process from handing it out again, and a commit that uses it raises
/// the stored value to it ([`keep_sequence_ahead`]), so no number is used twice. Known limit:
/// a second process writing the same file could take that number between the failed group and
/// the commit that uses it (only after a commit failed: an I/O error or a full disk); `serve`
/// is one process per file.
pub(crate) fn take_sequence(tx: &Connection, high: &AtomicU64) -> Result<u64, StoreError> {
    let stored: i64 = tx
        .prepare_cached("SELECT value FROM sequence WHERE id = 1")
        .map_err(db)?
        .query_row([], |r| r.get(0))
        .map_err(db)?;
    let v = u64_of(stored, "sequence")?.max(high.load(Ordering::Relaxed)) + 1;
    tx.prepare_cached("UPDATE sequence SET value = ?1 WHERE id = 1")
        .map_err(db)?
        .execute(params![int_of(v, "sequence")?])
        .map_err(db)?;
    high.store(v, Ordering::Relaxed);
    Ok(v)
}

/// Raises the stored sequence to the largest number a commit stores (its records' raising
/// orders, its task statuses' input numbers; [`PreparedCommit::used_sequence`]), in the commit:
/// a number answered early whose own group was rolled back is then on disk with the first
/// commit that uses it. Writes nothing (dirties no page) when the stored value is ahead, which
/// is every time unless a group failed.
pub(crate) fn keep_sequence_ahead(tx: &Connection, used: Option<u64>) -> Result<(), StoreError> {
    if let Some(used) = used {
        tx.prepare_cached("UPDATE sequence SET value = ?1 WHERE id = 1 AND value < ?1")
            .map_err(db)?
            .execute(params![int_of(used, "raising order")?])
            .map_err(db)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reading rows.

/// Writes `entry` over the stored row with its identity (tenant, agent, messageId), with the
/// columns its indexes read (`person_at` from `needs_person_since`, `resolved_at` from
/// `resolved.at`); `sent` is final: a sent row only takes another `sent` update.
pub(crate) fn write_outbox_row(conn: &Connection, entry: &OutboxEntry) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE outbox SET delivery = ?4, next_attempt = ?5, entry = ?6, follow_at = ?7,
             task_id = ?8, person_at = ?9, resolved_at = ?10
         WHERE tenant = ?1 AND message_id = ?2 AND agent = ?3
           AND (delivery <> 'sent' OR ?4 = 'sent')",
    )
    .map_err(db)?
    .execute(params![
        entry.tenant.as_str(),
        entry.message_id,
        entry.agent.as_str(),
        entry.delivery.as_str(),
        instant_key(entry.next_attempt_at),
        to_json(entry)?,
        entry.follow_at.map(instant_key),
        entry.task_id,
        entry.needs_person_since.map(instant_key),
        entry.resolved.as_ref().map(|r| instant_key(r.at))
    ])
    .map_err(db)?;
    Ok(())
}

/// A subject ready for the writer: everything costly (its JSON, its index rows, their keys) is
/// done by the caller before the write reaches the writer's group (issue 10: JSON work outside
/// the write lock), so the writer runs SQL only.
pub(crate) struct SubjectWrite {
    pub(crate) subject: Subject,
    /// The version it was loaded at (the compare-and-set).
    pub(crate) loaded: u64,
    /// Its state's JSON at `loaded + 1`, without its facts.
    pub(crate) json: String,
    /// Each fact's JSON, in receipt order.
    pub(crate) facts: Vec<String>,
    /// [`facts_digests`] of `facts`: the digest of each prefix, from the empty one.
    pub(crate) digests: Vec<[u8; 32]>,
    pub(crate) ix: watcher_runtime::index::SubjectIndex,
    /// Its timer rows: (agent, expectation id, kind) → (at, order input, order index).
    pub(crate) timers: std::collections::BTreeMap<(String, String, i64), (String, i64, i64)>,
    /// Its live rows: (agent, expectation id) → until (`None`: indefinitely).
    pub(crate) live: std::collections::BTreeMap<(String, String), Option<String>>,
}

impl SubjectWrite {
    /// Bumps `state` to its next version and derives what the writer writes.
    pub(crate) fn of(mut state: SubjectState) -> Result<Self, StoreError> {
        let loaded = state.version;
        state.version += 1;
        let ix = subject_index(&state);
        let mut timers = std::collections::BTreeMap::new();
        for (key, at, order) in &ix.timers {
            timers.insert(
                (
                    key.expectation.agent.as_str().to_owned(),
                    key.expectation.id.as_str().to_owned(),
                    kind_code(key.kind),
                ),
                (
                    instant_key(*at),
                    int_of(order.input, "raising order")?,
                    i64::from(order.index),
                ),
            );
        }
        let mut live = std::collections::BTreeMap::new();
        for (key, agent, until) in &ix.live {
            let until = match until {
                LiveUntil::Closed => continue,
                LiveUntil::Indefinite => None,
                LiveUntil::Until(at) => Some(instant_key(*at)),
            };
            live.insert(
                (agent.as_str().to_owned(), key.id.as_str().to_owned()),
                until,
            );
        }
        let facts = state
            .facts
            .iter()
            .map(to_json)
            .collect::<Result<Vec<_>, _>>()?;
        state.facts = Vec::new();
        Ok(SubjectWrite {
            json: to_json(&state)?,
            digests: facts_digests(&facts),
            facts,
            subject: state.subject,
            loaded,
            ix,
            timers,
            live,
        })
    }
}

/// Writes a subject at its new version and brings its index rows to what the new state
/// derives, touching only the rows that change (issue 10, write amplification): an index
/// row already right is neither deleted nor rewritten, so its pages stay clean.
pub(crate) fn write_subject(
    conn: &Connection,
    tenant: &Tenant,
    w: &SubjectWrite,
    stored: &StoredSubject,
) -> Result<(), StoreError> {
    let t = tenant.as_str();
    let (st, sid) = (&w.subject.subject_type, &w.subject.id);
    write_facts(conn, t, st, sid, w, stored)?;
    let all = w.facts.len();
    conn.prepare_cached(
        "INSERT INTO subjects (tenant, subject_type, subject_id, version, state, facts,
             facts_digest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (tenant, subject_type, subject_id)
         DO UPDATE SET version = excluded.version, state = excluded.state,
             facts = excluded.facts, facts_digest = excluded.facts_digest",
    )
    .map_err(db)?
    .execute(params![
        t,
        st,
        sid,
        int_of(w.loaded + 1, "subject version")?,
        w.json,
        all as i64,
        w.digests[all].as_slice()
    ])
    .map_err(db)?;

    let ix = &w.ix;
    // Expectations whose id was indexed under another subject (the engine never moves one;
    // kept right if a record ever does): their live row there is dropped, counted once.
    let mut moved: Vec<(String, String, String, String)> = Vec::new();
    for e in &ix.expectations {
        let (agent, id) = (e.agent.as_str(), e.id.as_str());
        let stored: Option<(String, String)> = conn
            .prepare_cached(
                "SELECT subject_type, subject_id FROM id_index
                 WHERE tenant = ?1 AND agent = ?2 AND expectation_id = ?3",
            )
            .map_err(db)?
            .query_row(params![t, agent, id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(db)?;
        match stored {
            Some((ost, osid)) if ost == *st && osid == *sid => {}
            Some((ost, osid)) => {
                conn.prepare_cached(
                    "UPDATE id_index SET subject_type = ?4, subject_id = ?5
                     WHERE tenant = ?1 AND agent = ?2 AND expectation_id = ?3",
                )
                .map_err(db)?
                .execute(params![t, agent, id, st, sid])
                .map_err(db)?;
                moved.push((ost, osid, agent.to_owned(), id.to_owned()));
            }
            None => {
                conn.prepare_cached(
                    "INSERT INTO id_index (tenant, agent, expectation_id, subject_type, subject_id)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(db)?
                .execute(params![t, agent, id, st, sid])
                .map_err(db)?;
            }
        }
    }
    for k in &ix.fact_keys {
        conn.prepare_cached(
            "INSERT INTO fact_index (tenant, fact_key, subject_type, subject_id)
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
        )
        .map_err(db)?
        .execute(params![t, k.as_str(), st, sid])
        .map_err(db)?;
    }
    for (ost, osid, agent, id) in &moved {
        let gone = conn
            .prepare_cached(
                "DELETE FROM live WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                    AND agent = ?4 AND expectation_id = ?5",
            )
            .map_err(db)?
            .execute(params![t, ost, osid, agent, id])
            .map_err(db)?;
        conn.prepare_cached(
            "DELETE FROM timers WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                AND agent = ?4 AND expectation_id = ?5",
        )
        .map_err(db)?
        .execute(params![t, ost, osid, agent, id])
        .map_err(db)?;
        if gone > 0 {
            add_live_rows(conn, t, agent, -(gone as i64))?;
        }
    }
    write_timers(conn, t, st, sid, &w.timers)?;
    write_live(conn, t, st, sid, &w.live)
}

/// The SHA-256 digest of every prefix of `facts` (each fact's JSON, length-prefixed), from the
/// empty prefix to the whole: `facts.len() + 1` digests. Written with the subject
/// (`facts_digest`), it tells the next commit whether its facts extend the stored ones.
pub(crate) fn facts_digests(facts: &[String]) -> Vec<[u8; 32]> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut out = Vec::with_capacity(facts.len() + 1);
    out.push(hasher.clone().finalize().into());
    for f in facts {
        hasher.update((f.len() as u64).to_le_bytes());
        hasher.update(f.as_bytes());
        out.push(hasher.clone().finalize().into());
    }
    out
}

/// Writes the subject's fact rows (issue 10, write amplification): when the stored facts are
/// a prefix of the new ones (same count and digest, what every step of the engine does: facts
/// are only appended), only the new facts are inserted; otherwise every fact row is rewritten.
/// A version 5 row (facts inline in `state`, none counted) has the empty prefix: all its facts
/// become rows.
pub(crate) fn write_facts(
    conn: &Connection,
    t: &str,
    st: &str,
    sid: &str,
    w: &SubjectWrite,
    stored: &StoredSubject,
) -> Result<(), StoreError> {
    let kept = usize::try_from(stored.facts).ok().filter(|&c| {
        w.digests
            .get(c)
            .is_some_and(|d| match &stored.facts_digest {
                Some(stored) => stored.as_slice() == d.as_slice(),
                None => c == 0,
            })
    });
    let from = match kept {
        Some(c) => c,
        None => {
            conn.prepare_cached(
                "DELETE FROM subject_facts
                 WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
            )
            .map_err(db)?
            .execute(params![t, st, sid])
            .map_err(db)?;
            0
        }
    };
    for (position, json) in w.facts.iter().enumerate().skip(from) {
        conn.prepare_cached(
            "INSERT INTO subject_facts (tenant, subject_type, subject_id, position, fact)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(db)?
        .execute(params![t, st, sid, position as i64, json])
        .map_err(db)?;
    }
    Ok(())
}

/// Brings the subject's timer rows to `wanted` ([`SubjectWrite::timers`]): deletes the ones
/// gone, inserts the new ones, updates the ones whose instant or order changed, leaves the rest.
pub(crate) fn write_timers(
    conn: &Connection,
    t: &str,
    st: &str,
    sid: &str,
    wanted: &std::collections::BTreeMap<(String, String, i64), (String, i64, i64)>,
) -> Result<(), StoreError> {
    let stored: std::collections::BTreeMap<(String, String, i64), (String, i64, i64)> = conn
        .prepare_cached(
            "SELECT agent, expectation_id, kind, at_key, order_input, order_index FROM timers
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        )
        .map_err(db)?
        .query_map(params![t, st, sid], |r| {
            Ok((
                (r.get(0)?, r.get(1)?, r.get(2)?),
                (r.get(3)?, r.get(4)?, r.get(5)?),
            ))
        })
        .map_err(db)?
        .collect::<Result<_, _>>()
        .map_err(db)?;
    for (id, _) in stored.iter().filter(|(id, _)| !wanted.contains_key(*id)) {
        conn.prepare_cached(
            "DELETE FROM timers WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                AND agent = ?4 AND expectation_id = ?5 AND kind = ?6",
        )
        .map_err(db)?
        .execute(params![t, st, sid, id.0, id.1, id.2])
        .map_err(db)?;
    }
    for (id, value) in wanted {
        match stored.get(id) {
            Some(old) if old == value => {}
            Some(_) => {
                conn.prepare_cached(
                    "UPDATE timers SET at_key = ?7, order_input = ?8, order_index = ?9
                     WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                        AND agent = ?4 AND expectation_id = ?5 AND kind = ?6",
                )
                .map_err(db)?
                .execute(params![
                    t, st, sid, id.0, id.1, id.2, value.0, value.1, value.2
                ])
                .map_err(db)?;
            }
            None => {
                conn.prepare_cached(
                    "INSERT INTO timers (tenant, subject_type, subject_id, agent, expectation_id,
                         kind, at_key, order_input, order_index)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
                )
                .map_err(db)?
                .execute(params![
                    t, st, sid, id.0, id.1, id.2, value.0, value.1, value.2
                ])
                .map_err(db)?;
            }
        }
    }
    Ok(())
}

/// Brings the subject's live rows to `wanted` ([`SubjectWrite::live`]; closed records have
/// none), touching only the rows that change, and `agent_live_rows` by the difference, per
/// agent.
pub(crate) fn write_live(
    conn: &Connection,
    t: &str,
    st: &str,
    sid: &str,
    wanted: &std::collections::BTreeMap<(String, String), Option<String>>,
) -> Result<(), StoreError> {
    let stored: std::collections::BTreeMap<(String, String), Option<String>> = conn
        .prepare_cached(
            "SELECT agent, expectation_id, live_until FROM live
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        )
        .map_err(db)?
        .query_map(params![t, st, sid], |r| {
            Ok(((r.get(0)?, r.get(1)?), r.get(2)?))
        })
        .map_err(db)?
        .collect::<Result<_, _>>()
        .map_err(db)?;
    let mut delta: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    for ((agent, id), _) in stored.iter().filter(|(k, _)| !wanted.contains_key(*k)) {
        conn.prepare_cached(
            "DELETE FROM live WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                AND agent = ?4 AND expectation_id = ?5",
        )
        .map_err(db)?
        .execute(params![t, st, sid, agent, id])
        .map_err(db)?;
        *delta.entry(agent.clone()).or_default() -= 1;
    }
    for ((agent, id), until) in wanted {
        match stored.get(&(agent.clone(), id.clone())) {
            Some(old) if old == until => {}
            Some(_) => {
                conn.prepare_cached(
                    "UPDATE live SET live_until = ?6
                     WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                        AND agent = ?4 AND expectation_id = ?5",
                )
                .map_err(db)?
                .execute(params![t, st, sid, agent, id, until])
                .map_err(db)?;
            }
            None => {
                conn.prepare_cached(
                    "INSERT INTO live (tenant, subject_type, subject_id, agent, expectation_id,
                         live_until)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(db)?
                .execute(params![t, st, sid, agent, id, until])
                .map_err(db)?;
                *delta.entry(agent.clone()).or_default() += 1;
            }
        }
    }
    for (agent, d) in delta.into_iter().filter(|(_, d)| *d != 0) {
        add_live_rows(conn, t, &agent, d)?;
    }
    Ok(())
}

/// Adds `d` (may be negative) to the agent's count of live rows.
pub(crate) fn add_live_rows(
    conn: &Connection,
    t: &str,
    agent: &str,
    d: i64,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO agent_live_rows (tenant, agent, rows) VALUES (?1, ?2, ?3)
         ON CONFLICT (tenant, agent) DO UPDATE SET rows = rows + excluded.rows",
    )
    .map_err(db)?
    .execute(params![t, agent, d])
    .map_err(db)?;
    Ok(())
}

/// A task record ready for the writer (see [`SubjectWrite`]).
pub(crate) struct TaskWrite {
    pub(crate) task: TaskRef,
    pub(crate) loaded: u64,
    /// Its JSON at `loaded + 1`.
    pub(crate) json: String,
}

/// An outbox row ready for the writer: the entry, its JSON and its keys.
pub(crate) struct OutboxWrite {
    pub(crate) entry: OutboxEntry,
    pub(crate) json: String,
    pub(crate) next_attempt: String,
    pub(crate) follow_at: Option<String>,
    pub(crate) lapsed_at: String,
    /// `resolved.at`'s key, when a lapse task is resolved by the step that wrote it.
    pub(crate) resolved_at: Option<String>,
}

/// A [`Commit`] ready for the writer: serialised and keyed by [`PreparedCommit::of`] on the
/// caller's thread, so that the writer's group (the one thread every commit waits for) runs
/// SQL only.
pub(crate) struct PreparedCommit {
    pub(crate) subjects: Vec<SubjectWrite>,
    pub(crate) tasks: Vec<TaskWrite>,
    pub(crate) outbox: Vec<OutboxWrite>,
    /// (agent, at, JSON) per rejection.
    pub(crate) rejections: Vec<(String, String, String)>,
    /// Resolutions of stored lapse tasks, applied after `outbox` (`Commit::resolutions`).
    pub(crate) resolutions: Vec<watcher_runtime::resolution::Resolved>,
    /// The largest input number the commit stores: its records' raising orders and its task
    /// statuses' `seq` ([`keep_sequence_ahead`]).
    pub(crate) used_sequence: Option<u64>,
}

impl PreparedCommit {
    pub(crate) fn of(commit: Commit) -> Result<Self, StoreError> {
        // Every number the commit stores: raising orders and the inputs of task statuses.
        let used_sequence = commit
            .subjects
            .iter()
            .flat_map(|s| s.records.iter().map(|r| r.order.input))
            .chain(commit.tasks.iter().flat_map(|t| {
                t.statuses
                    .iter()
                    .chain(t.withdrawn_by.iter())
                    .map(|seen| seen.seq)
            }))
            .max();
        let tasks = commit
            .tasks
            .into_iter()
            .map(|mut t| {
                let loaded = t.version;
                t.version += 1;
                Ok(TaskWrite {
                    json: to_json(&t)?,
                    task: t.task,
                    loaded,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        let outbox = commit
            .outbox
            .into_iter()
            .map(|o| {
                Ok(OutboxWrite {
                    json: to_json(&o)?,
                    next_attempt: instant_key(o.next_attempt_at),
                    follow_at: o.follow_at.map(instant_key),
                    lapsed_at: instant_key(o.lapsed_at),
                    resolved_at: o.resolved.as_ref().map(|r| instant_key(r.at)),
                    entry: o,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        let rejections = commit
            .rejections
            .iter()
            .map(|r| Ok((r.agent.as_str().to_owned(), instant_key(r.at), to_json(r)?)))
            .collect::<Result<_, StoreError>>()?;
        Ok(PreparedCommit {
            subjects: commit
                .subjects
                .into_iter()
                .map(SubjectWrite::of)
                .collect::<Result<_, _>>()?,
            tasks,
            outbox,
            rejections,
            resolutions: commit.resolutions,
            used_sequence,
        })
    }
}

pub(crate) fn write_task(
    conn: &Connection,
    tenant: &Tenant,
    w: &TaskWrite,
) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO tasks (tenant, agent, task_id, version, state) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (tenant, agent, task_id)
         DO UPDATE SET version = excluded.version, state = excluded.state",
    )
    .map_err(db)?
    .execute(params![
        tenant.as_str(),
        w.task.agent.as_str(),
        w.task.task_id.as_str(),
        int_of(w.loaded + 1, "task version")?,
        w.json
    ])
    .map_err(db)?;
    Ok(())
}

/// The whole of [`Records::commit`](watcher_runtime::store::Records::commit), inside the writer's group (`BEGIN IMMEDIATE`, its own
/// savepoint): the write lock is held before the versions are read, so no other writer can move
/// them in between; a lost compare-and-set rolls back this commit alone.
pub(crate) fn commit_in(
    tx: &Connection,
    tenant: &Tenant,
    commit: &PreparedCommit,
) -> Result<(), StoreError> {
    let mut stored = Vec::with_capacity(commit.subjects.len());
    for s in &commit.subjects {
        let row = stored_subject(tx, tenant, &s.subject)?;
        if row.version != s.loaded {
            // Dropping `tx` rolls back: nothing of this commit is written.
            return Err(StoreError::Conflict(format!("subject {}", s.subject)));
        }
        stored.push(row);
    }
    for t in &commit.tasks {
        if task_version(tx, tenant, &t.task)? != t.loaded {
            return Err(StoreError::Conflict(format!("task {}", t.task.task_id)));
        }
    }
    keep_sequence_ahead(tx, commit.used_sequence)?;
    for (s, row) in commit.subjects.iter().zip(&stored) {
        write_subject(tx, tenant, s, row)?;
    }
    for t in &commit.tasks {
        write_task(tx, tenant, t)?;
    }
    for o in &commit.outbox {
        let e = &o.entry;
        tx.prepare_cached(
            "INSERT INTO outbox (tenant, message_id, agent, delivery, next_attempt, entry, follow_at,
                 task_id, lapsed_at, resolved_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (tenant, agent, message_id) DO NOTHING",
        )
        .map_err(db)?
        .execute(params![
            e.tenant.as_str(),
            e.message_id,
            e.agent.as_str(),
            e.delivery.as_str(),
            o.next_attempt,
            o.json,
            o.follow_at,
            e.task_id,
            o.lapsed_at,
            o.resolved_at
        ])
        .map_err(db)?;
    }
    // Each resolved lapse task read by its key, in this transaction (never a list).
    for r in &commit.resolutions {
        let stored = outbox_row(tx, tenant, &r.agent, &r.message_id)?;
        if let Some(entry) =
            stored.and_then(|s| watcher_runtime::resolution::resolved(&s, &r.resolution))
        {
            write_outbox_row(tx, &entry)?;
        }
    }
    for (agent, at, json) in &commit.rejections {
        tx.prepare_cached(
            "INSERT INTO rejections (tenant, agent, at_key, rejection) VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(db)?
        .execute(params![tenant.as_str(), agent, at, json])
        .map_err(db)?;
    }
    Ok(())
}
