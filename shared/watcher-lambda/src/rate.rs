//! The submitter function's rate buckets, shared by every instance: one DynamoDB item per
//! (tenant, agent), `RATE#{tenant}#{agent}` / `#`, holding the bucket's GCRA state (`tat`, the
//! theoretical arrival time of the next lapse task, in nanoseconds since the epoch), so that
//! `[delivery] per_minute` and `burst` (expectations-v1 §13.2) hold for an agent across
//! concurrent submitter instances, not per instance (docs/dynamodb.md "Rate buckets").
//!
//! A token is taken with conditional writes and no read: first as if the bucket were idle (`tat`
//! absent or not after `now`, when the new `tat` is `now` plus one interval whatever it was), which
//! is one `PutItem` for an agent sent to less often than its rate; when that condition fails, the
//! write answers the stored `tat` (`ReturnValuesOnConditionCheckFailure`), and the token is
//! taken from it by a write conditional on `tat` unchanged; a lost race learns the newer `tat`
//! the same way. The arithmetic is `watcher_delivery::rate::gcra`, the same as serve's in-memory
//! limiter.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_delivery::rate::{gcra_many, BucketError, RateBuckets, RateLimit};
use watcher_runtime::retry::{Backoff, Retry};

/// Reads and conditional writes one token may take before the caller is told to wait a token's
/// interval instead (only under heavy contention on one agent).
pub const MAX_ROUNDS: usize = 8;

/// An idle bucket's item expires (DynamoDB TTL, `expiresAt`) this long after its `tat`: an
/// absent item is a full bucket, exactly what the expired one had become.
pub const IDLE_EXPIRY_SECS: i128 = 24 * 3600;

/// [`RateBuckets`] kept in the watcher's table.
#[derive(Debug, Clone)]
pub struct DynamoRateBuckets {
    client: Client,
    table: String,
    limit: RateLimit,
    /// How a lost race waits before the next round ([`Backoff::CONFLICT`] over
    /// [`MAX_ROUNDS`] rounds).
    retry: Retry,
}

impl DynamoRateBuckets {
    /// Buckets applying `limit` (the submitter's `[delivery]`) in `table`.
    pub fn new(client: Client, table: impl Into<String>, limit: RateLimit) -> Self {
        DynamoRateBuckets {
            client,
            table: table.into(),
            limit,
            retry: Retry::new(Backoff::CONFLICT.with_attempts(MAX_ROUNDS as u32)),
        }
    }

    /// These buckets, a lost race waiting per `retry` (tests: a recording sleeper).
    #[must_use]
    pub fn with_retry(mut self, retry: Retry) -> Self {
        self.retry = retry;
        self
    }
}

impl DynamoRateBuckets {
    /// The `PutItem` of the bucket item `pk` of `agent` of `tenant` with `tat` = `next`
    /// (nanoseconds) and its expiry, to be given its condition.
    fn put(
        &self,
        pk: &str,
        tenant: &Tenant,
        agent: &AgentId,
        next: i128,
    ) -> aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder {
        let expires = next.div_euclid(1_000_000_000) + IDLE_EXPIRY_SECS;
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", AttributeValue::S(pk.to_owned()))
            .item("sk", AttributeValue::S("#".into()))
            .item("kind", AttributeValue::S("rate".into()))
            .item("tenant", AttributeValue::S(tenant.as_str().into()))
            .item("agent", AttributeValue::S(agent.as_str().into()))
            .item("tat", AttributeValue::N(next.to_string()))
            .item("expiresAt", AttributeValue::N(expires.to_string()))
    }
}

fn failed(e: impl std::fmt::Display) -> BucketError {
    BucketError(e.to_string())
}

#[async_trait]
impl RateBuckets for DynamoRateBuckets {
    async fn try_acquire(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        now: Instant,
    ) -> Result<Result<(), Instant>, BucketError> {
        Ok(self.take(tenant, agent, 1, now).await?.map(|_| ()))
    }

