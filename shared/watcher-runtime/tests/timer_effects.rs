//! The timer effects a commit hands its adapters: a disarm names the instant the timer was armed
//! for (`Effect::DisarmTimer::was`), and `passed_disarms` picks the disarms whose instant has
//! passed, which an adapter of self-ending timers (EventBridge's one-time schedules) need not
//! carry out.

use std::sync::Arc;

use crate::common::apply_raise;
use watcher_core::engine::{Effect, Input, TimerKey};
use watcher_core::ids::Tenant;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::directory::Directory;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::watcher::{passed_disarms, Watcher};

fn instant(s: &str) -> Instant {
    Instant::parse(s).expect("instant")
}

fn armed(effects: &[Effect]) -> Vec<(TimerKey, Instant)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::ArmTimer { key, at } => Some((key.clone(), *at)),
            _ => None,
        })
        .collect()
}

/// A lapse ends the timer that fired it: the disarm names the deadline it was armed for, which
/// has passed, so no schedule delete is needed for it.
#[tokio::test]
async fn a_lapse_disarms_its_timer_with_the_instant_that_passed() {
    let store = Arc::new(MemoryStore::new());
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    let tenant = Tenant::parse("default").expect("tenant");
    let due = instant("2026-09-10T13:00:00Z");
    let raised = watcher
        .apply(
            &tenant,
            &crate::common::raise("e-1", "PA-1", "2026-09-10T13:00:00Z"),
            instant("2026-09-10T12:00:00Z"),
        )
        .await
        .expect("raise");
    let timers = armed(&raised.effects);
    assert_eq!(timers.len(), 1, "{:?}", raised.effects);
    let (key, at) = timers[0].clone();
    assert_eq!(at, due);

    let now = instant("2026-09-10T13:00:01Z");
    let fired = watcher
        .apply(&tenant, &Input::Timer(key.clone()), now)
        .await
        .expect("fire");
    assert!(
        fired.effects.iter().any(|e| matches!(e, Effect::Lapsed(_))),
        "{:?}",
        fired.effects
    );
    assert!(
        fired.effects.contains(&Effect::DisarmTimer {
            key: key.clone(),
            was: due
        }),
        "{:?}",
        fired.effects
    );
    assert_eq!(
        passed_disarms(&fired.effects, now)
            .into_iter()
            .collect::<Vec<_>>(),
        [key]
    );
}

/// A disarm of a timer still ahead, or of one the same commit armed, is carried out: only a
/// timer whose every instant in the commit has passed is left to end itself.
#[tokio::test]
async fn disarms_ahead_or_armed_in_the_commit_are_carried_out() {
    let store = Arc::new(MemoryStore::new());
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    let tenant = Tenant::parse("default").expect("tenant");
    let at0 = instant("2026-09-10T12:00:00Z");
    apply_raise(
        &watcher,
        &tenant,
        ("e-1", "PA-1", "2026-09-10T13:00:00Z"),
        at0,
    )
    .await;
    let raised = watcher
        .apply(
            &tenant,
            &crate::common::raise("e-2", "PA-2", "2026-09-10T13:00:00Z"),
            at0,
        )
        .await
        .expect("raise");
    let (key, _) = armed(&raised.effects)[0].clone();
    let now = instant("2026-09-10T12:30:00Z");

    let ahead = [Effect::DisarmTimer {
        key: key.clone(),
        was: instant("2026-09-10T13:00:00Z"),
    }];
    assert!(passed_disarms(&ahead, now).is_empty(), "still ahead");

    let passed = [Effect::DisarmTimer {
        key: key.clone(),
        was: instant("2026-09-10T12:29:59Z"),
    }];
    assert_eq!(passed_disarms(&passed, now).len(), 1, "passed");
    let at_now = [Effect::DisarmTimer {
        key: key.clone(),
        was: now,
    }];
    assert_eq!(
        passed_disarms(&at_now, now).len(),
        1,
        "passed at the instant itself"
    );

    let armed_in_commit = [
        Effect::ArmTimer {
            key: key.clone(),
            at: instant("2026-09-10T12:10:00Z"),
        },
        Effect::DisarmTimer {
            key: key.clone(),
            was: instant("2026-09-10T12:10:00Z"),
        },
    ];
    assert!(
        passed_disarms(&armed_in_commit, now).is_empty(),
        "its instant before the commit is not known"
    );
    let twice = [
        Effect::DisarmTimer {
            key: key.clone(),
            was: instant("2026-09-10T12:00:00Z"),
        },
        Effect::DisarmTimer {
            key,
            was: instant("2026-09-10T14:00:00Z"),
        },
    ];
    assert!(passed_disarms(&twice, now).is_empty(), "one instant ahead");
}
