//! `a2a-watcher rearm`: re-creates every open timer's wake-up on AWS from the table, after a
//! restore (point-in-time or from a backup), a stack replacement, or schedules lost any other way
//! (docs/howto/recovery.md).
//!
//! It reads the open timers page by page from the table's `timers` index (a walk an operator
//! may make; no request path does) and arms each exactly as the functions' timer path does
//! (`watcher_lambda::sink::AwsSink`): a timer due within SQS's 900 s, or already past, becomes a
//! message on the timer queue delayed to its instant (0 s when past: the timer function
//! evaluates it at once); a later one becomes its one-time schedule, armed the scheduler lead
//! (60 s) early, through the same adapter (`watcher_aws::SchedulerTimers`: CreateSchedule, or
//! UpdateSchedule when it exists). Both are hints: the timer function re-reads the record and
//! lapses only a timer whose instant has passed and that the record still holds, and the outbox
//! keeps one lapse task per `messageId`. So running it twice, or over schedules that are still
//! there, leaves one schedule per timer and one lapse task per lapse.
//!
//! It runs with the operator's credentials (the environment's `AWS_*` variables: region, keys,
//! `AWS_ENDPOINT_URL` for an emulator), and needs `dynamodb:Query` on the table's `timers` index,
//! `scheduler:CreateSchedule` and `scheduler:UpdateSchedule` on the group's schedules,
//! `iam:PassRole` of the scheduler role, and `sqs:SendMessage` on the timer queue (the timer
//! queue's and the table's KMS keys are AWS-managed, which an account's principals may use).

use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use clap::Args;
use futures_util::StreamExt;
use watcher_aws::{delay_seconds, SqsTimerQueue, TimerQueue};
use watcher_core::time::Instant;
use watcher_runtime::ports::{PortError, Timers};
use watcher_runtime::store::DueTimer;
use watcher_store_dynamodb::{DynamoStore, TimersCursor};

/// `a2a-watcher rearm`'s options. Each deployment setting falls back to the environment
/// variable the functions read it from (the timer function's environment, copied, is a valid
/// one), then fails naming both.
#[derive(Args, Debug)]
pub struct RearmArgs {
    /// The deployment's table (the stack's `TableName` output; else `TABLE_NAME`).
    #[arg(long)]
    table: Option<String>,
    /// The timers' schedule group (the stack's `ScheduleGroup` output; else `SCHEDULE_GROUP`).
    #[arg(long)]
    schedule_group: Option<String>,
    /// The timer function's ARN (the stack's `TimerFunctionArn` output; else
    /// `TIMER_FUNCTION_ARN`).
    #[arg(long)]
    timer_function_arn: Option<String>,
    /// The role Scheduler invokes the timer function as (the stack's `SchedulerRoleArn` output;
    /// else `SCHEDULER_ROLE_ARN`).
    #[arg(long)]
    scheduler_role_arn: Option<String>,
    /// The schedules' dead-letter queue ARN (the stack's `SchedulerDeadLetterQueueArn` output;
    /// else `SCHEDULER_DLQ_ARN`; none when empty).
    #[arg(long)]
    scheduler_dlq_arn: Option<String>,
    /// The timer queue's URL (the stack's `TimerQueueUrl` output; else `TIMER_QUEUE_URL`).
    /// Without one, every timer is scheduled, those due within the minute a minute from now.
    #[arg(long)]
    timer_queue_url: Option<String>,
    /// Print what would be armed, timer by timer, and arm nothing.
    #[arg(long)]
    dry_run: bool,
    /// Subjects read per page (1 to 1,000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    page_size: u16,
    /// Go on from the token a previous run printed (its last `resume:` line).
    #[arg(long, value_name = "TOKEN")]
    resume: Option<String>,
    /// Scheduler and SQS calls in flight at once (1 to 64).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=64))]
    at_once: u8,
}

/// How one timer is armed again, from `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// A timer-queue message delayed this many seconds (0: at once).
    Queue {
        /// `DelaySeconds`, 0 to 900.
        delay: i32,
    },
    /// The timer's one-time schedule, for this instant (the adapter subtracts its lead).
    Schedule {
        /// The instant handed to `Timers::arm`: the timer's own, or a minute from now for a
        /// timer due sooner when there is no timer queue.
        at: Instant,
    },
}

