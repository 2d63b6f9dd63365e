//! The partition key of a definition's item.
//!
//! `DEF#{tenant}#{id}`, each component escaped as the watcher's DynamoDB keys are (`%` → `%25`,
//! `#` → `%23`), so a component never holds a raw `#` and two different `(tenant, id)` pairs
//! never give the same key. Nothing reads a key back: the state carries its tenant and id.
//!
//! No key needs hashing, unlike the watcher's: a [`TenantId`] is at most 128 characters (at
//! most 4 bytes each, escaped or not) and a [`DefinitionId`] at most 128 ASCII characters that
//! need no escaping, so a key is at most 4 + 512 + 1 + 128 = 645 bytes, well under DynamoDB's
//! 2048 for a partition key.

use learnables::{DefinitionId, TenantId};

/// Escapes one key component: `%` → `%25`, `#` → `%23`.
fn escape(component: &str) -> String {
    let mut out = String::with_capacity(component.len());
    for c in component.chars() {
        match c {
            '%' => out.push_str("%25"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// The partition key of definition `id` of `tenant`: `DEF#{tenant}#{id}`, components escaped.
///
/// # Example
/// ```
/// use learnables::{DefinitionId, TenantId};
/// use learnables_store_dynamodb::definition_pk;
/// let tenant = TenantId::parse("acme#1").unwrap();
/// let id = DefinitionId::parse("prealert-triage").unwrap();
/// assert_eq!(definition_pk(&tenant, &id), "DEF#acme%231#prealert-triage");
/// ```
pub fn definition_pk(tenant: &TenantId, id: &DefinitionId) -> String {
    format!("DEF#{}#{}", escape(tenant.as_str()), escape(id.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(tenant: &str, id: &str) -> String {
        definition_pk(
            &TenantId::parse(tenant).expect("a tenant"),
            &DefinitionId::parse(id).expect("an id"),
        )
    }

    #[test]
    fn components_are_escaped_so_keys_never_collide() {
        assert_eq!(key("acme", "prealert-triage"), "DEF#acme#prealert-triage");
        assert_eq!(key("a#b", "c"), "DEF#a%23b#c");
        assert_eq!(key("a%23b", "c"), "DEF#a%2523b#c");
        assert_ne!(key("a#b", "c"), key("a", "b-c"));
    }

    #[test]
    fn the_longest_key_fits_a_partition_key() {
        let tenant = "%".repeat(64) + &"😀".repeat(64);
        let id = "a".repeat(128);
        assert!(key(&tenant, &id).len() <= 2048);
    }
}
