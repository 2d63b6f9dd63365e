//! Agent cards: values, hybrid 0.3/1.0 cards, the JSON-RPC interface chosen.

use super::*;

#[test]
fn agent_card_01_values() {
    let card: AgentCard = typed("01", load("01-agent-card.json"));
    assert_eq!(card.name, "Capture Agent");
    assert_eq!(card.version, "0.0.1");
    let iface = card.jsonrpc_interface().expect("jsonrpc interface");
    assert_eq!(iface.url, "http://127.0.0.1:41241/a2a/jsonrpc");
    assert_eq!(iface.protocol_version, "1.0");
    assert_eq!(iface.tenant, None);
    assert_eq!(card.capabilities.streaming, Some(true));
    assert_eq!(card.capabilities.push_notifications, Some(true));
    assert_eq!(card.capabilities.extended_agent_card, None);
    let ext = card
        .extension("https://example.com/ext/demo/v1")
        .expect("extension");
    assert!(!ext.required, "missing required == false");
    assert_eq!(ext.description.as_deref(), Some("demo extension"));
    assert!(card.extension("https://example.com/ext/other").is_none());
    let skill = card.skill("echo").expect("skill");
    assert_eq!(skill.examples, ["hello"]);
    assert_eq!(skill.tags, ["echo"]);
    assert!(card.skill("nope").is_none());
    assert_eq!(
        card.provider.as_ref().map(|p| p.organization.as_str()),
        Some("capture")
    );
    assert_eq!(card.default_output_modes, ["text/plain"]);
}

#[test]
fn agent_card_01b_hybrid_uses_the_1_0_interface() {
    let card: AgentCard = typed("01b", load("01b-agent-card-hybrid-1.0-plus-0.3.json"));
    assert_eq!(card.supported_interfaces.len(), 2);
    let iface = card.jsonrpc_interface().expect("jsonrpc interface");
    assert_eq!(iface.url, "http://127.0.0.1:41243/a2a/jsonrpc");
    assert_eq!(iface.protocol_version, "1.0");
    // Explicit "required": false decodes like the omitted one.
    assert_eq!(
        card.extension("https://example.com/ext/demo/v1")
            .map(|e| e.required),
        Some(false)
    );
    let out = to_json(&card);
    for legacy in ["url", "preferredTransport", "protocolVersion"] {
        assert!(out.get(legacy).is_none(), "legacy key {legacy} re-emitted");
    }
}

#[test]
fn jsonrpc_interface_skips_other_bindings_and_versions() {
    let card: AgentCard = typed(
        "card",
        json!({
            "name": "n", "description": "d", "version": "1",
            "capabilities": {},
            "supportedInterfaces": [
                {"url": "http://a/compat", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": "http://a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "http://a/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.1", "tenant": "t1"},
                {"url": "http://a/rpc2", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}]
        }),
    );
    let iface = card.jsonrpc_interface().expect("interface");
    assert_eq!(iface.url, "http://a/rpc");
    assert_eq!(iface.tenant.as_deref(), Some("t1"));
    assert!(card
        .security_schemes
        .as_ref()
        .is_some_and(|s| s.contains_key("bearer")));
    assert_eq!(card.security_requirements.as_ref().map(Vec::len), Some(1));

    let none: AgentCard = typed(
        "card",
        json!({"name": "n", "description": "d", "version": "1", "capabilities": {},
               "supportedInterfaces": [{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]}),
    );
    assert!(none.jsonrpc_interface().is_none());
}
