//! [`Timers`] over EventBridge Scheduler: one one-time schedule per deadline and per horizon, in
//! the deployment's schedule group, invoking the timer function with a [`TimerInput`].
//!
//! A schedule is a hint. Its firing means "evaluate this key now": the timer function re-reads
//! the record and lapses only if the deadline has passed on its own clock; an early wake re-arms
//! (Scheduler fires anywhere within the minute), and the periodic sweep finds what a lost
//! schedule missed.

use async_trait::async_trait;
use aws_sdk_scheduler::operation::create_schedule::CreateScheduleError;
use aws_sdk_scheduler::operation::delete_schedule::DeleteScheduleError;
use aws_sdk_scheduler::operation::update_schedule::UpdateScheduleError;
use aws_sdk_scheduler::types::{
    ActionAfterCompletion, DeadLetterConfig, FlexibleTimeWindow, FlexibleTimeWindowMode,
    RetryPolicy, ScheduleState, Target,
};
use aws_sdk_scheduler::Client;
use jiff::SignedDuration;
use watcher_core::engine::TimerKey;
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_runtime::ports::{PortError, Timers};

use crate::error::{permanent, port_error, ConfigError};
use crate::names::{at_expression, schedule_name, validate_group_name, validate_schedule_name};
use crate::timer_input::TimerInput;
use crate::timer_queue::MAX_DELAY_SECS;

/// Scheduler's largest retry count for a target invocation, used by default.
pub const DEFAULT_MAX_RETRY_ATTEMPTS: i32 = 185;

/// Scheduler's longest retry period for a target invocation, in seconds (one day), used by
/// default.
pub const DEFAULT_MAX_EVENT_AGE_SECS: i32 = 86_400;

/// Longest schedule description Scheduler accepts, in bytes.
const MAX_DESCRIPTION_LEN: usize = 512;

/// How many create-or-update rounds [`SchedulerTimers::arm`] makes when the schedule keeps
/// appearing and disappearing under it (fired and deleted, or disarmed concurrently).
const ARM_ROUNDS: usize = 3;

/// What the schedules invoke, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// The deployment's schedule group (1 to 64 characters of `[0-9a-zA-Z-_.]`); it must exist.
    pub group: String,
    /// ARN of the timer function the schedules invoke.
    pub target_arn: String,
    /// ARN of the role Scheduler assumes to invoke it.
    pub role_arn: String,
    /// ARN of the SQS queue for invocations that exhaust their retries, if any.
    pub dlq_arn: Option<String>,
    /// Retries of a failed invocation, 0 to 185.
    pub max_retry_attempts: i32,
    /// How long a failed invocation is retried, in seconds, 60 to 86 400.
    pub max_event_age_secs: i32,
    /// How long before its instant each schedule fires, 0 to 900 s: zero by default;
    /// [`SCHEDULE_LEAD`](crate::SCHEDULE_LEAD) (60 s) when a [`TimerQueue`](crate::TimerQueue) finishes the wait
    /// (docs/aws-latency.md).
    pub lead: SignedDuration,
    /// ARN of the customer managed KMS key (symmetric, `arn:PARTITION:kms:REGION:ACCOUNT:key/ID`)
    /// Scheduler encrypts each schedule's input (tenant, subject, expectation) with, given as
    /// `KmsKeyArn` on every CreateSchedule and UpdateSchedule; `None`, Scheduler's AWS owned
    /// key. The caller then needs `kms:DescribeKey`, `kms:GenerateDataKey` and `kms:Decrypt` on
    /// it, and [`role_arn`](Self::role_arn) `kms:Decrypt` (EventBridge Scheduler user guide,
    /// "Encryption at rest"; docs/security.md, "Encryption at rest").
    pub kms_key_arn: Option<String>,
}