    async fn try_acquire_many(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        n: u32,
        now: Instant,
    ) -> Result<Result<u32, Instant>, BucketError> {
        self.take(tenant, agent, n, now).await
    }
}

impl DynamoRateBuckets {
    /// Takes up to `n` tokens of `agent` of `tenant` at `now` ([`gcra_many`]) by the conditional
    /// writes the module describes: `Ok(Ok(k))` tokens taken, `Ok(Err(at))` when none is free.
    async fn take(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        n: u32,
        now: Instant,
    ) -> Result<Result<u32, Instant>, BucketError> {
        if self.limit.per_minute == 0 {
            return Ok(Ok(n.max(1)));
        }
        let pk = watcher_store_dynamodb::rate_pk(tenant, agent);
        // The stored `tat`, once a failed write has told it (`None`: not known yet, so the first
        // write assumes an idle bucket).
        let mut known: Option<i128> = None;
        // Races lost so far: a write conditional on a `tat` another instance had just moved.
        // Each waits before the next round (the one retry policy, `watcher_runtime::retry`:
        // backoff with full jitter), so that instances contending for one agent's bucket
        // spread out instead of failing again in step. The first failed write of a take (the
        // idle guess, answered with the stored `tat`) is the ordinary path within a burst, not
        // a lost race, and does not wait.
        let mut lost = 0u32;
        for _ in 0..MAX_ROUNDS {
            if lost > 0 {
                self.retry.pause(lost).await;
            }
            let (taken, put) = match known {
                None => {
                    // Idle (or absent): gcra gives the same whatever the stored `tat` up to now.
                    let Ok((k, Some(next))) = gcra_many(self.limit, None, now, n) else {
                        return Ok(Ok(n.max(1)));
                    };
                    let put = self
                        .put(&pk, tenant, agent, next)
                        .condition_expression("attribute_not_exists(pk) OR tat <= :now")
                        .expression_attribute_values(
                            ":now",
                            AttributeValue::N(now.as_nanos().to_string()),
                        );
                    (k, put)
                }
                Some(old) => {
                    let (k, next) = match gcra_many(self.limit, Some(old), now, n) {
                        Err(at) => return Ok(Err(at)),
                        Ok((k, None)) => return Ok(Ok(k)),
                        Ok((k, Some(next))) => (k, next),
                    };
                    let put = self
                        .put(&pk, tenant, agent, next)
                        .condition_expression("tat = :old")
                        .expression_attribute_values(":old", AttributeValue::N(old.to_string()));
                    (k, put)
                }
            };
            match put
                .return_values_on_condition_check_failure(
                    aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await
            {
                Ok(_) => return Ok(Ok(taken)),
                Err(e)
                    if e.as_service_error()
                        .is_some_and(aws_sdk_dynamodb::operation::put_item::PutItemError::is_conditional_check_failed_exception) =>
                {
                    let stored = e.as_service_error().and_then(|se| match se {
                        aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(c) => {
                            c.item().and_then(|i| i.get("tat")).cloned()
                        }
                        _ => None,
                    });
                    if known.is_some() {
                        lost += 1;
                    }
                    known = match stored {
                        Some(AttributeValue::N(n)) => Some(
                            n.parse()
                                .map_err(|_| failed(format!("{pk}: tat {n:?} is not a number")))?,
                        ),
                        Some(_) => return Err(failed(format!("{pk}: tat is not a number"))),
                        // Gone meanwhile (expired): idle again.
                        None => None,
                    };
                }
                Err(e) => return Err(failed(aws_sdk_dynamodb::error::DisplayErrorContext(e))),
            }
        }
        // Lost every race: another instance is taking this agent's tokens right now. Waiting
        // one token's interval is what a lost race means anyway.
        let interval = 60_000_000_000i128 / i128::from(self.limit.per_minute);
        Ok(Err(
            Instant::from_nanos(now.as_nanos() + interval).unwrap_or(now)
        ))
    }
}
