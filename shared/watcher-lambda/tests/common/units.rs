//! DynamoDB's billing units, measured while the functions run on the emulator: read request units
//! from the items each read answers, write request units from the items each write touches
//! (their sizes before and after, read from the table), and the index writes those changes cause.
//! `docs/costs.md` is generated from these and `docs/prices.toml`.
//!
//! The rules are DynamoDB's on-demand ones ("Read and write request units", the developer guide's
//! "Item sizes"): a read is 1 unit per 4 KB when strongly consistent, half that when eventually
//! consistent (every index read is); a write is 1 unit per 1 KB of the larger of the item before
//! and after; inside a transaction each costs double; an index entry written costs 1 unit per KB
//! of what the index projects, one deleted 1 unit, one whose key changes both. Each global
//! secondary index an item change touches bills its own units, on every write request: "the
//! total provisioned throughput cost for a write consists of the sum of write capacity units
//! consumed by writing to the base table and those consumed by updating the global secondary
//! indexes" (<https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html>,
//! "Write capacity units consumed"). So the items are read before and after each write request
//! ([`Write::states`]): an index entry a step puts and a later request of the same step deletes
//! costs both, though the table before and after the step shows neither.
//!
//! Written here, not taken from a crate: no crate computes DynamoDB's billing sizes.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_dynamodb::operation::batch_get_item::{BatchGetItemInput, BatchGetItemOutput};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::get_item::{GetItemInput, GetItemOutput};
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_dynamodb::operation::query::{QueryInput, QueryOutput};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsInput;
use aws_sdk_dynamodb::operation::update_item::UpdateItemInput;
use aws_sdk_dynamodb::types::{AttributeValue, ProjectionType};

/// One item, as DynamoDB holds it.
pub type Item = std::collections::HashMap<String, AttributeValue>;

/// An item's size in bytes, by DynamoDB's rules: each attribute's name in UTF-8 plus its value.
pub fn item_size(item: &Item) -> u64 {
    item.iter()
        .map(|(name, value)| name.len() as u64 + value_size(value))
        .sum()
}

/// A value's size in bytes: strings and binaries their length, a number about one byte per two
/// significant digits plus one, a boolean or null one, a list or map three plus one per element
/// and its elements (a map's with their names), a set its elements.
pub fn value_size(value: &AttributeValue) -> u64 {
    match value {
        AttributeValue::S(s) => s.len() as u64,
        AttributeValue::N(n) => number_size(n),
        AttributeValue::B(b) => b.as_ref().len() as u64,
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::Ss(v) => v.iter().map(|s| s.len() as u64).sum(),
        AttributeValue::Ns(v) => v.iter().map(|n| number_size(n)).sum(),
        AttributeValue::Bs(v) => v.iter().map(|b| b.as_ref().len() as u64).sum(),
        AttributeValue::L(v) => 3 + v.iter().map(|e| 1 + value_size(e)).sum::<u64>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, e)| 1 + k.len() as u64 + value_size(e))
                .sum::<u64>()
        }
        _ => 0,
    }
}

fn number_size(n: &str) -> u64 {
    let digits = n
        .trim_start_matches('-')
        .replace('.', "")
        .trim_start_matches('0')
        .trim_end_matches('0')
        .len() as u64;
    digits.div_ceil(2) + 1
}

/// `size` in units of `unit` bytes, at least one.
fn units(size: u64, unit: u64) -> u64 {
    size.div_ceil(unit).max(1)
}

/// What one write request touched: the item put, or the key of the item updated, deleted or
/// checked; and whether it was part of a transaction.
#[derive(Debug, Clone)]
pub struct Write {
    /// The item (`Put`) or the key (the others).
    pub attrs: Item,
    /// A transaction's item, billed double.
    pub transactional: bool,
    /// A `ConditionCheck`: billed as a write of the item as it stood, changing nothing.
    pub check_only: bool,
    /// The item as it stood just before its request and just after it (`None`: absent), read
    /// by key when the step is measured per request (`Requests::measure_per_request`); when
    /// `None`, the step's table before and after it stand in.
    pub states: Option<(Option<Item>, Option<Item>)>,
}

