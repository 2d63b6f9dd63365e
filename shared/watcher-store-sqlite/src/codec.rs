//! How values are written to and read from SQLite columns: instants as sortable text, `u64`
//! counters as `INTEGER`, records as JSON, and rusqlite errors as [`StoreError`]s.

use serde::de::DeserializeOwned;
use serde::Serialize;
use watcher_core::time::Instant;
use watcher_runtime::store::StoreError;

/// Added to an instant's nanoseconds since the Unix epoch so that every instant (years
/// 1..=9999, about -6.2 × 10^19 to 2.6 × 10^20 ns) becomes a positive number below 10^22.
const INSTANT_OFFSET: i128 = 1_000_000_000_000_000_000_000;

/// Digits of an instant key.
const INSTANT_KEY_DIGITS: usize = 22;

/// A key above the [`instant_key`] of every instant (for "no upper bound").
pub(crate) const AFTER_EVERY_INSTANT: &str = "9999999999999999999999";

/// An instant as a column value: `as_nanos() + 10^21`, zero-padded to 22 digits.
///
/// Text rather than `INTEGER`: nanoseconds in an `i64` only reach the years 1678..2262, and an
/// agent may raise an expectation due in 2300 (or with a grace that saturates at year 9999).
/// Refusing those would fail the whole push at the storage layer; fixed-width digits keep every
/// instant, and SQLite's binary collation orders them as numbers, so `<=`, `>` and `ORDER BY`
/// on the column are comparisons of instants.
pub(crate) fn instant_key(t: Instant) -> String {
    format!(
        "{:0width$}",
        t.as_nanos() + INSTANT_OFFSET,
        width = INSTANT_KEY_DIGITS
    )
}

/// Reads an [`instant_key`] back.
///
/// # Errors
/// [`StoreError::Corrupt`] when the text is not a key this module wrote.
pub(crate) fn instant_from_key(key: &str) -> Result<Instant, StoreError> {
    let bad = |why: String| StoreError::Corrupt(format!("instant key {key:?}: {why}"));
    if key.len() != INSTANT_KEY_DIGITS || !key.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(format!("expected {INSTANT_KEY_DIGITS} digits")));
    }
    let n: i128 = key.parse().map_err(|e| bad(format!("{e}")))?;
    Instant::from_nanos(n - INSTANT_OFFSET).map_err(bad)
}

/// A `u64` (version, raising order, sequence) as an SQLite `INTEGER` (`i64`).
///
/// # Errors
/// [`StoreError::Corrupt`] above `i64::MAX`, which no counter of this store reaches.
pub(crate) fn int_of(v: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(v)
        .map_err(|_| StoreError::Corrupt(format!("{what} {v} does not fit an SQLite INTEGER")))
}

/// An SQLite `INTEGER` read back as a `u64`.
///
/// # Errors
/// [`StoreError::Corrupt`] when negative.
pub(crate) fn u64_of(v: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("{what} is negative ({v})")))
}

/// A value as its JSON column text.
///
/// # Errors
/// [`StoreError::Backend`] if serde refuses it (not expected for the record's types).
pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(StoreError::backend)
}

/// A JSON column read back.
///
/// # Errors
/// [`StoreError::Corrupt`] naming `what` when the text does not parse as a `T`.
pub(crate) fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// A rusqlite error as a store error. Values that cannot be read as their column's type are
/// corrupt data; everything else (I/O, locking past the busy timeout, constraint failures) is
/// the backend's, with its source kept.
pub(crate) fn db(e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..) => StoreError::Corrupt(e.to_string()),
        other => StoreError::backend(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watcher_core::time::Instant;

    fn i(text: &str) -> Instant {
        Instant::parse(text).unwrap()
    }

    #[test]
    fn instant_keys_round_trip_and_sort_as_instants() {
        let instants = [
            Instant::MIN,
            i("1000-01-01T00:00:00Z"),
            i("1969-12-31T23:59:59.999999999Z"),
            i("1970-01-01T00:00:00Z"),
            i("2026-09-10T12:00:00Z"),
            i("2026-09-10T12:00:00.000000001Z"),
            i("2300-01-01T00:00:00Z"),
            Instant::MAX,
        ];
        let keys: Vec<String> = instants.iter().map(|t| instant_key(*t)).collect();
        for (t, k) in instants.iter().zip(&keys) {
            assert_eq!(k.len(), INSTANT_KEY_DIGITS, "{t}: {k}");
            assert_eq!(instant_from_key(k).unwrap(), *t);
        }
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "text order is instant order: {keys:?}"
        );
        assert!(keys.iter().all(|k| k.as_str() < AFTER_EVERY_INSTANT));
    }

    #[test]
    fn malformed_instant_keys_are_corrupt() {
        for bad in [
            "",
            "12",
            "-000000000000000000001",
            "99999999999999999999999",
            "abcdefghijklmnopqrstuv",
        ] {
            assert!(
                matches!(instant_from_key(bad), Err(StoreError::Corrupt(_))),
                "{bad:?}"
            );
        }
        // 22 digits, but beyond the instant range.
        assert!(matches!(
            instant_from_key("9999999999999999999999"),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn counters_fit_or_are_refused() {
        assert_eq!(int_of(7, "v").unwrap(), 7);
        assert!(matches!(int_of(u64::MAX, "v"), Err(StoreError::Corrupt(_))));
        assert_eq!(u64_of(7, "v").unwrap(), 7);
        assert!(matches!(u64_of(-1, "v"), Err(StoreError::Corrupt(_))));
    }
}
