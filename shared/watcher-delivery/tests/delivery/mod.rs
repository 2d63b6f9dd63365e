//! Lapse-task delivery against a real HTTP agent on 127.0.0.1 (serve.md, semantics.md "The lapse
//! task"). Time is driven by passing `now`; the only waits are HTTP round trips (and one client
//! timeout).

use crate::common;

use std::time::Duration;

use a2a_types::TaskState;
use common::*;
use watcher_delivery::{
    deliver_due, A2aClient, AgentEndpoint, ClientConfig, DeliveryReport, EntryOutcome, RateLimit,
    RateLimiter, RetryPolicy, SendOutcome,
};
use watcher_runtime::store::DeliveryState;

const LIMIT: usize = 100;

mod exactly_once;
mod http;
mod outcomes;
mod routing;