impl SchedulerConfig {
    /// Schedules in `group` invoking `target_arn` as `role_arn`, with the default retry policy
    /// ([`DEFAULT_MAX_RETRY_ATTEMPTS`] attempts for at most [`DEFAULT_MAX_EVENT_AGE_SECS`]) and
    /// no dead-letter queue.
    pub fn new(
        group: impl Into<String>,
        target_arn: impl Into<String>,
        role_arn: impl Into<String>,
    ) -> Self {
        SchedulerConfig {
            group: group.into(),
            target_arn: target_arn.into(),
            role_arn: role_arn.into(),
            dlq_arn: None,
            max_retry_attempts: DEFAULT_MAX_RETRY_ATTEMPTS,
            max_event_age_secs: DEFAULT_MAX_EVENT_AGE_SECS,
            lead: SignedDuration::ZERO,
            kms_key_arn: None,
        }
    }

    /// The same, each schedule firing `lead` before its instant (the timer function then
    /// re-arms the timer for the exact instant through a [`TimerQueue`](crate::TimerQueue)).
    /// Use [`SCHEDULE_LEAD`](crate::SCHEDULE_LEAD): Scheduler fires within the minute after `at()`, so a one-minute
    /// lead fires before the deadline, never after it.
    pub fn with_lead(mut self, lead: SignedDuration) -> Self {
        self.lead = lead;
        self
    }

    /// The same, sending invocations that exhaust their retries to the SQS queue `dlq_arn`.
    pub fn with_dead_letter_queue(mut self, dlq_arn: impl Into<String>) -> Self {
        self.dlq_arn = Some(dlq_arn.into());
        self
    }

    /// The same, each schedule's input encrypted with the customer managed KMS key
    /// `kms_key_arn` (see [`kms_key_arn`](Self::kms_key_arn)).
    pub fn with_kms_key(mut self, kms_key_arn: impl Into<String>) -> Self {
        self.kms_key_arn = Some(kms_key_arn.into());
        self
    }

    /// Checks the group name, the ARNs' form (a KMS key's ARN names the `kms` service) and
    /// the retry policy's bounds.
    ///
    /// # Errors
    /// [`ConfigError`] naming the first bad setting.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_group_name(&self.group).map_err(ConfigError::GroupName)?;
        let arns = [
            ("target_arn", Some(&self.target_arn)),
            ("role_arn", Some(&self.role_arn)),
            ("dlq_arn", self.dlq_arn.as_ref()),
            ("kms_key_arn", self.kms_key_arn.as_ref()),
        ];
        for (setting, value) in arns {
            if let Some(value) = value {
                if !value.starts_with("arn:") || value.len() <= "arn:".len() {
                    return Err(ConfigError::Arn {
                        setting,
                        value: value.clone(),
                    });
                }
            }
        }
        if let Some(key) = &self.kms_key_arn {
            // arn:PARTITION:kms:REGION:ACCOUNT:key/ID (or alias/NAME), as Scheduler's
            // KmsKeyArn pattern has it; a key of another service is refused before any call.
            if key.split(':').nth(2) != Some("kms") || key.split(':').count() != 6 {
                return Err(ConfigError::Arn {
                    setting: "kms_key_arn",
                    value: key.clone(),
                });
            }
        }
        if !(0..=185).contains(&self.max_retry_attempts)
            || !(60..=86_400).contains(&self.max_event_age_secs)
        {
            return Err(ConfigError::RetryPolicy {
                attempts: self.max_retry_attempts,
                max_age_secs: self.max_event_age_secs,
            });
        }
        if self.lead.is_negative() || self.lead.as_secs() > MAX_DELAY_SECS {
            return Err(ConfigError::Lead { lead: self.lead });
        }
        Ok(())
    }
}

/// [`Timers`] over EventBridge Scheduler.
///
/// Each timer is a one-time schedule named [`schedule_name`] in the configured group, firing at
/// [`at_expression`] of its instant less the configured [`lead`](SchedulerConfig::lead) in `UTC`
/// with the flexible time window off, deleted by Scheduler after it
/// fires (`ActionAfterCompletion: DELETE`), retried per the configured policy and dead-lettered
/// when configured, its input under the configured customer KMS key when there is one.
///
/// Callers decide with [`should_schedule`](crate::should_schedule) whether to arm at all: a timer
/// due already, or within Scheduler's minute, is evaluated at once instead.
///
/// A fired schedule deletes itself after its invocation. If the timer function re-arms the same
/// key (an early wake) before that deletion lands, the update may be deleted with it; the
/// periodic sweep over the record's deadline index finds such a lost timer and lapses late,
/// never twice (the `messageId` is deterministic).
#[derive(Debug, Clone)]
pub struct SchedulerTimers {
    client: Client,
    config: SchedulerConfig,
}

