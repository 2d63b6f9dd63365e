//! The Lesson (learnables-v1 §9) and what absorbing one answers (§10.4).

use instants::Instant;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::names::{Name, Reason, TaughtBy, VersionId};
use crate::AuthorityError;

/// A Lesson as it arrives on the wire (§9), before parsing.
///
/// `{ "collection", "entry", "value": {...}, "taughtBy", "reason"? }`. Convert with
/// `Lesson::try_from(dto)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LessonDto {
    /// The collection to write into, e.g. `customers`.
    pub collection: String,
    /// The entry to write into, e.g. `northgate`.
    pub entry: String,
    /// The lesson value: opaque to everything but the learnable (§9).
    pub value: Value,
    /// Who taught it: an identified human (§9, §13.4).
    pub taught_by: String,
    /// Why, in the person's words.
    #[serde(default)]
    pub reason: Option<String>,
    /// When the knowledge should be looked at again: an RFC 3339 instant with an offset
    /// (`2027-03-01T00:00:00Z`), later than the time the lesson is taught, read as every instant
    /// the watcher reads (semantics.md "Time": up to `9999-12-31T23:59:59.999999999Z`, a leap
    /// second the last nanosecond of its minute). Optional (an optional field is not breaking,
    /// §15); recorded on the version, and the watcher raises a `lesson.review` expectation due
    /// then (expectations-v1 §16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Instant>"))]
    pub expires_at: Option<String>,
}

/// A parsed Lesson (§9): one human-supplied value addressed to one entry, with an author.
///
/// The value is not looked into here: the learnable judges it when the lesson is taught (§10.1).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lesson {
    collection: Name,
    entry: Name,
    value: Value,
    taught_by: TaughtBy,
    reason: Option<Reason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<Instant>,
}

impl Lesson {
    /// A lesson from parsed parts.
    pub fn new(
        collection: Name,
        entry: Name,
        value: Value,
        taught_by: TaughtBy,
        reason: Option<Reason>,
    ) -> Self {
        Self {
            collection,
            entry,
            value,
            taught_by,
            reason,
            expires_at: None,
        }
    }

    /// The same lesson with an expiry: when its knowledge should be looked at again
    /// (expectations-v1 §16). [`crate::teach`] refuses one not later than the time it is taught.
    pub fn with_expires_at(mut self, at: Instant) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// When the knowledge should be looked at again, if the teacher said (UTC).
    pub fn expires_at(&self) -> Option<Instant> {
        self.expires_at
    }

    /// The collection written into.
    pub fn collection(&self) -> &Name {
        &self.collection
    }

    /// The entry written into.
    pub fn entry(&self) -> &Name {
        &self.entry
    }

    /// The opaque lesson value.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Who taught it.
    pub fn taught_by(&self) -> &TaughtBy {
        &self.taught_by
    }

    /// Why, if they said.
    pub fn reason(&self) -> Option<&Reason> {
        self.reason.as_ref()
    }
}

impl TryFrom<LessonDto> for Lesson {
    type Error = AuthorityError;

    /// # Errors
    /// [`AuthorityError::Invalid`] with `field` = `collection`, `entry`, `taughtBy` or `reason`
    /// when that field is empty, padded with whitespace, or too long; `expiresAt` when
    /// [`Instant::parse`] refuses it (the reason says what is wrong: the grammar, or the range).
    fn try_from(dto: LessonDto) -> Result<Self, Self::Error> {
        let at = |field: &'static str| {
            move |e: AuthorityError| match e {
                AuthorityError::Invalid { reason, .. } => AuthorityError::invalid(field, reason),
                other => other,
            }
        };
        Ok(Self {
            collection: Name::parse(dto.collection).map_err(at("collection"))?,
            entry: Name::parse(dto.entry).map_err(at("entry"))?,
            value: dto.value,
            taught_by: TaughtBy::parse(dto.taught_by)?,
            reason: Reason::parse_optional(dto.reason)?,
            expires_at: dto
                .expires_at
                .map(|at| Instant::parse(&at).map_err(|e| AuthorityError::invalid("expiresAt", e)))
                .transpose()?,
        })
    }
}

/// What absorbing a lesson answers (§10.4).
///
/// Wire shape: `{ "learned", "describes", "definitionVersion", "versionId"?, "previousVersionId"? }`.
/// When `learned` is false, `definitionVersion` and `versionId` are the active version's and
/// `previousVersionId` is absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LessonResult {
    /// Whether anything changed.
    pub learned: bool,
    /// What was learned, phrased by the learnable.
    pub describes: String,
    /// The version after the write (the active one when nothing changed).
    pub definition_version: u64,
    /// Content address of that version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<VersionId>,
    /// Content address of the version it replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_version_id: Option<VersionId>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_lesson_parses_and_faults_name_the_field() {
        let dto: Result<LessonDto, _> = serde_json::from_value(json!({
            "collection": "customers", "entry": "northgate",
            "value": { "anything": true }, "taughtBy": "dana@warehouse.example", "reason": " "
        }));
        let lesson = dto.ok().map(Lesson::try_from);
        assert!(
            matches!(&lesson, Some(Ok(l)) if l.reason().is_none() && l.entry().as_str() == "northgate")
        );

        let bad = Lesson::try_from(LessonDto {
            collection: "customers".into(),
            entry: String::new(),
            value: json!({}),
            taught_by: "dana".into(),
            reason: None,
            expires_at: None,
        });
        assert!(matches!(bad, Err(AuthorityError::Invalid { field, .. }) if field == "entry"));
        let nobody = Lesson::try_from(LessonDto {
            collection: "customers".into(),
            entry: "n".into(),
            value: json!({}),
            taught_by: " ".into(),
            reason: None,
            expires_at: None,
        });
        assert!(
            matches!(nobody, Err(AuthorityError::Invalid { field, .. }) if field == "taughtBy")
        );
    }
}
