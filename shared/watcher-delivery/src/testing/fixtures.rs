//! Set-up the delivery tests of several crates share (feature `test-utils`): the agent they book
//! in the directory ([`agent_entry`]) and the JSON-RPC answer their agents give
//! ([`Reply::rpc_result`]).

use serde_json::{json, Value};
use watcher_core::card::declaration_from_card;
use watcher_core::engine::AgentProfile;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_runtime::directory::AgentEntry;

use super::{CapturedRequest, Reply};

/// The card of the agents the tests book: it keeps no time (the watcher submits its lapse
/// tasks, to the skill `handle_lapse`) and declares one kind, `shipment.manifest`, on
/// `shipment` subjects, `observed` (extension spec §15).
fn card(name: &str) -> Value {
    json!({
        "name": name,
        "skills": [{ "id": "handle_lapse", "name": "Handle lapse" }],
        "capabilities": { "extensions": [{
            "uri": watcher_core::EXPECTATIONS_URI,
            "params": { "keepsTime": false, "lapseSkill": "handle_lapse", "kinds": [
                { "kind": "shipment.manifest", "subjectType": "shipment",
                  "describes": "the manifest", "basis": "observed" }] }
        }]}
    })
}

/// The directory entry of `agent` of `tenant` as the delivery tests book it: the card above
/// (`keepsTime: false`, kind `shipment.manifest` on shipments, lapse skill `handle_lapse`), its
/// lapse tasks submitted by the watcher (`submits_lapses`), and the default [`Delivery`] (no
/// push configuration, no interface tenant).
pub fn agent_entry(tenant: &Tenant, agent: &AgentId) -> AgentEntry {
    let declaration = declaration_from_card(&card(agent.as_str()))
        // The card is this module's constant, valid by the extension spec (its test below).
        .unwrap_or_else(|errors| unreachable!("the fixture card is valid: {errors:?}"));
    AgentEntry {
        tenant: tenant.clone(),
        profile: AgentProfile {
            id: agent.clone(),
            declaration,
        },
        submits_lapses: true,
        delivery: Delivery::default(),
    }
}

impl Reply {
    /// HTTP 200, `application/json`, with the JSON-RPC 2.0 response `{"jsonrpc": "2.0", "id":
    /// <the request's id>, "result": result}` answering `req` (an agent's `GetTask` or
    /// `ListTasks` answer, shaped by the test).
    pub fn rpc_result(req: &CapturedRequest, result: Value) -> Self {
        Reply::Http {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: json!({ "jsonrpc": "2.0", "id": req.rpc_id(), "result": result }).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_booked_agent_declares_its_kind_and_submits_lapses() {
        let tenant = Tenant::default_tenant();
        let agent = AgentId::parse("booking").unwrap();
        let entry = agent_entry(&tenant, &agent);
        assert_eq!(entry.tenant, tenant);
        assert_eq!(entry.profile.id, agent);
        assert!(entry.submits_lapses);
        assert_eq!(entry.delivery, Delivery::default());
        let declared = &entry.profile.declaration;
        assert!(!declared.keeps_time);
        assert_eq!(declared.lapse_skill, "handle_lapse");
        assert_eq!(declared.kinds.len(), 1);
        let kind = declared
            .kind("shipment.manifest")
            .expect("the kind is declared");
        assert_eq!(
            (kind.subject_type.as_str(), kind.basis.as_str()),
            ("shipment", "observed")
        );
    }
}