/// What the interceptor gathered over a step: read units, in halves (an eventually consistent
/// read of up to 4 KB is one half), and every write.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Read request units × 2.
    pub read_halves: u64,
    /// The writes, in order.
    pub writes: Vec<Write>,
    /// SQS requests (each attempt) to a standard queue, the timer queue: priced below FIFO's.
    pub sqs_standard: u64,
}

/// The queue an SQS request names, for the requests the functions and the tests make.
pub fn sqs_queue_url(
    input: &aws_smithy_runtime_api::client::interceptors::context::Input,
) -> Option<&str> {
    use aws_sdk_sqs::operation as op;
    if let Some(i) = input.downcast_ref::<op::send_message::SendMessageInput>() {
        return i.queue_url();
    }
    if let Some(i) = input.downcast_ref::<op::send_message_batch::SendMessageBatchInput>() {
        return i.queue_url();
    }
    if let Some(i) = input.downcast_ref::<op::receive_message::ReceiveMessageInput>() {
        return i.queue_url();
    }
    if let Some(i) = input.downcast_ref::<op::delete_message::DeleteMessageInput>() {
        return i.queue_url();
    }
    if let Some(i) = input.downcast_ref::<op::delete_message_batch::DeleteMessageBatchInput>() {
        return i.queue_url();
    }
    if let Some(i) =
        input.downcast_ref::<op::change_message_visibility::ChangeMessageVisibilityInput>()
    {
        return i.queue_url();
    }
    if let Some(i) = input
        .downcast_ref::<op::change_message_visibility_batch::ChangeMessageVisibilityBatchInput>()
    {
        return i.queue_url();
    }
    None
}

/// The writes a DynamoDB request makes, from its typed input (`read_before_serialization`).
pub fn writes_of(
    input: &aws_smithy_runtime_api::client::interceptors::context::Input,
) -> Vec<Write> {
    let plain = |attrs: &Item| Write {
        attrs: attrs.clone(),
        transactional: false,
        check_only: false,
        states: None,
    };
    if let Some(put) = input.downcast_ref::<PutItemInput>() {
        return put.item.iter().map(plain).collect();
    }
    if let Some(update) = input.downcast_ref::<UpdateItemInput>() {
        return update.key.iter().map(plain).collect();
    }
    if let Some(delete) = input.downcast_ref::<DeleteItemInput>() {
        return delete.key.iter().map(plain).collect();
    }
    let Some(tx) = input.downcast_ref::<TransactWriteItemsInput>() else {
        return Vec::new();
    };
    let mut writes = Vec::new();
    for item in tx.transact_items() {
        let (attrs, check_only) = if let Some(p) = item.put() {
            (p.item().clone(), false)
        } else if let Some(u) = item.update() {
            (u.key().clone(), false)
        } else if let Some(d) = item.delete() {
            (d.key().clone(), false)
        } else if let Some(c) = item.condition_check() {
            (c.key().clone(), true)
        } else {
            continue;
        };
        writes.push(Write {
            attrs,
            transactional: true,
            check_only,
            states: None,
        });
    }
    writes
}

/// How a read request reads: strongly consistent or not, and how many keys it asks for (a key
/// that finds nothing still costs the least a read costs). Kept between the request's input
/// and its output.
#[derive(Debug, Clone, Copy)]
pub struct ReadKind {
    consistent: bool,
    keys: u64,
}