/// How a timer due at `at` is armed again at `now`: as the functions' sink arms it
/// (`AwsSink::carry_out`), on the timer queue when there is one and `at` is within its 900 s
/// (or past), else as a schedule. Where the sink would evaluate a due timer in the same process
/// (no timer queue), this command cannot (it holds no watcher): such a timer is scheduled a
/// minute ahead, Scheduler's resolution, so that it fires within about two minutes.
pub fn plan(now: Instant, at: Instant, timer_queue: bool) -> Plan {
    if timer_queue {
        if let Some(delay) = delay_seconds(now, at) {
            return Plan::Queue { delay };
        }
    }
    if watcher_aws::should_schedule(now, at) {
        Plan::Schedule { at }
    } else {
        let soonest = now
            .checked_add(watcher_aws::SCHEDULER_RESOLUTION)
            .and_then(|t| t.checked_add(jiff::SignedDuration::from_secs(1)))
            .unwrap_or(at);
        Plan::Schedule { at: soonest }
    }
}

/// A setting from its flag, else the environment variable `env`; an empty value is none.
fn setting(flag: Option<String>, env: &str) -> Option<String> {
    flag.or_else(|| std::env::var(env).ok())
        .filter(|v| !v.trim().is_empty())
}

/// A required [`setting`].
fn required(flag: Option<String>, option: &str, env: &str) -> anyhow::Result<String> {
    setting(flag, env).ok_or_else(|| anyhow!("give --{option} or set {env}"))
}

/// What a run did, counted.
#[derive(Debug, Default)]
struct Counts {
    pages: usize,
    subjects: usize,
    queued: usize,
    scheduled: usize,
    failed: usize,
}

/// The system clock as an [`Instant`].
fn now() -> anyhow::Result<Instant> {
    Instant::from_timestamp(jiff::Timestamp::now())
        .ok_or_else(|| anyhow!("the system clock is outside the instants the watcher reads"))
}

/// The timer of `t` in words: kind, expectation, subject, tenant and instant.
fn describe(t: &DueTimer) -> String {
    format!(
        "{} of {}/{} on {} (tenant {}) at {}",
        t.key.kind.as_str(),
        t.key.expectation.agent,
        t.key.expectation.id,
        t.key.subject,
        t.tenant,
        t.at
    )
}

/// Runs `a2a-watcher rearm`: prints a line per page (its progress and the token that resumes
/// after it), then the totals; with `--dry-run` also a line per timer.
///
/// # Errors
/// A missing setting or credential, a bad resume token, a table that cannot be read (the last
/// `resume:` line printed says where to go on from), or timers that could not be armed (each is
/// named on standard error; running again arms them, and re-arms the others harmlessly).
pub async fn run(args: RearmArgs) -> anyhow::Result<()> {
    let table = required(args.table, "table", "TABLE_NAME")?;
    let timer_queue_url = setting(args.timer_queue_url, "TIMER_QUEUE_URL");
    let mut cursor = match &args.resume {
        Some(token) => TimersCursor::parse(token).map_err(|e| anyhow!(e))?,
        None => TimersCursor::start(),
    };
    let aws = watcher_aws::sdk_env::sdk_config_from_env()
        .context("the operator's AWS credentials and region")?;
    // The retention (30 days) only dates what a store writes; the re-arm writes nothing there.
    let store = DynamoStore::new(watcher_aws::sdk_env::dynamodb_client(&aws), &table, 30);
    let armers = if args.dry_run {
        None
    } else {
        let mut config = watcher_aws::SchedulerConfig::new(
            required(args.schedule_group, "schedule-group", "SCHEDULE_GROUP")?,
            required(
                args.timer_function_arn,
                "timer-function-arn",
                "TIMER_FUNCTION_ARN",
            )?,
            required(
                args.scheduler_role_arn,
                "scheduler-role-arn",
                "SCHEDULER_ROLE_ARN",
            )?,
        );
        if let Some(dlq) = setting(args.scheduler_dlq_arn, "SCHEDULER_DLQ_ARN") {
            config = config.with_dead_letter_queue(dlq);
        }
        // A stack deployed with KmsKeyArn: its schedules' input under that key, as the
        // functions arm them (docs/security.md, "Encryption at rest").
        if let Some(key) = setting(None, "SCHEDULE_KMS_KEY_ARN") {
            config = config.with_kms_key(key);
        }
        let queue = timer_queue_url.as_ref().map(|url| {
            Arc::new(SqsTimerQueue::new(aws_sdk_sqs::Client::new(&aws), url)) as Arc<dyn TimerQueue>
        });
        if queue.is_some() {
            // As the functions do with a timer queue (watcher-host aws/env.rs): each schedule
            // fires a minute early and the timer queue finishes the wait.
            config = config.with_lead(watcher_aws::SCHEDULE_LEAD);
        }
        let timers =
            watcher_aws::SchedulerTimers::new(aws_sdk_scheduler::Client::new(&aws), config)
                .map_err(|e| anyhow!("scheduler settings: {e}"))?;
        Some(Armers {
            timers: Arc::new(timers),
            queue,
        })
    };
    let with_queue = timer_queue_url.is_some();
    let verb = if args.dry_run { "would arm" } else { "armed" };
    let mut counts = Counts::default();
    loop {
        let page = store
            .open_timers_page(&cursor, usize::from(args.page_size))
            .await
            .with_context(|| {
                format!(
                    "reading the open timers of table {table} (go on with --resume {})",
                    cursor.token()
                )
            })?;
        counts.pages += 1;
        counts.subjects += page.subjects;
        let calls = page.timers.iter().map(|t| {
            let armers = armers.as_ref();
            async move {
                let now = now()?;
                let planned = plan(now, t.at, with_queue);
                let result = match armers {
                    None => Ok(()),
                    Some(a) => a.arm(t, planned, now).await,
                };
                anyhow::Ok((t, planned, result))
            }
        });
        let done: Vec<_> = futures_util::stream::iter(calls)
            .buffered(usize::from(args.at_once))
            .collect()
            .await;
        for outcome in done {
            let (t, planned, result) = outcome?;
            match (&result, planned) {
                (Err(e), _) => {
                    counts.failed += 1;
                    eprintln!("failed: {}: {e}", describe(t));
                }
                (Ok(()), Plan::Queue { delay }) => {
                    counts.queued += 1;
                    if args.dry_run {
                        println!(
                            "{verb}: {} on the timer queue, {delay} s delay",
                            describe(t)
                        );
                    }
                }
                (Ok(()), Plan::Schedule { at }) => {
                    counts.scheduled += 1;
                    if args.dry_run {
                        println!(
                            "{verb}: {} as schedule {} for {at}",
                            describe(t),
                            watcher_aws::schedule_name(&t.tenant, &t.key)
                        );
                    }
                }
            }
        }
        let (partition, partitions) = page.partition;
        let resume = page
            .next
            .as_ref()
            .map_or_else(|| "none (done)".to_owned(), TimersCursor::token);
        println!(
            "page {}: partition {}/{partitions}, {} subject(s), {} timer(s); so far {} queued, {} \
             scheduled, {} failed; resume: {resume}",
            counts.pages,
            partition + 1,
            page.subjects,
            page.timers.len(),
            counts.queued,
            counts.scheduled,
            counts.failed
        );
        match page.next {
            Some(next) => cursor = next,
            None => break,
        }
    }
    println!(
        "{verb} {} timer(s) of {} subject(s): {} on the timer queue, {} as schedules; {} failed",
        counts.queued + counts.scheduled,
        counts.subjects,
        counts.queued,
        counts.scheduled,
        counts.failed
    );
    if counts.failed > 0 {
        bail!(
            "{} timer(s) could not be armed (named above); run it again: what is armed already \
             is armed again harmlessly, and the sweep fires any timer when it falls due",
            counts.failed
        );
    }
    Ok(())
}

