//! Pages of lapse tasks by position, through the index by (tenant, seq) or (tenant, agent, seq),
//! for `GET /v1/lapses`.

use super::*;

/// The positions one page may look at, in order, after `?2`, at most `?3`, through the index
/// by (tenant, seq) or (tenant, agent, seq) (`?4`, the agent, is NULL with the first); the
/// entry only where the filters (`?5` delivery, `?6` lapsed at or after) match.
pub(crate) const LAPSE_WINDOW_TENANT: &str = "SELECT seq,
        CASE WHEN (?5 IS NULL OR delivery = ?5) AND (?6 IS NULL OR lapsed_at >= ?6)
            THEN entry END
    FROM outbox INDEXED BY outbox_tenant
    WHERE tenant = ?1 AND seq > ?2 AND ?4 IS NULL ORDER BY seq LIMIT ?3";

pub(crate) const LAPSE_WINDOW_AGENT: &str = "SELECT seq,
        CASE WHEN (?5 IS NULL OR delivery = ?5) AND (?6 IS NULL OR lapsed_at >= ?6)
            THEN entry END
    FROM outbox INDEXED BY outbox_agent_seq
    WHERE tenant = ?1 AND agent = ?4 AND seq > ?2 ORDER BY seq LIMIT ?3";

/// The whole of [`LapseLog::lapses_page`](watcher_runtime::store::LapseLog::lapses_page) in one read transaction: steps through the window and
/// stops as soon as the page is full, so the cost follows the positions looked at.
pub(crate) fn lapses_page_in(
    conn: &mut Connection,
    tenant: &Tenant,
    query: &LapseQuery,
) -> Result<LapsePage, StoreError> {
    read_tx(conn, |tx| lapses_page_body(tx, tenant, query))
}

pub(crate) fn lapses_page_body(
    tx: &Connection,
    tenant: &Tenant,
    query: &LapseQuery,
) -> Result<LapsePage, StoreError> {
    let limit = query.limit.max(1);
    let budget = lapse_scan_budget(limit);
    let after = query.after.map_or(Ok(0), |a| int_of(a, "lapse cursor"))?;
    let window = if query.agent.is_some() {
        LAPSE_WINDOW_AGENT
    } else {
        LAPSE_WINDOW_TENANT
    };
    let agent = query.agent.as_ref().map(|a| a.as_str().to_owned());
    let mut page = LapsePage::default();
    {
        let mut stmt = tx.prepare_cached(window).map_err(db)?;
        let mut rows = stmt
            .query(params![
                tenant.as_str(),
                after,
                limit_of(budget),
                agent,
                query.delivery.map(DeliveryState::as_str),
                query.since.map(instant_key)
            ])
            .map_err(db)?;
        let mut looked = 0usize;
        let mut last = None;
        while let Some(row) = rows.next().map_err(db)? {
            let seq: i64 = row.get(0).map_err(db)?;
            let entry: Option<String> = row.get(1).map_err(db)?;
            if let Some(json) = entry {
                if page.entries.len() == limit {
                    // A match after a full page: the next page starts after the page's last.
                    page.next = last;
                    break;
                }
                page.entries.push((
                    u64_of(seq, "outbox seq")?,
                    from_json(&json, "outbox entry")?,
                ));
            }
            looked += 1;
            last = Some(u64_of(seq, "outbox seq")?);
            if looked == budget {
                page.next = last;
            }
        }
    }
    Ok(page)
}
