//! Facts: satisfaction by exact key, lateness, re-anchoring and skipped lapses
//! (expectations-v1 §9.2, §9.3, §9.1 skipped; semantics.md "Facts", "Skipped").

use std::collections::{BTreeMap, BTreeSet};

use super::{Effect, Out, ReportedFact, StepContext};
use crate::ids::{ExpectationId, ExpectationRef, Subject};
use crate::record::{AnchorState, LapseKind, RaiseOrder, Satisfaction, Status};
use crate::slice::{FactEntry, Need, Slice};
use crate::time::Instant;

/// Receives one fact at `now`.
///
/// A fact is identified by (source, factKey, claimed observedAt); receiving it again changes
/// nothing. Otherwise it is recorded on every subject it is "on" (its own subject, and every
/// subject with an expectation keyed by it), satisfies every open expectation with that key,
/// re-anchors their dependents, and lapses `skipped` every open expectation named in a newly
/// satisfied one's `after` (or withdraws it, when its lineage ended withdrawing:
/// [`super::lineage::withdraw_before_lapse`]), all at `ctx.now`.
///
/// # Errors
/// [`Need`] for the fact-key index entry and every subject involved, and for the task records
/// of the lineages of the expectations it lapses.
pub(crate) fn report(
    slice: &mut Slice,
    fact: &ReportedFact,
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    let now = ctx.now;
    let mut subjects: BTreeSet<Subject> = slice.subjects_for_key(&fact.fact_key)?;
    if let Some(s) = &fact.subject {
        subjects.insert(s.clone());
    }
    // A fact that names no subject and is on none is kept under its key, so that receiving it
    // again stays a no-op even after an expectation with its key is raised.
    let unplaced = unplaced_subject(&fact.fact_key);
    slice.subject(&unplaced)?;
    if subjects.is_empty() {
        subjects.insert(unplaced.clone());
    }
    for s in &subjects {
        slice.subject(s)?;
    }
    let duplicate = subjects.iter().chain(std::iter::once(&unplaced)).any(|s| {
        slice.subjects[s]
            .facts
            .iter()
            .any(|f| f.same_fact(&fact.source, &fact.fact_key, fact.observed_at))
    });
    if duplicate {
        out.push(Effect::FactRecorded {
            fact_key: fact.fact_key.clone(),
            source: fact.source.clone(),
            satisfied: Vec::new(),
            duplicate: true,
        });
        return Ok(());
    }
    let (observed_at, claimed) = effective_observed_at(fact, now);

    // Satisfy, in raising order across subjects.
    let mut matches: Vec<(RaiseOrder, Subject, usize)> = Vec::new();
    for s in &subjects {
        for (idx, rec) in slice.subjects[s].records.iter().enumerate() {
            if rec.is_open() && rec.expectation.satisfied_by.fact_key == fact.fact_key {
                matches.push((rec.order, s.clone(), idx));
            }
        }
    }
    matches.sort();
    let mut satisfied: Vec<(Subject, usize)> = Vec::new();
    for (_, s, idx) in &matches {
        let state = slice.subject_mut(s)?;
        let rec = &mut state.records[*idx];
        let late = observed_at > rec.due_at;
        rec.status = Status::Satisfied;
        rec.satisfaction = Some(Satisfaction {
            fact_key: fact.fact_key.clone(),
            source: fact.source.clone(),
            satisfied_at: now,
            observed_at,
            claimed_observed_at: claimed.clone(),
            late,
        });
        state.last_satisfying_receipt = Some(now);
        out.push(Effect::Satisfied {
            expectation: rec.key(),
            late,
        });
        satisfied.push((s.clone(), *idx));
    }
    let satisfied_keys: Vec<ExpectationRef> = satisfied
        .iter()
        .map(|(s, idx)| slice.subjects[s].records[*idx].key())
        .collect();

    // Record the fact on every subject it is on.
    for s in &subjects {
        let here: Vec<ExpectationRef> = satisfied
            .iter()
            .filter(|(ss, _)| ss == s)
            .map(|(ss, idx)| slice.subjects[ss].records[*idx].key())
            .collect();
        let state = slice.subject_mut(s)?;
        state.facts.push(FactEntry {
            fact_key: fact.fact_key.clone(),
            source: fact.source.clone(),
            observed_at,
            claimed_observed_at: fact.observed_at,
            observed_at_given: claimed.clone(),
            mapping: fact.mapping.clone(),
            received_at: now,
            subject: fact.subject.clone(),
            satisfied: here,
        });
    }

    for (s, idx) in &satisfied {
        reanchor_dependents(slice, s, *idx, out)?;
    }
    lapse_skipped(slice, &satisfied, ctx, out)?;

    out.push(Effect::FactRecorded {
        fact_key: fact.fact_key.clone(),
        source: fact.source.clone(),
        satisfied: satisfied_keys,
        duplicate: false,
    });
    Ok(())
}

