//! Small serde helpers shared by the wire types.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// Deserializes an optional string, treating `""` (and `null`) as absent.
///
/// ProtoJSON omits default values, but some senders (the a2a-sdk `ListTasks`
/// path, a2a-v1.md §0) emit explicit `""`; both must mean "not set".
/// Use with `#[serde(default, deserialize_with = "empty_string_as_none")]`.
pub fn empty_string_as_none<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(Option::<String>::deserialize(deserializer)?.filter(|s| !s.is_empty()))
}

/// `#[serde(with = "nonempty")]` for an optional string field: reads it with
/// [`empty_string_as_none`] (`""` and `null` are absent) and writes it as-is.
///
/// The wire types pair it with `default` and `skip_serializing_if = "Option::is_none"`,
/// so an unset field is neither required on input nor written on output.
pub(crate) mod nonempty {
    use serde::{Deserializer, Serialize, Serializer};

    /// Writes the string (or `null`; callers skip `None` before it gets here).
    pub(crate) fn serialize<S: Serializer>(
        value: &Option<String>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }

    /// Reads the string with [`super::empty_string_as_none`].
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        super::empty_string_as_none(deserializer)
    }
}

/// Deserializes a JSON value keeping an explicit `null` as `Some(Value::Null)`.
///
/// With `#[serde(default)]` a *missing* key stays `None`, so presence can be
/// told apart from `null` (e.g. `Part.data: null`, JSON-RPC `"result": null`).
pub(crate) fn present_value<'de, D>(deserializer: D) -> Result<Option<Value>, D::Error>
where
    D: Deserializer<'de>,
{
    Value::deserialize(deserializer).map(Some)
}

/// Failure to pick the single member of a ProtoJSON `oneof` (a2a-v1.md §0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OneofError {
    /// None of the member keys is present (or all are `null`).
    Missing {
        /// The accepted member keys.
        expected: &'static [&'static str],
    },
    /// More than one member key is present.
    Multiple {
        /// The accepted member keys.
        expected: &'static [&'static str],
        /// The member keys that were found.
        found: Vec<&'static str>,
    },
}

impl std::fmt::Display for OneofError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OneofError::Missing { expected } => {
                write!(
                    f,
                    "expected exactly one of {}; found none",
                    expected.join(", ")
                )
            }
            OneofError::Multiple { expected, found } => write!(
                f,
                "expected exactly one of {}; found {}",
                expected.join(", "),
                found.join(" and ")
            ),
        }
    }
}

impl std::error::Error for OneofError {}

/// Removes and returns the single non-null member of a oneof from `map`.
///
/// Keys not listed in `members` are left in place (and ignored by callers).
pub(crate) fn take_oneof(
    map: &mut Map<String, Value>,
    members: &'static [&'static str],
) -> Result<(&'static str, Value), OneofError> {
    let found: Vec<&'static str> = members
        .iter()
        .copied()
        .filter(|m| map.get(*m).is_some_and(|v| !v.is_null()))
        .collect();
    match found.as_slice() {
        [one] => {
            let value = map.remove(*one).unwrap_or(Value::Null);
            Ok((one, value))
        }
        [] => Err(OneofError::Missing { expected: members }),
        _ => Err(OneofError::Multiple {
            expected: members,
            found,
        }),
    }
}

/// Name of a JSON value's type with its article, for error messages: `"null"`, `"a boolean"`,
/// `"a number"`, `"a string"`, `"an array"` or `"an object"`.
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
