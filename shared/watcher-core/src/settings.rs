//! Deployment bounds (expectations-v1 §10.3, §13.2; replay.md "settings").

use serde::{Deserialize, Serialize};

/// Bounds a deployment sets. Defaults: lineage 3, 100 open per subject, 100 000 per agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// Largest lineage recorded; a successor beyond it is refused (§10.3).
    pub lineage_bound: u32,
    /// Expectations that can still lapse, per subject (§13.2).
    pub max_open_per_subject: u64,
    /// Expectations that can still lapse, per raising agent (§13.2).
    pub max_open_per_agent: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            lineage_bound: 3,
            max_open_per_subject: 100,
            max_open_per_agent: 100_000,
        }
    }
}
