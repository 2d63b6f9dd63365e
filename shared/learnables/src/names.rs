//! Newtypes parsed at the edge: identifiers and texts the authority stores (contract "Routes",
//! learnables-v1 §9, §13.2, §13.4).
//!
//! Each has a private field and a `parse` constructor returning [`AuthorityError::Invalid`]; once
//! a value has one of these types it is known to be well-formed. All serialize as JSON strings
//! and deserialize through the same `parse`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::AuthorityError;

/// Checks the rules every identifier shares: non-empty, no surrounding whitespace, no control
/// characters, at most `max` characters.
fn check_identifier(field: &str, raw: &str, max: usize) -> Result<(), AuthorityError> {
    if raw.is_empty() {
        return Err(AuthorityError::invalid(field, "must not be empty"));
    }
    if raw.trim() != raw {
        return Err(AuthorityError::invalid(
            field,
            "must not start or end with whitespace",
        ));
    }
    if raw.chars().any(char::is_control) {
        return Err(AuthorityError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    if raw.chars().count() > max {
        return Err(AuthorityError::invalid(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    Ok(())
}

macro_rules! string_newtype {
    ($(#[$doc:meta])* $name:ident, $field:literal, $check:expr) => {
        string_newtype!($(#[$doc])* $name, $field, $check, |raw: String| raw);
    };
    ($(#[$doc:meta])* $name:ident, $field:literal, $check:expr, $prepare:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Parses `raw`, refusing it with [`AuthorityError::Invalid`] (field
            #[doc = concat!("`", $field, "`)")]
            /// when it breaks the rules on this type.
            pub fn parse(raw: impl Into<String>) -> Result<Self, AuthorityError> {
                let prepare: fn(String) -> String = $prepare;
                let raw = prepare(raw.into());
                let check: fn(&str) -> Result<(), AuthorityError> = $check;
                check(&raw)?;
                Ok(Self(raw))
            }

            /// The text, as parsed.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "minLength": 1 })
            }
        }

        impl TryFrom<String> for $name {
            type Error = AuthorityError;
            fn try_from(raw: String) -> Result<Self, Self::Error> {
                Self::parse(raw)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        // Sound: `Ord`, `Eq` and `Hash` are derived from the inner `String`, which agree with `str`'s.
        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
    };
}

string_newtype!(
    /// The tenant a definition belongs to (§13.2: every lesson is scoped to exactly one tenant).
    /// Non-empty, no surrounding whitespace or control characters, at most 128 characters.
    TenantId,
    "tenant",
    |raw| check_identifier("tenant", raw, 128)
);

string_newtype!(
    /// A definition's id, e.g. `prealert-triage` (contract: `/v1/definitions/{id}`). It appears in
    /// URLs, so it is 1 to 128 characters of ASCII letters, digits, `.`, `_` and `-`, starting
    /// with a letter or digit.
    DefinitionId,
    "id",
    |raw| {
        check_identifier("id", raw, 128)?;
        let mut chars = raw.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
        let rest_ok = raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if first_ok && rest_ok {
            Ok(())
        } else {
            Err(AuthorityError::invalid(
                "id",
                "use ASCII letters, digits, '.', '_' and '-', starting with a letter or digit",
            ))
        }
    }
);

string_newtype!(
    /// A collection or entry name, e.g. `customers`, `northgate` (§5). Non-empty, no surrounding
    /// whitespace or control characters, at most 128 characters. Kept in NFC
    /// ([`crate::text::nfc`]): a name sent in another Unicode form names the same entry.
    Name,
    "name",
    |raw| check_identifier("name", raw, 128),
    |raw: String| match crate::text::nfc(&raw) {
        std::borrow::Cow::Borrowed(_) => raw,
        std::borrow::Cow::Owned(composed) => composed,
    }
);

string_newtype!(
    /// Who taught a lesson or made an activation: an identified human (§9 `taughtBy`, §13.4),
    /// ideally a stable internal identifier (§14). Non-empty, no surrounding whitespace or
    /// control characters, at most 256 characters. Whether the caller may act for this person is
    /// the shell's check, not this type's.
    TaughtBy,
    "taughtBy",
    |raw| check_identifier("taughtBy", raw, 256)
);

string_newtype!(
    /// The credential a write came through (contract: history records the credential as `via`).
    /// Non-empty, no surrounding whitespace or control characters, at most 256 characters.
    Via,
    "via",
    |raw| check_identifier("via", raw, 256)
);

string_newtype!(
    /// Why, in the person's words (§9 `reason`). Non-empty after trimming, at most 4000
    /// characters; line breaks are allowed. Use [`Reason::parse_optional`] for a wire field where
    /// an empty string means "no reason".
    Reason,
    "reason",
    |raw| {
        if raw.trim().is_empty() {
            Err(AuthorityError::invalid("reason", "must not be empty"))
        } else if raw.chars().count() > 4000 {
            Err(AuthorityError::invalid(
                "reason",
                "must be at most 4000 characters",
            ))
        } else {
            Ok(())
        }
    }
);

impl Reason {
    /// Parses an optional wire `reason`: absent or blank becomes `None`.
    ///
    /// # Errors
    /// [`AuthorityError::Invalid`] when it is longer than 4000 characters.
    pub fn parse_optional(raw: Option<String>) -> Result<Option<Self>, AuthorityError> {
        match raw {
            None => Ok(None),
            Some(text) if text.trim().is_empty() => Ok(None),
            Some(text) => Self::parse(text).map(Some),
        }
    }
}

string_newtype!(
    /// A content-addressed version identifier: `sha256:` followed by 64 lowercase hex digits
    /// (contract "Rules"; computed by [`crate::version_id`]).
    VersionId,
    "versionId",
    |raw| {
        let ok = raw.strip_prefix("sha256:").is_some_and(|hex| {
            hex.len() == 64
                && hex
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        });
        if ok {
            Ok(())
        } else {
            Err(AuthorityError::invalid(
                "versionId",
                "must be 'sha256:' followed by 64 lowercase hex digits",
            ))
        }
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_refuse_blank_padded_and_control_text() {
        assert!(Name::parse("northgate").is_ok());
        for bad in ["", " northgate", "north\ngate", "northgate "] {
            assert!(
                matches!(Name::parse(bad), Err(AuthorityError::Invalid { .. })),
                "{bad:?}"
            );
        }
        assert!(Name::parse("x".repeat(129)).is_err());
    }

    #[test]
    fn names_are_kept_in_nfc() {
        let composed = Name::parse("Caf\u{E9}").ok();
        let decomposed = Name::parse("Cafe\u{301}").ok();
        assert_eq!(decomposed.as_ref().map(Name::as_str), Some("Caf\u{E9}"));
        assert_eq!(composed, decomposed);
        let back: Result<Name, _> = serde_json::from_str("\"Cafe\\u0301\"");
        assert_eq!(back.ok(), composed, "through serde too");
    }

    #[test]
    fn definition_ids_are_url_safe() {
        assert!(DefinitionId::parse("prealert-triage").is_ok());
        assert!(DefinitionId::parse("v1.2_x").is_ok());
        assert!(DefinitionId::parse("-leading").is_err());
        assert!(DefinitionId::parse("a/b").is_err());
        assert!(DefinitionId::parse("a b").is_err());
    }

    #[test]
    fn blank_reason_is_no_reason() {
        assert_eq!(Reason::parse_optional(Some("  ".into())), Ok(None));
        assert_eq!(Reason::parse_optional(None), Ok(None));
        assert!(Reason::parse_optional(Some("because".into()))
            .is_ok_and(|r| r.is_some_and(|r| r.as_str() == "because")));
    }

    #[test]
    fn version_ids_are_checked() {
        let good = format!("sha256:{}", "a".repeat(64));
        assert!(VersionId::parse(good).is_ok());
        assert!(VersionId::parse("sha256:abc").is_err());
        assert!(VersionId::parse(format!("sha1:{}", "a".repeat(64))).is_err());
        assert!(VersionId::parse(format!("sha256:{}", "A".repeat(64))).is_err());
    }

    #[test]
    fn newtypes_round_trip_through_json() {
        let name = Name::parse("customers").ok();
        let json = serde_json::to_string(&name).ok();
        assert_eq!(json.as_deref(), Some("\"customers\""));
        let back: Result<Name, _> = serde_json::from_str("\" padded\"");
        assert!(back.is_err());
    }
}