impl SchedulerTimers {
    /// Timers on `client` (build it once, in `main`) per `config`.
    ///
    /// # Errors
    /// [`ConfigError`] when `config` fails [`SchedulerConfig::validate`]. Fatal.
    pub fn new(client: Client, config: SchedulerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(SchedulerTimers { client, config })
    }

    /// The configuration these timers use.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    fn target(&self, input: String) -> Result<Target, PortError> {
        let retry = RetryPolicy::builder()
            .maximum_retry_attempts(self.config.max_retry_attempts)
            .maximum_event_age_in_seconds(self.config.max_event_age_secs)
            .build();
        let dlq = self
            .config
            .dlq_arn
            .as_ref()
            .map(|arn| DeadLetterConfig::builder().arn(arn).build());
        Target::builder()
            .arn(&self.config.target_arn)
            .role_arn(&self.config.role_arn)
            .input(input)
            .retry_policy(retry)
            .set_dead_letter_config(dlq)
            .build()
            .map_err(|e| permanent("could not build the schedule's target", e))
    }
}

/// Off: Scheduler fires within the minute of the `at()` time, never before it.
fn window_off() -> Result<FlexibleTimeWindow, PortError> {
    FlexibleTimeWindow::builder()
        .mode(FlexibleTimeWindowMode::Off)
        .build()
        .map_err(|e| permanent("could not build the flexible time window", e))
}

