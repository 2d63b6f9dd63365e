//! An agent's due lapse tasks by contextId: the chains one pass of a lane sends (each context's
//! lapse tasks one after another, in the order they were due), and how a pass shares its batch
//! among them so that the agent's `per_agent` places stay busy for the whole pass.
//!
//! A pass ends when its longest chain ends. Taken as read, a batch of 32 holding three contexts
//! of ten and one of two keeps four lapse tasks in flight for two sends and three for the other
//! eight: an agent answering in 400 ms is sent 6 a second where its four places allow 10.
//! [`share`] takes the same few of each context (at most `ceil(batch / per_agent)`), so the
//! chains of a pass are about as long as each other, and says when a deeper read would find
//! more contexts to fill the places with ([`Share::deeper`]).

use std::collections::HashMap;

use watcher_runtime::store::OutboxEntry;

/// The contextId a lapse task is sent in (`request.message.contextId`), `""` when it has none.
pub fn context_of(entry: &OutboxEntry) -> &str {
    entry
        .request
        .pointer("/message/contextId")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
}

/// `due` (in the order it was due) as chains, one per contextId, each in that order; chains in
/// the order their first lapse task was due.
pub fn by_context(due: Vec<OutboxEntry>) -> Vec<Vec<OutboxEntry>> {
    let mut chains: Vec<(String, Vec<OutboxEntry>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for entry in due {
        let context = context_of(&entry).to_owned();
        match index.get(&context) {
            Some(&i) => chains[i].1.push(entry),
            None => {
                index.insert(context.clone(), chains.len());
                chains.push((context, vec![entry]));
            }
        }
    }
    chains.into_iter().map(|(_, chain)| chain).collect()
}

/// What one pass takes of the due lapse tasks it read ([`share`]).
#[derive(Debug)]
pub struct Share {
    /// The lapse tasks taken, in the order they were due: at most `batch`, at most the share
    /// of one context.
    pub taken: Vec<OutboxEntry>,
    /// Due lapse tasks read and not taken (a context's share was full): they stay queued, for a
    /// later pass, and the pass ends with more to do.
    pub left: usize,
    /// The read was full and fewer than `batch` were taken (its contexts are too few or too
    /// long to fill the agent's places for the pass): a deeper read may find more contexts.
    pub deeper: bool,
}

/// Shares a pass's `batch` among the contexts of `due` (in the order it was due; `read_full`:
/// the read answered as many as it asked for, so more may be due).
///
/// Each context may give at most `share` lapse tasks, the least `share` for which the contexts
/// together give `batch`, and never more than `ceil(batch / per_agent)`: the chains of a pass are
/// about as long as each other, so the agent's `per_agent` places stay busy until the pass ends,
/// and a pass lasts about `batch / per_agent` sends, so work due in a new context waits at most
/// that. They are taken in due order; once a context's share is full none of its later lapse
/// tasks is taken in this pass, so a context's lapse tasks are never sent out of order.
pub fn share(due: Vec<OutboxEntry>, batch: usize, per_agent: usize, read_full: bool) -> Share {
    let batch = batch.max(1);
    let longest = batch.div_ceil(per_agent.max(1));
    // Each context's lapse tasks read, in the order the contexts were first due.
    let mut lengths: Vec<(&str, usize)> = Vec::new();
    for e in &due {
        let c = context_of(e);
        match lengths.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => lengths.push((c, 1)),
        }
    }
    // The least share that fills the batch (water-filling), capped at `longest`: at most
    // `longest` rounds of a sum over the contexts read (both bounded by `batch` and the read).
    let given = |share: usize| -> usize { lengths.iter().map(|(_, n)| (*n).min(share)).sum() };
    let share = (1..=longest)
        .find(|&s| given(s) >= batch)
        .unwrap_or(longest);
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut taken = Vec::new();
    let mut left = 0;
    for entry in due {
        let count = counts.entry(context_of(&entry).to_owned()).or_insert(0);
        if taken.len() < batch && *count < share {
            *count += 1;
            taken.push(entry);
        } else {
            left += 1;
        }
    }
    let deeper = read_full && taken.len() < batch;
    Share {
        taken,
        left,
        deeper,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watcher_core::ids::{AgentId, Tenant};
    use watcher_core::time::Instant;

    fn entry(id: &str, context: &str) -> OutboxEntry {
        OutboxEntry::queued(
            Tenant::parse("acme").unwrap(),
            AgentId::parse("booking").unwrap(),
            id.to_owned(),
            watcher_core::ids::ExpectationId::parse("exp-1").unwrap(),
            watcher_core::record::LapseKind::Overdue,
            Instant::parse("2026-09-10T20:15:00Z").unwrap(),
            serde_json::json!({"message": {"contextId": context, "messageId": id}}),
        )
    }

    fn ids(entries: &[OutboxEntry]) -> Vec<&str> {
        entries.iter().map(|e| e.message_id.as_str()).collect()
    }

    /// `n` lapse tasks in each of `contexts`, queued context by context (a push of ten, then
    /// the next).
    fn context_by_context(contexts: &[&str], n: usize) -> Vec<OutboxEntry> {
        contexts
            .iter()
            .flat_map(|c| (0..n).map(move |i| entry(&format!("{c}{i}"), c)))
            .collect()
    }

    #[test]
    fn lapse_tasks_of_one_context_stay_in_order_and_contexts_keep_first_due_order() {
        let due = vec![
            entry("a1", "A"),
            entry("b1", "B"),
            entry("a2", "A"),
            entry("c1", "C"),
            entry("b2", "B"),
        ];
        let chains = by_context(due);
        let ids: Vec<Vec<&str>> = chains.iter().map(|c| ids(c)).collect();
        assert_eq!(ids, vec![vec!["a1", "a2"], vec!["b1", "b2"], vec!["c1"]]);
    }

    #[test]
    fn contexts_of_one_each_are_all_taken() {
        let due: Vec<OutboxEntry> = (0..32)
            .map(|i| entry(&format!("m{i}"), &format!("C{i}")))
            .collect();
        let s = share(due, 32, 4, true);
        assert_eq!((s.taken.len(), s.left, s.deeper), (32, 0, false));
    }

    #[test]
    fn three_long_contexts_and_a_short_one_ask_for_a_deeper_read() {
        // Read 32: A, B, C of ten and two of D. A share of at most 32 / 4 = 8: 8 + 8 + 8 + 2.
        let mut due = context_by_context(&["A", "B", "C"], 10);
        due.extend(context_by_context(&["D"], 2));
        let s = share(due, 32, 4, true);
        assert_eq!(s.taken.len(), 26);
        assert_eq!(s.left, 6);
        assert!(s.deeper, "D's lane would idle: read deeper");
        // Each context's share is its first eight, in order.
        let chains = by_context(s.taken);
        assert_eq!(
            ids(&chains[0]),
            vec!["A0", "A1", "A2", "A3", "A4", "A5", "A6", "A7"]
        );
        assert_eq!(ids(&chains[3]), vec!["D0", "D1"]);
    }

    #[test]
    fn the_deeper_read_fills_every_place_with_chains_of_about_one_length() {
        // Six contexts of ten: a share of 6 (6 × 5 + 2 = 32), where 8 of four contexts would
        // leave the other two for a later pass and 10 of three would idle a place.
        let due = context_by_context(&["A", "B", "C", "D", "E", "F"], 10);
        let s = share(due, 32, 4, false);
        assert_eq!((s.taken.len(), s.left, s.deeper), (32, 28, false));
        let lengths: Vec<usize> = by_context(s.taken).iter().map(Vec::len).collect();
        assert_eq!(lengths, vec![6, 6, 6, 6, 6, 2]);
    }

    #[test]
    fn leftovers_of_earlier_passes_and_long_contexts_level_out() {
        // Four contexts with two left each, then contexts of ten: a share of 3.
        let mut due = context_by_context(&["A", "B", "C", "D"], 2);
        due.extend(context_by_context(
            &["E", "F", "G", "H", "I", "J", "K", "L"],
            10,
        ));
        let s = share(due, 32, 4, true);
        assert_eq!((s.taken.len(), s.deeper), (32, false));
        let lengths: Vec<usize> = by_context(s.taken).iter().map(Vec::len).collect();
        assert_eq!(lengths, vec![2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3]);
    }

    #[test]
    fn fewer_contexts_than_places_take_a_pass_of_their_share_each() {
        // Two contexts: eight each (a pass of 32 / 4 sends), and a deeper read for more contexts.
        let due = context_by_context(&["A", "B"], 20);
        let s = share(due, 32, 4, true);
        assert_eq!((s.taken.len(), s.left, s.deeper), (16, 24, true));
        // One context alone: eight, one after another; nothing deeper to read.
        let s = share(context_by_context(&["A"], 20), 32, 4, false);
        assert_eq!((s.taken.len(), s.left, s.deeper), (8, 12, false));
    }

    #[test]
    fn a_context_whose_share_is_full_takes_none_of_its_later_ones() {
        // A share of 3 (3 of A and B's one make the batch of 4): A's fourth and fifth are left,
        // though the fifth comes after B's.
        let due = vec![
            entry("a1", "A"),
            entry("a2", "A"),
            entry("a3", "A"),
            entry("a4", "A"),
            entry("b1", "B"),
            entry("a5", "A"),
        ];
        let s = share(due, 4, 1, false);
        assert_eq!(ids(&s.taken), vec!["a1", "a2", "a3", "b1"]);
        assert_eq!(s.left, 2);
    }
}
