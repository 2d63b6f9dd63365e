//! SHA-256 over an unambiguous encoding of a tuple of strings, and the text forms of a digest.
//!
//! The encoding is a domain tag followed by each field as its length (8 bytes, big-endian) and
//! its bytes. With a fixed tag and number of fields it is injective: two tuples that differ in
//! any field, or only in where one field ends and the next begins (`("ab", "c")` against
//! `("a", "bc")`), encode differently. Two distinct tuples therefore share a digest only through
//! a SHA-256 collision.

use sha2::{Digest, Sha256};

/// SHA-256 of `tag` and `fields`, each length-prefixed.
pub(crate) fn tuple_digest(tag: &str, fields: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in std::iter::once(tag).chain(fields.iter().copied()) {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

/// RFC 4648 base32, lower case, without padding: 52 characters of `[a-z2-7]` for 32 bytes.
pub(crate) fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let mut buffer: u16 = 0;
    let mut bits = 0u32;
    for &b in bytes {
        buffer = (buffer << 8) | u16::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[usize::from((buffer >> bits) & 0x1f)]));
        }
        buffer &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(char::from(
            ALPHABET[usize::from((buffer << (5 - bits)) & 0x1f)],
        ));
    }
    out
}

/// Lower-case hexadecimal: two characters per byte.
pub(crate) fn hex_lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_matches_rfc4648_vectors() {
        // RFC 4648 §10, lower-cased and without padding.
        for (input, expected) in [
            ("", ""),
            ("f", "my"),
            ("fo", "mzxq"),
            ("foo", "mzxw6"),
            ("foob", "mzxw6yq"),
            ("fooba", "mzxw6ytb"),
            ("foobar", "mzxw6ytboi"),
        ] {
            assert_eq!(base32_lower(input.as_bytes()), expected, "{input:?}");
        }
        assert_eq!(base32_lower(&[0u8; 32]).len(), 52);
    }

    #[test]
    fn hex_is_two_digits_per_byte() {
        assert_eq!(hex_lower(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }

    #[test]
    fn field_boundaries_change_the_digest() {
        assert_ne!(
            tuple_digest("t", &["ab", "c"]),
            tuple_digest("t", &["a", "bc"])
        );
        assert_ne!(tuple_digest("t", &["a", ""]), tuple_digest("t", &["", "a"]));
        assert_ne!(tuple_digest("t", &["a"]), tuple_digest("u", &["a"]));
        assert_eq!(
            tuple_digest("t", &["a", "b"]),
            tuple_digest("t", &["a", "b"])
        );
    }
}
