//! Due timers from the sharded `timers` index, merged in firing order.

use super::*;

impl DynamoStore {
    /// Timers due at or before `until` of the subjects in the `timers` index partition
    /// `partition`, earliest first, at most `limit`: a `Query` in ascending order that stops
    /// once the next subject's earliest timer comes after the `limit`-th found.
    pub(crate) async fn due_timers_in(
        &self,
        partition: String,
        until: Instant,
        limit: usize,
    ) -> Result<Vec<DueTimer>, StoreError> {
        let mut due: Vec<DueTimer> = Vec::new();
        let bound = due_key_bound(until);
        let mut start = None;
        'pages: loop {
            let query = self
                .index_query(TIMERS_INDEX, (TIMERS_PK, partition.clone()))
                .key_condition_expression("#p = :p AND #s < :bound")
                .expression_attribute_names("#s", TIMERS_SK)
                .expression_attribute_values(":bound", s(bound.clone()))
                .set_exclusive_start_key(start);
            let page = self.query_page(query).await?;
            for item in page.items {
                let timers = timers_of(&item)?;
                // Subjects come in the order of their earliest timer: once that is after the
                // `limit`-th timer found so far, no later subject has one before it.
                if due.len() >= limit {
                    due.sort_by_key(timer_order);
                    due.truncate(limit);
                    if let (Some(first), Some(last)) = (timers.first(), due.last()) {
                        if timer_order(first) > timer_order(last) {
                            break 'pages;
                        }
                    }
                }
                due.extend(timers.into_iter().filter(|t| t.at <= until));
            }
            start = page.next;
            if start.is_none() {
                break;
            }
        }
        due.sort_by_key(timer_order);
        due.truncate(limit);
        Ok(due)
    }
}