/// Who and what the schedule is for, in words, within Scheduler's 512 bytes. Under a customer
/// key (`keyed`), only the timer's kind: Scheduler encrypts the input with that key, not the
/// description (EventBridge Scheduler user guide, "Encryption at rest"), so the identifiers stay
/// in the input alone.
fn description(tenant: &Tenant, key: &TimerKey, keyed: bool) -> String {
    if keyed {
        return format!(
            "{} timer; its tenant, subject and expectation are in the input, under the \
             customer's key",
            key.kind.as_str()
        );
    }
    let mut text = format!(
        "{} of expectation {} raised by {} on {} (tenant {})",
        key.kind.as_str(),
        key.expectation.id,
        key.expectation.agent,
        key.subject,
        tenant
    );
    if text.len() > MAX_DESCRIPTION_LEN {
        let mut end = MAX_DESCRIPTION_LEN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[async_trait]
impl Timers for SchedulerTimers {
    /// Creates the schedule for `key`, or, when it exists (ConflictException), updates it to the
    /// new instant and input: one schedule per key, moved when the expectation re-anchors.
    ///
    /// # Errors
    /// Permanent: a name or instant Scheduler cannot hold (checked here before any call),
    /// validation, permissions, a missing group. Retryable: throttling, 5xx, timeouts, or a
    /// schedule that kept vanishing between create and update.
    async fn arm(&self, tenant: &Tenant, key: &TimerKey, at: Instant) -> Result<(), PortError> {
        let name = schedule_name(tenant, key);
        validate_schedule_name(&name)
            .map_err(|e| permanent(format!("schedule name for {key:?}"), e))?;
        let fire_at = at
            .checked_sub(self.config.lead)
            .ok_or_else(|| PortError::Permanent {
                reason: format!("schedule {name} at {at} less its lead is out of range"),
                source: None,
            })?;
        let expression = at_expression(fire_at)
            .map_err(|e| permanent(format!("schedule {name} at {fire_at}"), e))?;
        let input = serde_json::to_string(&TimerInput {
            tenant: tenant.clone(),
            timer: key.clone(),
        })
        .map_err(|e| permanent(format!("input of schedule {name}"), e))?;
        let target = self.target(input)?;
        let window = window_off()?;
        let description = description(tenant, key, self.config.kms_key_arn.is_some());
        let group = &self.config.group;
        let kms_key = &self.config.kms_key_arn;
        // The settings CreateSchedule and UpdateSchedule both take (UpdateSchedule replaces
        // every setting, so both are given them all): a one-time schedule in UTC, deleted after
        // it fires; its input under the customer's key when configured (an UpdateSchedule without
        // KmsKeyArn would put it back under Scheduler's own key).
        macro_rules! with_settings {
            ($builder:expr) => {
                $builder
                    .name(&name)
                    .group_name(group)
                    .description(&description)
                    .schedule_expression(&expression)
                    .schedule_expression_timezone("UTC")
                    .flexible_time_window(window.clone())
                    .target(target.clone())
                    .action_after_completion(ActionAfterCompletion::Delete)
                    .state(ScheduleState::Enabled)
                    .set_kms_key_arn(kms_key.clone())
            };
        }

        for round in 0..ARM_ROUNDS {
            let created = with_settings!(self.client.create_schedule()).send().await;
            match created {
                Ok(_) => {
                    tracing::debug!(schedule = %name, %group, %expression, "schedule created");
                    return Ok(());
                }
                Err(e)
                    if matches!(
                        e.as_service_error(),
                        Some(CreateScheduleError::ConflictException(_))
                    ) => {}
                Err(e) => {
                    return Err(port_error(
                        format!("create schedule {name} in group {group}"),
                        e,
                    ))
                }
            }
            // It exists: move it, with every setting again.
            let updated = with_settings!(self.client.update_schedule()).send().await;
            match updated {
                Ok(_) => {
                    tracing::debug!(schedule = %name, %group, %expression, "schedule updated");
                    return Ok(());
                }
                // Gone since the create (it fired and was deleted, or was disarmed): create it.
                Err(e)
                    if matches!(
                        e.as_service_error(),
                        Some(UpdateScheduleError::ResourceNotFoundException(_))
                    ) =>
                {
                    tracing::debug!(schedule = %name, round, "schedule vanished before update");
                }
                Err(e) => {
                    return Err(port_error(
                        format!("update schedule {name} in group {group}"),
                        e,
                    ))
                }
            }
        }
        Err(PortError::Retryable {
            reason: format!(
                "schedule {name} in group {group} kept appearing and vanishing over \
                 {ARM_ROUNDS} create-or-update rounds"
            ),
            source: None,
        })
    }

    /// Deletes the schedule for `key`, best effort: one that does not exist (never armed, fired
    /// and deleted by Scheduler, or disarmed before) is success.
    ///
    /// # Errors
    /// Permanent: validation, permissions. Retryable: throttling, 5xx, timeouts.
    async fn disarm(&self, tenant: &Tenant, key: &TimerKey) -> Result<(), PortError> {
        let name = schedule_name(tenant, key);
        validate_schedule_name(&name)
            .map_err(|e| permanent(format!("schedule name for {key:?}"), e))?;
        let group = &self.config.group;
        match self
            .client
            .delete_schedule()
            .name(&name)
            .group_name(group)
            .send()
            .await
        {
            Ok(_) => {
                tracing::debug!(schedule = %name, %group, "schedule deleted");
                Ok(())
            }
            Err(e)
                if matches!(
                    e.as_service_error(),
                    Some(DeleteScheduleError::ResourceNotFoundException(_))
                ) =>
            {
                tracing::debug!(schedule = %name, %group, "schedule already gone");
                Ok(())
            }
            Err(e) => Err(port_error(
                format!("delete schedule {name} in group {group}"),
                e,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use watcher_core::engine::TimerKind;
    use watcher_core::ids::{AgentId, ExpectationId, ExpectationRef, Subject};

    use super::*;
    use crate::error::MessageError;
    use crate::timer_input::parse_timer_input;

    fn key() -> TimerKey {
        TimerKey {
            subject: Subject::parse("shipment", "PA-1").unwrap(),
            expectation: ExpectationRef {
                agent: AgentId::parse("planner").unwrap(),
                id: ExpectationId::parse("exp-1").unwrap(),
            },
            kind: TimerKind::Horizon,
        }
    }

    #[test]
    fn timer_input_has_the_documented_shape_and_reads_back() {
        let input = TimerInput {
            tenant: Tenant::parse("acme").unwrap(),
            timer: key(),
        };
        let json = serde_json::to_value(&input).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "tenant": "acme",
                "timer": {
                    "subject": {"type": "shipment", "id": "PA-1"},
                    "expectation": {"agent": "planner", "id": "exp-1"},
                    "kind": "horizon"
                }
            })
        );
        assert_eq!(parse_timer_input(&json.to_string()).unwrap(), input);
    }

    #[test]
    fn malformed_timer_inputs_are_refused() {
        for bad in [
            "",
            "{}",
            r#"{"tenant":"acme"}"#,
            r#"{"tenant":"","timer":{"subject":{"type":"s","id":"1"},"expectation":{"agent":"a","id":"e"},"kind":"deadline"}}"#,
            r#"{"tenant":"acme","timer":{"subject":{"type":"s","id":"1"},"expectation":{"agent":"a","id":"e"},"kind":"later"}}"#,
        ] {
            let e = parse_timer_input(bad).unwrap_err();
            assert!(matches!(e, MessageError::Malformed { .. }), "{bad:?}: {e}");
        }
    }

    #[test]
    fn configs_are_checked() {
        let ok = SchedulerConfig::new(
            "watcher-timers",
            "arn:aws:lambda:us-east-1:123456789012:function:t",
            "arn:aws:iam::123456789012:role/r",
        );
        ok.validate().unwrap();
        assert_eq!(
            (ok.max_retry_attempts, ok.max_event_age_secs),
            (185, 86_400)
        );
        assert_eq!(ok.dlq_arn, None);
        ok.clone()
            .with_dead_letter_queue("arn:aws:sqs:us-east-1:123456789012:q")
            .validate()
            .unwrap();
        let mut bad_group = ok.clone();
        bad_group.group = "watcher timers".into();
        assert!(matches!(
            bad_group.validate(),
            Err(ConfigError::GroupName(_))
        ));
        let bad_dlq = ok.clone().with_dead_letter_queue("q");
        assert!(matches!(
            bad_dlq.validate(),
            Err(ConfigError::Arn {
                setting: "dlq_arn",
                ..
            })
        ));
        let keyed = ok.clone().with_kms_key(
            "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        );
        keyed.validate().unwrap();
        assert_eq!(
            keyed.kms_key_arn.as_deref(),
            Some("arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab")
        );
        for bad in [
            "1234abcd-12ab-34cd-56ef-1234567890ab",
            "arn:aws:sqs:us-east-1:123456789012:q",
            "arn:aws:kms:us-east-1:key/1234",
        ] {
            assert!(
                matches!(
                    ok.clone().with_kms_key(bad).validate(),
                    Err(ConfigError::Arn {
                        setting: "kms_key_arn",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        let mut bad_retry = ok;
        bad_retry.max_retry_attempts = 186;
        assert!(matches!(
            bad_retry.validate(),
            Err(ConfigError::RetryPolicy { .. })
        ));
    }

    #[test]
    fn descriptions_fit_scheduler() {
        let mut long = key();
        long.expectation.id = ExpectationId::parse("é".repeat(250)).unwrap();
        let text = description(&Tenant::default_tenant(), &long, false);
        assert!(text.len() <= MAX_DESCRIPTION_LEN);
        assert!(text.starts_with("horizon of expectation é"));
        // Under a customer key the identifiers are in the encrypted input only.
        let keyed = description(&Tenant::parse("acme").unwrap(), &key(), true);
        assert_eq!(
            keyed,
            "horizon timer; its tenant, subject and expectation are in the input, under the \
             customer's key"
        );
        for clear in ["acme", "PA-1", "exp-1", "planner", "shipment"] {
            assert!(!keyed.contains(clear), "{clear} in {keyed}");
        }
    }
}
