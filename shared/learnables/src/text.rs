//! Input hygiene for text a person or a program hands the authority (learnables issue: "a column
//! heading that differs only by an invisible character is taught as a new heading"): a byte-order
//! mark and the zero-width characters are ignored the way surrounding spaces are, in headings,
//! in matched text and in literal evidence.
//!
//! Text is also read in one Unicode form, NFC (Unicode Standard Annex #15, canonical
//! composition): `Café` typed with a composed `é` (U+00E9) and `Cafe\u{301}` with a combining
//! accent are the same text, canonically equivalent, and must match and compare equal
//! (docs/interpretation.md "Learnables text is compared in NFC"). Only canonical equivalence is
//! folded: compatibility forms (NFKC: `ﬁ` and `fi`, full-width letters) and confusables stay
//! apart, since two headings that look alike but differ in letters are different headings.

use std::borrow::Cow;

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

/// The invisible characters ignored: U+FEFF (byte-order mark, zero-width no-break space),
/// U+200B (zero-width space), U+200C (zero-width non-joiner), U+200D (zero-width joiner),
/// U+2060 (word joiner).
pub const INVISIBLE: [char; 5] = ['\u{FEFF}', '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}'];

/// `text` in NFC (borrowed when it already is, which a quick check over its characters tells
/// for most text without composing anything).
pub fn nfc(text: &str) -> Cow<'_, str> {
    if is_nfc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfc().collect())
    }
}

/// `text` in NFC ([`nfc`]) without [`INVISIBLE`] characters (borrowed when it is already so).
pub fn visible(text: &str) -> Cow<'_, str> {
    if text.contains(INVISIBLE) {
        let stripped: String = text.chars().filter(|c| !INVISIBLE.contains(c)).collect();
        Cow::Owned(nfc(&stripped).into_owned())
    } else {
        nfc(text)
    }
}

/// `text` in NFC without [`INVISIBLE`] characters and without surrounding whitespace.
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

    #[test]
    fn composed_and_decomposed_text_are_one_text() {
        let composed = "Caf\u{E9}";
        let decomposed = "Cafe\u{301}";
        assert_ne!(composed, decomposed);
        assert_eq!(visible(decomposed), composed);
        assert_eq!(visible_trimmed(" Cafe\u{301}\u{200B} "), composed);
        assert!(
            matches!(visible(composed), Cow::Borrowed(_)),
            "NFC text is not copied"
        );
        // Canonical composition only: no compatibility folding (NFKC would give "fi").
        assert_eq!(visible("\u{FB01}"), "\u{FB01}");
        // A stripped invisible character can leave two characters to compose.
        assert_eq!(visible("e\u{200B}\u{301}"), "\u{E9}");
    }
}
