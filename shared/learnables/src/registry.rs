//! The built-in learnables, by name, and the settings they read by (contract "Definitions and
//! learnables": "Two learnables are built in, and both go through the same authority code";
//! `GET /v1/learnables`).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::collections::ValidatesEntries;
use crate::column_mapping::ColumnMapping;
use crate::learnable::{DecidedBy, Learnable, LessonField, Settings};
use crate::marks::Marks;
use crate::names::Name;
use crate::AuthorityError;

/// Learnables by name, plus the [`Settings`] every reading uses.
///
/// Build once at start-up (`Registry::builtin()`), share by reference.
pub struct Registry {
    learnables: Vec<Box<dyn Learnable>>,
    settings: Settings,
}

impl Registry {
    /// A registry with no learnables.
    pub fn empty(settings: Settings) -> Self {
        Self {
            learnables: Vec::new(),
            settings,
        }
    }

    /// The built-in learnables — `marks` and `column-mapping` — with default settings
    /// (margin 0.2).
    pub fn builtin() -> Self {
        Self::builtin_with(Settings::default())
    }

    /// The built-in learnables with the given settings.
    pub fn builtin_with(settings: Settings) -> Self {
        Self {
            learnables: vec![Box::new(Marks::new()), Box::new(ColumnMapping::new())],
            settings,
        }
    }

    /// Adds a learnable.
    ///
    /// # Errors
    /// [`AuthorityError::Conflict`] when one of the same name is already registered.
    pub fn register(&mut self, learnable: Box<dyn Learnable>) -> Result<(), AuthorityError> {
        if self.get(learnable.name()).is_some() {
            return Err(AuthorityError::Conflict {
                reason: format!(
                    "a learnable named {:?} is already registered",
                    learnable.name()
                ),
            });
        }
        self.learnables.push(learnable);
        Ok(())
    }

    /// The learnable named `name`.
    pub fn get(&self, name: &str) -> Option<&dyn Learnable> {
        self.learnables
            .iter()
            .find(|l| l.name() == name)
            .map(AsRef::as_ref)
    }

    /// The names of every registered learnable, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.learnables.iter().map(|l| l.name())
    }

    /// The settings readings use.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What `GET /v1/learnables` lists: one [`LearnableSummary`] per learnable.
    pub fn summaries(&self) -> Vec<LearnableSummary> {
        self.learnables
            .iter()
            .map(|l| LearnableSummary {
                name: l.name().to_owned(),
                how: l.how().to_owned(),
                decided_by: l.decided_by(),
                lesson_fields: l.lesson_fields(),
            })
            .collect()
    }

    /// The learnable `name`, or a refusal saying which learnables exist.
    pub(crate) fn require(
        &self,
        name: &str,
        collection: &Name,
    ) -> Result<&dyn Learnable, AuthorityError> {
        self.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.names().collect();
            AuthorityError::refused(
                format!("{collection}/learnable"),
                format!(
                    "there is no learnable named {name:?}; the learnables here are: {}",
                    known.join(", ")
                ),
            )
        })
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("learnables", &self.names().collect::<Vec<_>>())
            .field("settings", &self.settings)
            .finish()
    }
}

/// One learnable as `GET /v1/learnables` lists it.
///
/// Wire shape: `{ "name", "how", "decidedBy", "lessonFields": [LessonField] }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct LearnableSummary {
    /// The registry name, e.g. `"marks"`.
    pub name: String,
    /// How it decides today (§6.2 `how`).
    pub how: String,
    /// §6.2 `decidedBy`.
    pub decided_by: DecidedBy,
    /// §6.2 `lessonFields`.
    pub lesson_fields: Vec<LessonField>,
}

impl ValidatesEntries for Registry {
    fn knows(&self, learnable: &str, collection: &Name) -> Result<(), AuthorityError> {
        self.require(learnable, collection).map(|_| ())
    }

    fn validate_entry(
        &self,
        learnable: &str,
        collection: &Name,
        entry: &Name,
        value: &Value,
    ) -> Result<Value, AuthorityError> {
        self.require(learnable, collection)?
            .validate_value(value)
            .map_err(|r| r.at(format!("{collection}/{entry}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_can_be_shared_across_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Registry>();
        shared::<Box<dyn Learnable>>();
    }

    #[test]
    fn builtin_has_both_learnables_and_refuses_duplicates() {
        let mut r = Registry::builtin();
        assert_eq!(r.names().collect::<Vec<_>>(), ["marks", "column-mapping"]);
        assert!(r.get("marks").is_some());
        assert!(r.get("nope").is_none());
        let dup = r.register(Box::new(Marks::new()));
        assert!(matches!(dup, Err(AuthorityError::Conflict { .. })));
        assert_eq!(r.summaries().len(), 2);
    }
}
