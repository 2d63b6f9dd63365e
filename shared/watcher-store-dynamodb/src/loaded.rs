//! What a load saw of each subject's index rows, so that the commit after it needs no read.
//!
//! A commit writes only the index rows a subject's new state adds or changes, against what the
//! stored version contributed (its `indexed` attribute, [`Indexed`]). The load that the commit
//! follows has just read that whole item, so the store remembers, per subject, the version it
//! loaded and the `indexed` text of that version. A version's item is written once and never
//! changed (every commit writes the next version), so what is remembered for `(subject,
//! version)` is what the table holds for that version for as long as the version stands; the
//! commit's own condition (`version = loaded`) checks that it still does.
//!
//! A hint, never the record: nothing depends on an entry being here. A commit that finds no
//! entry for its subject and version (another process loaded it, the memo was full, the load was
//! of another version) reads the version and `indexed` of the subjects it lacks in one
//! `BatchGetItem`, as every commit did before. No answer depends on what one instance
//! remembers (docs/dynamodb.md "Commit").

use std::collections::HashMap;
use std::sync::Mutex;

/// Most subjects remembered at once. One function invocation loads a handful; a timer batch
/// ten; this bounds the memory of a long-lived instance. When full, the memo is emptied: the
/// commits that then find nothing read, as without it.
pub(crate) const LOADED_MAX: usize = 4096;

/// The version of a subject a load read and that version's `indexed` attribute (its JSON text,
/// parsed only by the commit that uses it), by the subject's partition key.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    seen: Mutex<HashMap<String, (u64, Option<String>)>>,
}

impl Loaded {
    /// Remembers that the subject `pk` was read at `version` (0: absent) with `indexed` (the
    /// attribute's text; `None` for an absent subject).
    pub(crate) fn saw(&self, pk: String, version: u64, indexed: Option<String>) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        if seen.len() >= LOADED_MAX && !seen.contains_key(&pk) {
            seen.clear();
        }
        seen.insert(pk, (version, indexed));
    }

    /// What a load saw of subject `pk` at `version`, taken out of the memo: `Some(None)` for a
    /// subject that was absent (version 0), `Some(Some(text))` for a stored one, `None` when no
    /// load of this version is remembered.
    pub(crate) fn take(&self, pk: &str, version: u64) -> Option<Option<String>> {
        let mut seen = self.seen.lock().ok()?;
        match seen.get(pk) {
            Some((v, _)) if *v == version => seen.remove(pk).map(|(_, indexed)| indexed),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_answered_once_and_only_for_that_version() {
        let memo = Loaded::default();
        memo.saw("S#a".into(), 3, Some("{\"facts\":[]}".into()));
        assert_eq!(memo.take("S#a", 2), None, "another version is not answered");
        assert_eq!(memo.take("S#a", 3), Some(Some("{\"facts\":[]}".into())));
        assert_eq!(memo.take("S#a", 3), None, "taken once");
        memo.saw("S#b".into(), 0, None);
        assert_eq!(memo.take("S#b", 0), Some(None), "an absent subject");
    }

    #[test]
    fn a_later_load_replaces_an_earlier_one() {
        let memo = Loaded::default();
        memo.saw("S#a".into(), 3, Some("x".into()));
        memo.saw("S#a".into(), 4, Some("y".into()));
        assert_eq!(memo.take("S#a", 3), None);
        assert_eq!(memo.take("S#a", 4), Some(Some("y".into())));
    }

    #[test]
    fn a_full_memo_is_emptied_not_grown() {
        let memo = Loaded::default();
        for i in 0..LOADED_MAX {
            memo.saw(format!("S#{i}"), 1, None);
        }
        memo.saw("S#new".into(), 1, None);
        assert_eq!(memo.take("S#0", 1), None, "emptied when full");
        assert_eq!(memo.take("S#new", 1), Some(None));
        assert!(memo.seen.lock().unwrap().len() <= LOADED_MAX);
    }
}
