//! [`Cards`](watcher_runtime::store::Cards) on DynamoDB: agent cards and lifecycle descriptors ([`watcher_runtime::store::Cards`]).
//!
//! Each document is one item (`CARD#{tenant}#{agent}` / `#`, `LIFECYCLE#{tenant}#{agent}` /
//! `V#{protocolVersion}`) holding the JSON text, its instant and `digest`, the SHA-256 of the
//! document's canonical JSON ([`digest`]). Keeping a card first reads the kept item's `digest`
//! and `readAt` (one eventually consistent `GetItem`: half a read unit per 4 KB) and writes only
//! when the card changed or its kept read instant is [`CARD_READ_RECORDED_EVERY`](watcher_runtime::store::CARD_READ_RECORDED_EVERY) old
//! (docs/dynamodb.md "Cards and lifecycle descriptors across functions").

use super::*;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::Value;
use sha2::{Digest, Sha256};
use watcher_runtime::store::{read_at_to_record, CardKey, CardKind, Cards};

/// The attribute holding a kept document's [`digest`].
const DIGEST: &str = "digest";

/// Where the document `key` is kept and how its item names things: (partition key, sort key,
/// kind, the document's attribute, the instant's attribute).
fn item_of(key: CardKey<'_>) -> (String, String, &'static str, &'static str, &'static str) {
    let (tenant, agent) = (key.tenant, key.agent);
    match key.kind {
        CardKind::AgentCard => (
            keys::agent_card_pk(tenant, agent),
            ITEM.to_owned(),
            "agent-card",
            "card",
            "readAt",
        ),
        CardKind::Lifecycle(version) => (
            keys::lifecycle_pk(tenant, agent),
            format!("V#{version}"),
            "lifecycle",
            "descriptor",
            "probedAt",
        ),
    }
}

/// `doc` as canonical JSON text: object members sorted by name (byte order), no whitespace,
/// strings and numbers as `serde_json` writes them. Two values equal as JSON values (members in
/// any order) give the same text.
fn canonical(doc: &Value, out: &mut String) {
    match doc {
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (name, value)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(name.clone()).to_string());
                out.push(':');
                canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The SHA-256 of `doc`'s [`canonical`] JSON, 64 lowercase hex digits: what decides whether a
/// card read again is the card kept.
pub(crate) fn digest(doc: &Value) -> String {
    let mut text = String::new();
    canonical(doc, &mut text);
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl DynamoStore {
    /// The `digest` and instant of the document kept under `key`, as an eventually consistent
    /// `GetItem` answers them (a replica that lags costs at most one write more); `None` for
    /// either that is missing or unreadable (an item an earlier version wrote has no `digest`).
    async fn kept_digest(
        &self,
        key: CardKey<'_>,
    ) -> Result<Option<(Option<String>, Option<Instant>)>, StoreError> {
        let (pk, sk, _, _, at_name) = item_of(key);
        self.count(1u64);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .projection_expression("#d, #a")
            .expression_attribute_names("#d", DIGEST)
            .expression_attribute_names("#a", at_name)
            .consistent_read(false)
            .send()
            .await
            .map_err(error::backend)?;
        let text = |item: &Item, name: &str| match item.get(name) {
            Some(AttributeValue::S(v)) => Some(v.clone()),
            _ => None,
        };
        Ok(out.item.map(|item| {
            (
                text(&item, DIGEST),
                text(&item, at_name).and_then(|t| Instant::parse(&t).ok()),
            )
        }))
    }
}

#[async_trait]
impl Cards for DynamoStore {
    async fn keep(&self, key: CardKey<'_>, doc: &Value, at: Instant) -> Result<(), StoreError> {
        let (pk, sk, kind, doc_name, at_name) = item_of(key);
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(pk))
            .item(SK, s(sk))
            .item(KIND, s(kind))
            .item(TENANT, s(key.tenant.as_str()))
            .item(doc_name, s(doc.to_string()))
            .item(DIGEST, s(digest(doc)))
            .item(at_name, s(at.to_string()))
            .send()
            .await
            .map_err(error::backend)?;
        Ok(())
    }

    async fn kept(&self, key: CardKey<'_>) -> Result<Option<(Value, Instant)>, StoreError> {
        let (pk, sk, _, doc_name, at_name) = item_of(key);
        self.get(pk, &sk)
            .await?
            .map(|item| kept_document(&item, doc_name, at_name, &key.what()))
            .transpose()
    }

    /// The rule of [`Cards::put_agent_card`], by the kept `digest`: one eventually consistent
    /// `GetItem` of the kept card's `digest` and `readAt`, and the `PutItem` only when the digest
    /// differs (or is missing) or `readAt` is [`CARD_READ_RECORDED_EVERY`](watcher_runtime::store::CARD_READ_RECORDED_EVERY) older than `read_at`.
    /// At the goal's 10,000 agents and hundreds of instances, each card's partition then takes at
    /// most one write every five minutes instead of one per instance's cold start.
    async fn put_agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        card: &Value,
        read_at: Instant,
    ) -> Result<(), StoreError> {
        let key = CardKey {
            tenant,
            agent,
            kind: CardKind::AgentCard,
        };
        if let Some((Some(kept), Some(kept_at))) = self.kept_digest(key).await? {
            if kept == digest(card) && !read_at_to_record(kept_at, read_at) {
                return Ok(());
            }
        }
        self.keep(key, card, read_at).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_documents_have_one_digest_and_different_ones_another() {
        let card = json!({ "name": "Booking", "skills": [{ "id": "b", "tags": ["x"] }], "n": 1.5 });
        let reordered: Value = serde_json::from_str(
            r#"{"skills":[{"tags":["x"],"id":"b"}],"n":1.5,"name":"Booking"}"#,
        )
        .unwrap();
        let mut text = String::new();
        canonical(&card, &mut text);
        assert_eq!(
            text,
            r#"{"n":1.5,"name":"Booking","skills":[{"id":"b","tags":["x"]}]}"#
        );
        assert_eq!(digest(&card), digest(&reordered));
        assert_eq!(digest(&card).len(), 64);
        // SHA-256 of the empty object's text `{}`.
        assert_eq!(
            digest(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        let changed =
            json!({ "name": "Booking", "skills": [{ "id": "b", "tags": ["y"] }], "n": 1.5 });
        assert_ne!(digest(&card), digest(&changed));
        let order_matters_in_arrays = json!({ "name": "Booking", "skills": [], "n": [1, 2] });
        let swapped = json!({ "name": "Booking", "skills": [], "n": [2, 1] });
        assert_ne!(digest(&order_matters_in_arrays), digest(&swapped));
        let escaped = json!({ "a\"b": "c\nd" });
        let mut text = String::new();
        canonical(&escaped, &mut text);
        assert_eq!(text, r#"{"a\"b":"c\nd"}"#);
    }
}
