//! Bearer-token credentials (serve.md "Routes"): sources report facts, agents push, operators
//! read, teachers write lessons. Every credential belongs to one tenant.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::HeaderMap;
use watcher_core::ids::Tenant;

use crate::problem::ApiError;

/// What a credential may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Reports facts (expectations-v1 §13.5).
    Source,
    /// Pushes its own task events.
    Agent,
    /// Reads the record.
    Operator,
    /// Writes lessons (learnables contract).
    Teacher,
}

impl Role {
    fn noun(self) -> &'static str {
        match self {
            Role::Source => "a fact source",
            Role::Agent => "an agent",
            Role::Operator => "an operator",
            Role::Teacher => "a teacher",
        }
    }
}

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Its kind.
    pub role: Role,
    /// Its configured id (a source id is recorded as the fact's `source`).
    pub id: String,
    /// Its tenant; it sees nothing else.
    pub tenant: Tenant,
    /// For a teacher: the people it may teach on behalf of.
    pub on_behalf_of: Vec<String>,
}

impl Principal {
    /// Refuses (403) a `role` credential on a path that names another `what` (`agent`, `source`)
    /// than its own id; a credential of any other role (an operator) passes.
    ///
    /// # Errors
    /// 403 `this credential belongs to {what} "<own id>", not "<id>"`.
    pub(crate) fn check_own(&self, role: Role, what: &str, id: &str) -> Result<(), ApiError> {
        if self.role == role && self.id != id {
            return Err(ApiError::forbidden(format!(
                "this credential belongs to {what} {:?}, not {id:?}",
                self.id
            )));
        }
        Ok(())
    }
}

/// Token → principal; and each source's webhook settings (contracts/serve.md "Carrier
/// webhooks"): its signature is a credential too, and its mappings say what its calls mean.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// SHA-256 of each token → its holder. Only digests are kept, so neither `Debug` nor a
    /// memory dump shows a token; a presented token is hashed before the look-up, so the
    /// look-up's timing depends on a digest the caller cannot steer, and the match is confirmed
    /// with a constant-time comparison (`subtle`).
    tokens: HashMap<[u8; 32], Principal>,
    /// (tenant, source id) → the source's webhook.
    hooks: HashMap<(Tenant, String), Arc<SourceWebhook>>,
    /// Source id → its webhook, for sources with a signature (the path alone names them).
    signed: HashMap<String, Arc<SourceWebhook>>,
}

/// A source's webhook: who it is and its checked mappings and signature.
#[derive(Debug)]
pub struct SourceWebhook {
    /// The source's tenant.
    pub tenant: Tenant,
    /// The source's id, recorded as the facts' `source`.
    pub id: String,
    /// Mappings and signature.
    pub hook: watcher_webhooks::SourceHook,
}

impl Credentials {
    /// No credentials: every protected route answers 401.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `token` for `principal`.
    ///
    /// # Errors
    /// When the token is empty or already registered (two parties must never share one).
    pub fn insert(&mut self, token: &str, principal: Principal) -> Result<(), String> {
        if token.trim().is_empty() {
            return Err(format!(
                "{} {:?} has an empty token",
                principal.role.noun(),
                principal.id
            ));
        }
        let digest = token_digest(token);
        if self.tokens.contains_key(&digest) {
            return Err(format!(
                "the token of {} {:?} is already used by another party",
                principal.role.noun(),
                principal.id
            ));
        }
        self.tokens.insert(digest, principal);
        Ok(())
    }

    /// Registers a source's webhook settings.
    ///
    /// # Errors
    /// When a source with a signature shares its id with another source (a signed request is
    /// named by its path only).
    pub fn insert_webhook(&mut self, hook: SourceWebhook) -> Result<(), String> {
        let hook = Arc::new(hook);
        let key = (hook.tenant.clone(), hook.id.clone());
        let clash = self.signed.contains_key(&hook.id)
            || (hook.hook.signature.is_some() && self.hooks.keys().any(|(_, id)| *id == hook.id));
        if clash || self.hooks.contains_key(&key) {
            return Err(format!(
                "the source id {:?} is used twice; a source with a signature needs an id of its own",
                hook.id
            ));
        }
        if hook.hook.signature.is_some() {
            self.signed.insert(hook.id.clone(), hook.clone());
        }
        self.hooks.insert(key, hook);
        Ok(())
    }

    /// The webhook of the source `id` when it has a signature.
    pub fn signed_webhook(&self, id: &str) -> Option<&Arc<SourceWebhook>> {
        self.signed.get(id)
    }

    /// The webhook of source `id` in `tenant`.
    pub fn webhook(&self, tenant: &Tenant, id: &str) -> Option<&Arc<SourceWebhook>> {
        self.hooks.get(&(tenant.clone(), id.to_string()))
    }

    /// The caller, from `Authorization: Bearer …` or, where `notification_token` allows it,
    /// `X-A2A-Notification-Token` (a request passes if either header carries a known token).
    ///
    /// # Errors
    /// 401 when no known credential is presented.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        notification_token: bool,
    ) -> Result<&Principal, ApiError> {
        let bearer = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            });
        let notif = notification_token
            .then(|| headers.get(a2a_types::NOTIFICATION_TOKEN_HEADER))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .map(str::trim);
        for token in [bearer, notif].into_iter().flatten() {
            let digest = token_digest(token);
            if let Some((stored, p)) = self.tokens.get_key_value(&digest) {
                if bool::from(subtle::ConstantTimeEq::ct_eq(&stored[..], &digest[..])) {
                    return Ok(p);
                }
            }
        }
        if bearer.is_none() && notif.is_none() {
            Err(ApiError::unauthorized(
                "no credential: send Authorization: Bearer <token>",
            ))
        } else {
            Err(ApiError::unauthorized(
                "the credential is not known to this watcher",
            ))
        }
    }

    /// Authenticates and requires one of `roles`.
    ///
    /// # Errors
    /// 401 without a known credential; 403 for a credential of another kind.
    pub fn require(
        &self,
        headers: &HeaderMap,
        roles: &[Role],
        notification_token: bool,
    ) -> Result<&Principal, ApiError> {
        let p = self.authenticate(headers, notification_token)?;
        if roles.contains(&p.role) {
            Ok(p)
        } else {
            let wanted: Vec<&str> = roles.iter().map(|r| r.noun()).collect();
            Err(ApiError::forbidden(format!(
                "this route is for {}; the credential is {}'s",
                wanted.join(" or "),
                p.role.noun()
            )))
        }
    }
}

/// SHA-256 of a token: how tokens are kept and looked up.
fn token_digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}