impl aws_smithy_types::config_bag::Storable for ReadKind {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

/// The read a request makes, from its typed input.
pub fn read_kind(
    input: &aws_smithy_runtime_api::client::interceptors::context::Input,
) -> Option<ReadKind> {
    if let Some(get) = input.downcast_ref::<GetItemInput>() {
        return Some(ReadKind {
            consistent: get.consistent_read.unwrap_or(false),
            keys: 1,
        });
    }
    if let Some(batch) = input.downcast_ref::<BatchGetItemInput>() {
        let requested = batch.request_items.as_ref()?;
        return Some(ReadKind {
            consistent: requested
                .values()
                .all(|k| k.consistent_read.unwrap_or(false)),
            keys: requested.values().map(|k| k.keys.len() as u64).sum(),
        });
    }
    if let Some(query) = input.downcast_ref::<QueryInput>() {
        return Some(ReadKind {
            consistent: query.index_name.is_none() && query.consistent_read.unwrap_or(false),
            keys: 1,
        });
    }
    None
}

/// The read units a request's output cost, in halves: each item by its size (a query's items
/// by their total), each key that found nothing at the least; a `Select COUNT` query, which
/// answers no items, at the least (its scanned items' sizes are not in the answer: the count is
/// a lower bound there).
pub fn read_halves(
    kind: ReadKind,
    output: &aws_smithy_runtime_api::client::interceptors::context::Output,
) -> u64 {
    let per = |size: u64| units(size, 4096) * if kind.consistent { 2 } else { 1 };
    if let Some(get) = output.downcast_ref::<GetItemOutput>() {
        return per(get.item.as_ref().map_or(0, item_size));
    }
    if let Some(batch) = output.downcast_ref::<BatchGetItemOutput>() {
        let found: Vec<&Item> = batch
            .responses
            .iter()
            .flat_map(|t| t.values())
            .flatten()
            .collect();
        let missing = kind.keys.saturating_sub(found.len() as u64);
        return found.iter().map(|i| per(item_size(i))).sum::<u64>() + missing * per(0);
    }
    if let Some(query) = output.downcast_ref::<QueryOutput>() {
        return per(query.items().iter().map(item_size).sum());
    }
    0
}

/// The table's key and its indexes, read once with `DescribeTable`.
#[derive(Debug, Clone)]
pub struct Schema {
    key: Vec<String>,
    indexes: Vec<Index>,
}

#[derive(Debug, Clone)]
struct Index {
    name: String,
    key: Vec<String>,
    /// `None`: every attribute; otherwise the ones projected besides the keys.
    projected: Option<BTreeSet<String>>,
}

impl Schema {
    /// The schema of `table`.
    pub async fn of(ddb: &aws_sdk_dynamodb::Client, table: &str) -> Schema {
        let out = ddb
            .describe_table()
            .table_name(table)
            .send()
            .await
            .expect("describe table");
        let t = out.table.expect("table description");
        let names = |ks: &[aws_sdk_dynamodb::types::KeySchemaElement]| {
            ks.iter()
                .map(|k| k.attribute_name.clone())
                .collect::<Vec<_>>()
        };
        let indexes = t
            .global_secondary_indexes()
            .iter()
            .map(|g| {
                let p = g.projection.as_ref();
                let projected = match p.and_then(|p| p.projection_type.clone()) {
                    Some(ProjectionType::All) => None,
                    _ => Some(
                        p.map(|p| p.non_key_attributes().iter().cloned().collect())
                            .unwrap_or_default(),
                    ),
                };
                Index {
                    name: g.index_name.clone().unwrap_or_default(),
                    key: names(g.key_schema()),
                    projected,
                }
            })
            .collect();
        Schema {
            key: names(t.key_schema()),
            indexes,
        }
    }

    /// The names of the table's key attributes (partition key first).
    pub fn key_names(&self) -> &[String] {
        &self.key
    }

    /// The item's primary key, as text.
    fn key_of(&self, attrs: &Item) -> String {
        self.key
            .iter()
            .map(|k| format!("{:?}", attrs.get(k)))
            .collect::<Vec<_>>()
            .join("|")
    }