/// The effective `observedAt` of a fact received at `now`, and the value as given when it differs
/// (semantics.md "Time"): a zero value (`0001-01-01T00:00:00Z`, `1970-01-01T00:00:00Z`) is a
/// missing timestamp and a claim later than receipt cannot be, so both take the receipt time; a
/// leap second is read as the last nanosecond of its minute and keeps its `:60` text.
///
/// The text as given (`observed_at_given`) is kept, offset and digits untouched, whenever the
/// instant it reads as differs from the effective one or is a leap second. That covers a fact
/// whose `observed_at` is already effective and whose text is the original, as the watcher's own
/// lifecycle answer carries it (a status stamped `1970-01-01T00:00:00Z`, or ahead of its receipt).
/// Without a text, the claimed instant is kept in UTC when it differs.
pub fn effective_observed_at(fact: &ReportedFact, now: Instant) -> (Instant, Option<String>) {
    let claimed = fact.observed_at;
    let effective = if claimed.is_zero_value() {
        now
    } else {
        claimed.min(now)
    };
    match fact.observed_at_given.as_deref() {
        Some(given) => {
            let differs = match Instant::parse_reading(given) {
                Ok(r) => r.leap_second || r.instant != effective,
                Err(_) => effective != claimed,
            };
            (effective, differs.then(|| given.to_owned()))
        }
        None => (
            effective,
            (effective != claimed).then(|| claimed.to_string()),
        ),
    }
}

/// Subject type under which facts that concern no subject are kept (reserved).
pub const UNPLACED_FACTS_TYPE: &str = "$unplaced-facts";

/// Where a fact that names no subject and matches no expectation is recorded: a reserved subject
/// per fact key (semantics.md "Identity and tenancy": receiving the same fact again is a no-op).
pub fn unplaced_subject(key: &crate::ids::FactKey) -> Subject {
    Subject {
        subject_type: UNPLACED_FACTS_TYPE.to_owned(),
        id: key.as_str().to_owned(),
    }
}

/// Re-anchors every open expectation whose anchor resolves to the newly satisfied record at
/// `idx`: current `dueAt` = its effective `observedAt` + offset; `projectedDueAt` kept (§9.3).
fn reanchor_dependents(
    slice: &mut Slice,
    s: &Subject,
    idx: usize,
    out: &mut Out,
) -> Result<(), Need> {
    let state = slice.subject_mut(s)?;
    let anchor_key = state.records[idx].key();
    let Some(observed) = state.records[idx]
        .satisfaction
        .as_ref()
        .map(|x| x.observed_at)
    else {
        return Ok(());
    };
    for d in 0..state.records.len() {
        let dep = &state.records[d];
        if !dep.is_open()
            || dep.anchor_state != AnchorState::Waiting
            || dep.agent != anchor_key.agent
        {
            continue;
        }
        let Some(anchor) = dep.expectation.anchor.clone() else {
            continue;
        };
        let target = ExpectationRef {
            agent: dep.agent.clone(),
            id: anchor.expectation_id,
        };
        if state.resolve(&target) == Some(idx) {
            let rec = &mut state.records[d];
            rec.due_at = observed.plus(anchor.offset);
            rec.anchor_state = AnchorState::Reanchored;
            out.push(Effect::Reanchored {
                expectation: rec.key(),
                due_at: rec.due_at,
            });
        }
    }
    Ok(())
}