/// Where timers are armed: the scheduler adapter, and the timer queue when there is one.
struct Armers {
    timers: Arc<dyn Timers>,
    queue: Option<Arc<dyn TimerQueue>>,
}

impl Armers {
    /// Arms `t` as `planned` at `now`.
    async fn arm(&self, t: &DueTimer, planned: Plan, now: Instant) -> Result<(), PortError> {
        match (planned, &self.queue) {
            (Plan::Queue { .. }, Some(q)) => q.send_at(&t.tenant, &t.key, t.at, now).await,
            // `plan` queues only when there is a timer queue; without one, its schedule.
            (Plan::Queue { .. }, None) => self.timers.arm(&t.tenant, &t.key, t.at).await,
            (Plan::Schedule { at }, _) => self.timers.arm(&t.tenant, &t.key, at).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instant(s: &str) -> Instant {
        Instant::parse(s).unwrap()
    }

    #[test]
    fn timers_are_armed_as_the_functions_arm_them() {
        let now = instant("2026-09-10T20:00:00Z");
        // Past: at once on the timer queue.
        assert_eq!(
            plan(now, instant("2026-09-10T19:00:00Z"), true),
            Plan::Queue { delay: 0 }
        );
        // Within SQS's 900 s: delayed to the instant, rounded up.
        assert_eq!(
            plan(now, instant("2026-09-10T20:14:59.5Z"), true),
            Plan::Queue { delay: 900 }
        );
        // Beyond: its schedule.
        let later = instant("2026-09-10T20:15:01Z");
        assert_eq!(plan(now, later, true), Plan::Schedule { at: later });
        // No timer queue: a schedule, at least a minute and a second ahead.
        assert_eq!(
            plan(now, instant("2026-09-10T19:00:00Z"), false),
            Plan::Schedule {
                at: instant("2026-09-10T20:01:01Z")
            }
        );
        let soon = instant("2026-09-10T20:05:00Z");
        assert_eq!(plan(now, soon, false), Plan::Schedule { at: soon });
    }
}
