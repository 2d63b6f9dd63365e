//! `a2a-watcher notify test --config F --channel ID`: posts a sample notification through a
//! configured `[[notify]]` channel (issue 25), signed as the notifier signs, so a person can see
//! the receiver accept it before a real lapse happens. Opens no store and records nothing.

use std::path::Path;

use anyhow::anyhow;
use watcher_config::Config;
use watcher_notify::transport::HttpTransport;
use watcher_notify::Channel;
use watcher_runtime::clock::{Clock, SystemClock};

/// Posts the sample on the channel `id` (of `tenant`, when several tenants have one of that
/// id) and answers the `webhook-id` it carried.
///
/// # Errors
/// An unreadable or invalid configuration, an unknown or ambiguous channel, or the receiver's
/// failure (`HTTP 4xx from the receiver`, a connection error, or a redirect: `redirect (301) to
/// https://new.example/… not followed; …`, for a notification is posted to the channel's URL
/// only).
pub async fn test(config: &Path, id: &str, tenant: Option<&str>) -> anyhow::Result<String> {
    let config = Config::load(config)?;
    let matching: Vec<_> = config
        .notify
        .iter()
        .filter(|n| n.id == id && tenant.is_none_or(|t| n.tenant == t))
        .collect();
    let found = match matching.as_slice() {
        [one] => *one,
        [] => {
            let known: Vec<&str> = config.notify.iter().map(|n| n.id.as_str()).collect();
            return Err(anyhow!(
                "no [[notify]] channel {id:?} in the configuration (channels: {known:?})"
            ));
        }
        _ => {
            return Err(anyhow!(
                "channel {id:?} is configured in several tenants: name one with --tenant"
            ))
        }
    };
    let channel = Channel::from_config(found).map_err(anyhow::Error::msg)?;
    if channel.format == watcher_notify::Format::Sns {
        return Err(anyhow!(
            "channel {id:?}: format = \"sns\" publishes from the AWS deployment only; this command has no SNS client (publish a sample with `aws sns publish --topic-arn {}`)",
            channel.url
        ));
    }
    if channel.secret.is_none() && channel.format == watcher_notify::Format::StandardWebhooks {
        eprintln!(
            "a2a-watcher notify test: note: channel {id:?} has no secret, so the sample is not signed (set secret, secret_file or secret_env)"
        );
    }
    let transport = HttpTransport::new().map_err(anyhow::Error::msg)?;
    let now = SystemClock.now();
    let n = watcher_notify::body::test(channel.format, &channel.id, now);
    watcher_notify::notifier::post(&transport, &channel, &n, now)
        .await
        .map_err(|e| anyhow!("channel {id:?}: {e}"))?;
    Ok(n.id)
}