    /// Every item of `table`, by primary key (a consistent scan).
    pub async fn scan(
        &self,
        ddb: &aws_sdk_dynamodb::Client,
        table: &str,
    ) -> BTreeMap<String, Item> {
        let mut items = BTreeMap::new();
        let mut start = None;
        loop {
            let out = ddb
                .scan()
                .table_name(table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("scan");
            for item in out.items() {
                items.insert(self.key_of(item), item.clone());
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return items;
            }
        }
    }

    /// The write request units of `writes`, given the table `before` and `after` them: each
    /// write by the larger of its item's sizes, double in a transaction; then each index entry
    /// the changed items put, moved or deleted.
    pub fn write_units(
        &self,
        writes: &[Write],
        before: &BTreeMap<String, Item>,
        after: &BTreeMap<String, Item>,
    ) -> u64 {
        self.partition_units(writes, before, after).values().sum()
    }

    /// [`Schema::write_units`] by the partition that takes them: `table <pk>` for an item,
    /// `<index> <partition key>` for an index entry (a moved entry's delete goes to its old
    /// partition, its put to the new one). A write that carries its own states
    /// ([`Write::states`]) is billed from them, its index entries per request; the others from
    /// the step's `before` and `after`, each changed item's index entries once.
    pub fn partition_units(
        &self,
        writes: &[Write],
        before: &BTreeMap<String, Item>,
        after: &BTreeMap<String, Item>,
    ) -> BTreeMap<String, u64> {
        let size = |m: &BTreeMap<String, Item>, k: &str| m.get(k).map_or(0, item_size);
        let mut out: BTreeMap<String, u64> = BTreeMap::new();
        let mut changed = BTreeSet::new();
        for w in writes {
            let k = self.key_of(&w.attrs);
            let bytes = match (&w.states, w.check_only) {
                (Some((b, _)), true) => b.as_ref().map_or(0, item_size),
                (Some((b, a)), false) => {
                    let sizes = |i: &Option<Item>| i.as_ref().map_or(0, item_size);
                    sizes(b).max(sizes(a))
                }
                (None, true) => size(before, &k),
                (None, false) => {
                    changed.insert(k.clone());
                    size(before, &k).max(size(after, &k))
                }
            };
            let pk = w
                .attrs
                .get(&self.key[0])
                .map(partition_text)
                .unwrap_or_default();
            *out.entry(format!("table {pk}")).or_default() +=
                units(bytes, 1024) * if w.transactional { 2 } else { 1 };
            if let (Some((b, a)), false) = (&w.states, w.check_only) {
                self.index_units(b.as_ref(), a.as_ref(), &mut out);
            }
        }
        for k in &changed {
            self.index_units(before.get(k), after.get(k), &mut out);
        }
        out
    }

    /// Adds to `out` what one item's change from `before` to `after` costs each index.
    fn index_units(
        &self,
        before: Option<&Item>,
        after: Option<&Item>,
        out: &mut BTreeMap<String, u64>,
    ) {
        for index in &self.indexes {
            for (partition, n) in index.write_units(before, after, &self.key) {
                *out.entry(format!("{} {partition}", index.name))
                    .or_default() += n;
            }
        }
    }
}

impl Schema {
    /// The partitions `writes` take write units from, given the table `before` and `after`
    /// them: `table <pk>` for each item written or checked (a `ConditionCheck` changes nothing
    /// but is billed as a write to the partition it checks, so it counts against that
    /// partition's 1,000 units a second like a put), `<index> <partition key>` for each index
    /// entry put, changed or deleted.
    pub fn partitions_written(
        &self,
        writes: &[Write],
        before: &BTreeMap<String, Item>,
        after: &BTreeMap<String, Item>,
    ) -> BTreeSet<String> {
        self.partition_units(writes, before, after)
            .into_keys()
            .collect()
    }
}

fn partition_text(v: &AttributeValue) -> String {
    match v {
        AttributeValue::S(s) => s.clone(),
        AttributeValue::N(n) => n.clone(),
        other => format!("{other:?}"),
    }
}

impl Index {
    /// The entry `item` has in this index, if any: its index key and the projected attributes.
    fn entry(&self, item: Option<&Item>, table_key: &[String]) -> Option<(String, Item)> {
        let item = item?;
        let key: Vec<String> = self
            .key
            .iter()
            .map(|k| item.get(k).map(|v| format!("{v:?}")))
            .collect::<Option<_>>()?;
        let projected: Item = item
            .iter()
            .filter(|(name, _)| {
                self.projected.as_ref().is_none_or(|p| p.contains(*name))
                    || self.key.contains(name)
                    || table_key.contains(name)
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some((key.join("|"), projected))
    }

    /// The units an item's change costs this index, by partition: an entry put 1 per KB, one
    /// deleted 1, one changed in place 1 per KB of the larger, one moved both.
    fn write_units(
        &self,
        before: Option<&Item>,
        after: Option<&Item>,
        table_key: &[String],
    ) -> Vec<(String, u64)> {
        let partition = |item: Option<&Item>| {
            item.and_then(|i| i.get(&self.key[0]))
                .map(partition_text)
                .unwrap_or_default()
        };
        match (self.entry(before, table_key), self.entry(after, table_key)) {
            (None, None) => vec![],
            (None, Some((_, a))) => vec![(partition(after), units(item_size(&a), 1024))],
            (Some(_), None) => vec![(partition(before), 1)],
            (Some((bk, b)), Some((ak, a))) if bk == ak => {
                if a == b {
                    vec![]
                } else {
                    vec![(
                        partition(after),
                        units(item_size(&a).max(item_size(&b)), 1024),
                    )]
                }
            }
            (Some(_), Some((_, a))) => vec![
                (partition(before), 1),
                (partition(after), units(item_size(&a), 1024)),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_dynamodbs_rules() {
        let item: Item = [
            ("pk".to_owned(), AttributeValue::S("SUBJ#a".into())),
            ("n".to_owned(), AttributeValue::N("12345".into())),
            ("ok".to_owned(), AttributeValue::Bool(true)),
        ]
        .into();
        // 2 + 6, 1 + (3 + 1), 2 + 1.
        assert_eq!(item_size(&item), 8 + 5 + 3);
        assert_eq!(number_size("-0.00120"), 2);
        assert_eq!(units(0, 1024), 1);
        assert_eq!(units(1025, 1024), 2);
    }

    /// An index entry one request of a step puts and a later request of the same step deletes
    /// costs that index a unit each time (DynamoDB bills each request's index writes), though
    /// the table before and after the step holds no entry: measured per request, the step's
    /// two writes cost 1 + 1 on the table and 1 + 1 on the index; from the step's ends alone,
    /// the index's 2 would be missed.
    #[test]
    fn index_writes_are_billed_per_request() {
        let schema = Schema {
            key: vec!["pk".into(), "sk".into()],
            indexes: vec![Index {
                name: "due".into(),
                key: vec!["due".into(), "sk".into()],
                projected: Some(BTreeSet::new()),
            }],
        };
        let key: Item = [
            ("pk".to_owned(), AttributeValue::S("OUTBOX#t#3".into())),
            ("sk".to_owned(), AttributeValue::S("x".into())),
        ]
        .into();
        let mut queued = key.clone();
        queued.insert("due".into(), AttributeValue::S("queued#7".into()));
        let per_request = |b: Option<&Item>, a: &Item| Write {
            attrs: key.clone(),
            transactional: false,
            check_only: false,
            states: Some((b.cloned(), Some(a.clone()))),
        };
        let writes = [per_request(None, &queued), per_request(Some(&queued), &key)];
        let empty = BTreeMap::new();
        let mut after = BTreeMap::new();
        after.insert(schema.key_of(&key), key.clone());
        let units = schema.partition_units(&writes, &empty, &after);
        assert_eq!(units.get("table OUTBOX#t#3"), Some(&2), "{units:?}");
        assert_eq!(units.get("due queued#7"), Some(&2), "{units:?}");
        let step_ends: Vec<Write> = writes
            .iter()
            .map(|w| Write {
                states: None,
                ..w.clone()
            })
            .collect();
        let units = schema.partition_units(&step_ends, &empty, &after);
        assert_eq!(units.get("due queued#7"), None, "{units:?}");
    }

    /// A `ConditionCheck` takes a write unit from the partition it checks (DynamoDB bills it
    /// as a write), twice in a transaction, though it changes no item and no index entry.
    #[test]
    fn a_condition_check_takes_units_from_its_partition() {
        let schema = Schema {
            key: vec!["pk".into(), "sk".into()],
            indexes: vec![],
        };
        let key = |pk: &str| -> Item {
            [
                ("pk".to_owned(), AttributeValue::S(pk.into())),
                ("sk".to_owned(), AttributeValue::S("x".into())),
            ]
            .into()
        };
        let check = Write {
            attrs: key("OUTBOX#t"),
            transactional: true,
            check_only: true,
            states: None,
        };
        let put = Write {
            attrs: key("OUTBOX#t#3"),
            transactional: true,
            check_only: false,
            states: None,
        };
        let empty = BTreeMap::new();
        let mut after = BTreeMap::new();
        after.insert(schema.key_of(&put.attrs), put.attrs.clone());
        let writes = [check, put];
        let units = schema.partition_units(&writes, &empty, &after);
        assert_eq!(units.get("table OUTBOX#t"), Some(&2));
        assert_eq!(units.get("table OUTBOX#t#3"), Some(&2));
        let written = schema.partitions_written(&writes, &empty, &after);
        assert!(written.contains("table OUTBOX#t"), "{written:?}");
    }
}