/// For each newly satisfied X, every still-open expectation named (through supersession) in X's
/// `after` lapses `skipped` now, once, with `satisfiedAfter` = every X of this fact naming it;
/// one whose lineage ended withdrawing is withdrawn instead
/// ([`super::lineage::withdraw_before_lapse`]).
fn lapse_skipped(
    slice: &mut Slice,
    satisfied: &[(Subject, usize)],
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    // (subject, index of the skipped record) → the satisfied expectations that reveal it.
    let mut skipped: BTreeMap<(Subject, usize), Vec<(RaiseOrder, ExpectationId)>> = BTreeMap::new();
    for (s, x) in satisfied {
        let state = slice.subject(s)?;
        let xrec = &state.records[*x];
        for named in &xrec.expectation.after {
            let target = ExpectationRef {
                agent: xrec.agent.clone(),
                id: named.clone(),
            };
            if let Some(y) = state.resolve(&target) {
                let yrec = &state.records[y];
                if yrec.is_open() && !yrec.has_lapsed(LapseKind::Skipped) {
                    skipped
                        .entry((s.clone(), y))
                        .or_default()
                        .push((xrec.order, xrec.id().clone()));
                }
            }
        }
    }
    let records: Vec<(Subject, usize)> = skipped.keys().cloned().collect();
    super::lineage::withdraw_before_lapse(slice, &records, ctx, out)?;
    for ((s, y), mut revealed) in skipped {
        if !slice.subject(&s)?.records[y].is_open() {
            continue;
        }
        revealed.sort();
        revealed.dedup();
        let ids = revealed.into_iter().map(|(_, id)| id).collect();
        let state = slice.subject_mut(&s)?;
        out.lapses.push(super::timers::lapse(
            state,
            y,
            LapseKind::Skipped,
            ctx.now,
            ids,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{FactKey, Source};

    fn fact(observed_at: &str, given: Option<&str>) -> ReportedFact {
        ReportedFact {
            fact_key: FactKey::parse("k").expect("a key"),
            observed_at: Instant::parse(observed_at).expect("an instant"),
            observed_at_given: given.map(str::to_owned),
            mapping: None,
            subject: None,
            source: Source::lifecycle(),
        }
    }

    /// The value as given is kept whenever the instant it reads as differs from the effective
    /// one, also when `observed_at` is already effective (the watcher's lifecycle answer).
    #[test]
    fn the_value_as_given_is_kept_whenever_it_differs() {
        let now = Instant::parse("2026-09-10T12:00:00Z").expect("an instant");
        /// (observedAt, as given, effective, kept as given).
        type Case = (
            &'static str,
            Option<&'static str>,
            &'static str,
            Option<&'static str>,
        );
        let cases: [Case; 8] = [
            (
                "2026-09-10T18:00:00Z",
                Some("2026-09-10T23:30:00+05:30"),
                "2026-09-10T12:00:00Z",
                Some("2026-09-10T23:30:00+05:30"),
            ),
            (
                "2026-09-10T12:00:00Z",
                Some("2026-09-10T23:30:00+05:30"),
                "2026-09-10T12:00:00Z",
                Some("2026-09-10T23:30:00+05:30"),
            ),
            (
                "2026-09-10T12:00:00Z",
                Some("1970-01-01T00:00:00Z"),
                "2026-09-10T12:00:00Z",
                Some("1970-01-01T00:00:00Z"),
            ),
            (
                "2016-12-31T23:59:59.999999999Z",
                Some("2016-12-31T23:59:60Z"),
                "2016-12-31T23:59:59.999999999Z",
                Some("2016-12-31T23:59:60Z"),
            ),
            (
                "2026-09-10T11:00:00Z",
                Some("2026-09-10T16:30:00+05:30"),
                "2026-09-10T11:00:00Z",
                None,
            ),
            ("2026-09-10T11:00:00Z", None, "2026-09-10T11:00:00Z", None),
            (
                "2026-09-10T18:00:00Z",
                None,
                "2026-09-10T12:00:00Z",
                Some("2026-09-10T18:00:00Z"),
            ),
            (
                "0001-01-01T00:00:00Z",
                None,
                "2026-09-10T12:00:00Z",
                Some("0001-01-01T00:00:00Z"),
            ),
        ];
        for (observed, given, effective, kept) in cases {
            assert_eq!(
                effective_observed_at(&fact(observed, given), now),
                (
                    Instant::parse(effective).expect("an instant"),
                    kept.map(str::to_owned)
                ),
                "{observed} given {given:?}"
            );
        }
    }
}
