//! Input hygiene for text a person or a program hands the authority (learnables issue: "a column
//! heading that differs only by an invisible character is taught as a new heading"): a byte-order
//! mark and the zero-width characters are ignored the way surrounding spaces are, in headings,
//! in matched text and in literal evidence.
//!
//! Written here rather than taken from a crate: the set is five code points, and Unicode
//! normalisation (which would also fold confusables and compatibility forms) is deliberately not
//! applied, since two headings that look alike but differ in letters are different headings.

use std::borrow::Cow;

/// The invisible characters ignored: U+FEFF (byte-order mark, zero-width no-break space),
/// U+200B (zero-width space), U+200C (zero-width non-joiner), U+200D (zero-width joiner),
/// U+2060 (word joiner).
pub const INVISIBLE: [char; 5] = ['\u{FEFF}', '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}'];

/// `text` without [`INVISIBLE`] characters (borrowed when it has none).
pub fn visible(text: &str) -> Cow<'_, str> {
    if text.contains(INVISIBLE) {
        Cow::Owned(text.chars().filter(|c| !INVISIBLE.contains(c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` without [`INVISIBLE`] characters and without surrounding whitespace.
pub fn visible_trimmed(text: &str) -> String {
    visible(text).trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_characters_are_ignored_like_spaces() {
        for raw in [
            "\u{FEFF}Gross weight",
            "Gross weight\u{200B}",
            " \u{200B}Gross\u{200D} weight ",
            "Gross\u{2060} weight\u{200C}",
        ] {
            assert_eq!(visible_trimmed(raw), "Gross weight", "{raw:?}");
        }
        assert!(matches!(visible("plain"), Cow::Borrowed("plain")));
        assert_eq!(
            visible_trimmed("Gr\u{0435}ss"),
            "Gr\u{0435}ss",
            "no confusable folding"
        );
    }
}
