//! Every open timer, page by page, from the sharded `timers` index: for the operator's re-arm
//! (`a2a-watcher rearm`), which re-creates each timer's schedule after a restore, a stack
//! replacement or lost schedules (docs/howto/recovery.md).
//!
//! Not on any request path: the walk reads every subject that holds a pending timer, one
//! `Query` page at a time over each partition of the index in turn, and hands back a
//! [`TimersCursor`] that resumes it (printable as a token, so an interrupted walk goes on from
//! where it stopped rather than from the start).

use aws_sdk_dynamodb::types::AttributeValue;

use super::*;

/// Where a walk over the open timers stands: the partition of the `timers` index being read
/// (an index into every partition a read queries: the shards and the earlier versions' one
/// value) and the key the next page starts after (`None`: the partition's start).
///
/// Its token ([`TimersCursor::token`], [`TimersCursor::parse`]) is `P` or `P:{json}`: `P` the
/// partition's position, the JSON an object of the start key's string attributes (the table's
/// `pk`, `sk` and the index's `timersPk`, `timersSk`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TimersCursor {
    partition: usize,
    after: Option<BTreeMap<String, String>>,
}

/// A page of the walk: the timers of the subjects it read (each subject's in firing order), how
/// many subjects that was, and where the next page starts (`None` after the last).
#[derive(Debug, Clone)]
pub struct OpenTimersPage {
    /// The pending timers of the page's subjects.
    pub timers: Vec<DueTimer>,
    /// Subjects (index items) read.
    pub subjects: usize,
    /// The cursor of the next page; `None` when every partition has been read.
    pub next: Option<TimersCursor>,
    /// The partition this page read, and how many partitions there are (for progress).
    pub partition: (usize, usize),
}

impl TimersCursor {
    /// The walk's start: the first partition, from its start.
    pub fn start() -> Self {
        TimersCursor::default()
    }

    /// The cursor as one line of text, to print and give back to [`TimersCursor::parse`].
    pub fn token(&self) -> String {
        match &self.after {
            None => self.partition.to_string(),
            Some(key) => format!(
                "{}:{}",
                self.partition,
                serde_json::to_string(key).unwrap_or_default()
            ),
        }
    }

    /// The cursor of `token` ([`TimersCursor::token`]).
    ///
    /// # Errors
    /// A description of what is wrong: no partition number, one past the last partition, or a
    /// key that is not a JSON object of strings.
    pub fn parse(token: &str) -> Result<Self, String> {
        let (partition, key) = match token.split_once(':') {
            Some((p, k)) => (p, Some(k)),
            None => (token, None),
        };
        let partition: usize = partition.trim().parse().map_err(|_| {
            format!("resume token {token:?}: expected a partition number before ':'")
        })?;
        let count = timers_partitions().len();
        if partition >= count {
            return Err(format!(
                "resume token {token:?}: partition {partition} is past the last ({})",
                count - 1
            ));
        }
        let after = match key {
            None => None,
            Some(k) => Some(
                serde_json::from_str::<BTreeMap<String, String>>(k).map_err(|e| {
                    format!("resume token {token:?}: the key is not a JSON object of strings: {e}")
                })?,
            ),
        };
        Ok(TimersCursor { partition, after })
    }
}

impl DynamoStore {
    /// One page of the walk over every open timer, from `cursor`: one `Query` of at most
    /// `page_size` subjects (1 to 1,000) of the `timers` index partition the cursor names. A
    /// partition read to its end moves the cursor to the next partition's start; the last one
    /// ends the walk (`next` is `None`). The index is read eventually consistently: a timer
    /// written in the last second may be missed, and the sweep finds it when due.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when DynamoDB fails (the page can be read again from the same
    /// cursor); [`StoreError::Corrupt`] for an index item that does not read back, or a start
    /// key of other than string attributes.
    pub async fn open_timers_page(
        &self,
        cursor: &TimersCursor,
        page_size: usize,
    ) -> Result<OpenTimersPage, StoreError> {
        let partitions = timers_partitions();
        let Some(partition) = partitions.get(cursor.partition) else {
            return Ok(OpenTimersPage {
                timers: Vec::new(),
                subjects: 0,
                next: None,
                partition: (cursor.partition, partitions.len()),
            });
        };
        let start = cursor.after.as_ref().map(|key| {
            key.iter()
                .map(|(k, v)| (k.clone(), AttributeValue::S(v.clone())))
                .collect::<Item>()
        });
        let query = self
            .index_query(TIMERS_INDEX, (TIMERS_PK, partition.clone()))
            .key_condition_expression("#p = :p")
            .limit(i32::try_from(page_size.clamp(1, 1000)).unwrap_or(1000))
            .set_exclusive_start_key(start);
        let page = self.query_page(query).await?;
        let mut timers = Vec::new();
        for item in &page.items {
            timers.extend(timers_of(item)?);
        }
        let next = match page.next {
            Some(key) => {
                let mut after = BTreeMap::new();
                for (name, value) in key {
                    match value {
                        AttributeValue::S(v) => {
                            after.insert(name, v);
                        }
                        other => {
                            return Err(StoreError::Corrupt(format!(
                            "timers index start key: attribute {name} is {other:?}, not a string"
                        )))
                        }
                    }
                }
                Some(TimersCursor {
                    partition: cursor.partition,
                    after: Some(after),
                })
            }
            None if cursor.partition + 1 < partitions.len() => Some(TimersCursor {
                partition: cursor.partition + 1,
                after: None,
            }),
            None => None,
        };
        Ok(OpenTimersPage {
            timers,
            subjects: page.items.len(),
            next,
            partition: (cursor.partition, partitions.len()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_back() {
        let start = TimersCursor::start();
        assert_eq!(start.token(), "0");
        assert_eq!(TimersCursor::parse("0").unwrap(), start);
        let mid = TimersCursor {
            partition: 7,
            after: Some(BTreeMap::from([
                ("pk".to_owned(), "subject#acme#shipment#S-1".to_owned()),
                ("timersPk".to_owned(), "timers#7".to_owned()),
            ])),
        };
        let token = mid.token();
        assert!(token.starts_with("7:{"), "{token}");
        assert_eq!(TimersCursor::parse(&token).unwrap(), mid);
    }

    #[test]
    fn bad_tokens_are_refused_with_the_reason() {
        let last = timers_partitions().len() - 1;
        assert!(TimersCursor::parse(&last.to_string()).is_ok());
        for (token, says) in [
            ("", "partition number"),
            ("x", "partition number"),
            ("64:", "not a JSON object"),
            ("3:[1]", "not a JSON object"),
            ("3:{\"pk\":1}", "not a JSON object"),
        ] {
            let e = TimersCursor::parse(token).unwrap_err();
            assert!(e.contains(says), "{token:?}: {e}");
        }
        let past = TimersCursor::parse(&(last + 1).to_string()).unwrap_err();
        assert!(past.contains("past the last"), "{past}");
    }
}
