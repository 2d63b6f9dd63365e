//! The spec's Appendix B (learnables-v1) as wire JSON: the definition's collections, the
//! message it reads, and who teaches it. Shared by the learnables core's tests (`common`) and,
//! included by path, by the HTTP tests (watcher-http's `learnables_http/scenario.rs`, and
//! through it lesson-write's), which cannot depend on a test crate.

#![allow(dead_code, reason = "each includer uses its own part")]

use serde_json::{json, Value};

/// Who teaches: Dana, at the warehouse.
pub const DANA: &str = "dana@warehouse.example";
/// Why Dana teaches the billing lesson.
pub const REASON: &str = "Northgate's billing desk sends the pre-alerts";

/// Customers as in Appendix B: northgate has two marks that do not match the message from
/// billing@origin.example, alhamra one.
pub fn customers() -> Value {
    json!({
        "customers": {
            "learnable": "marks",
            "entry": "customer",
            "teaches": "which customer a message belongs to",
            "skills": ["triage_inbound", "recheck_message"],
            "entries": {
                "northgate": { "label": "Northgate Motors Ltd", "value": { "marks": [
                    { "pattern": "@northgate-motors\\.example", "where": "from" },
                    { "pattern": "NGM-\\d{6}", "where": "subject" }
                ] } },
                "alhamra": { "label": "Al Hamra Trading", "value": { "marks": [
                    { "pattern": "alhamra\\.example" }
                ] } }
            }
        }
    })
}

/// A column-mapping collection, `fields`: `invoice_number` and `amount`, one header each.
pub fn fields() -> Value {
    json!({
        "fields": {
            "learnable": "column-mapping",
            "entry": "field",
            "teaches": "which field a spreadsheet column holds",
            "entries": {
                "invoice_number": { "label": "Invoice number", "value": { "headers": ["Invoice No"] } },
                "amount": { "label": "Amount", "value": { "headers": ["Total"] } }
            }
        }
    })
}

/// The message of Appendix B: a pre-alert from billing@origin.example.
pub fn billing_message() -> Value {
    json!({
        "from": "billing@origin.example",
        "subject": "Pre-alert PA-2026-0901",
        "body": "Please find the pre-alert attached.",
        "attachments": ["PA-2026-0901.pdf"]
    })
}
