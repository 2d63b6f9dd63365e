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
    /// The operator page's session value of each token ([`session_digest`]) → the token's
    /// digest: the cookie carries the session value, never the token.
    sessions: HashMap<[u8; 32], [u8; 32]>,
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
        self.sessions.insert(session_digest(&digest), digest);
        self.tokens.insert(digest, principal);
        Ok(())
    }

    /// The session value (64 lowercase hex digits) the operator page's cookie carries for
    /// `token`, when the token is known: derived from the token's digest, so a cookie that leaks
    /// names the session but not the token, and every instance (every Lambda) derives the same
    /// one with no session kept anywhere. `None` for an unknown token.
    pub fn session_of(&self, token: &str) -> Option<String> {
        let digest = token_digest(token.trim());
        self.tokens
            .contains_key(&digest)
            .then(|| hex::encode(session_digest(&digest)))
    }

    /// The holder of the session value `value` (as [`Credentials::session_of`] gave it), with
    /// one of `roles`.
    ///
    /// # Errors
    /// 401 when the value names no known token (a token removed from the configuration ends its
    /// sessions); 403 for a holder of another kind, as [`Credentials::require`] answers it.
    pub fn by_session(&self, value: &str, roles: &[Role]) -> Result<&Principal, ApiError> {
        let unknown = || ApiError::unauthorized("the session is not known to this watcher");
        let presented: [u8; 32] = hex::decode(value.trim())
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(unknown)?;
        let (stored, digest) = self
            .sessions
            .get_key_value(&presented)
            .ok_or_else(unknown)?;
        if !bool::from(subtle::ConstantTimeEq::ct_eq(&stored[..], &presented[..])) {
            return Err(unknown());
        }
        of_role(self.tokens.get(digest).ok_or_else(unknown)?, roles)
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
        self.hooks.get(&(tenant.clone(), id.to_owned()))
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
        Err(ApiError::unauthorized(unauthenticated(
            notification_token,
            bearer.is_some(),
            notif.is_some(),
        )))
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
        of_role(self.authenticate(headers, notification_token)?, roles)
    }
}

/// What a 401 says: which header the route reads and, for a token presented but not known, where
/// the watcher looks for it (a push's is an agent's `push_token`), without saying whose tokens
/// exist. `notification_token`: the route takes `X-A2A-Notification-Token` (an agent's push).
fn unauthenticated(notification_token: bool, bearer: bool, notif: bool) -> &'static str {
    match (notification_token, bearer || notif, notif) {
        (true, false, _) => {
            "no credential: send X-A2A-Notification-Token: <the agent's push_token> (the token of its [[agents]] entry), or Authorization: Bearer <token>"
        }
        (true, true, true) => {
            "the X-A2A-Notification-Token is not known to this watcher: it must be the push_token of the agent's [[agents]] entry"
        }
        (false, false, _) => "no credential: send Authorization: Bearer <token>",
        _ => "the credential is not known to this watcher",
    }
}

/// `p` when it holds one of `roles`.
///
/// # Errors
/// 403 naming the roles wanted and the one held.
fn of_role<'a>(p: &'a Principal, roles: &[Role]) -> Result<&'a Principal, ApiError> {
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

/// The operator page's session value for a token's digest: SHA-256 of a label of its own and
/// the digest, so it is neither the token nor the digest the look-up keys on.
fn session_digest(token_digest: &[u8; 32]) -> [u8; 32] {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"a2a-watcher operator-page session v1\0");
    h.update(token_digest);
    h.finalize().into()
}

/// SHA-256 of a token: how tokens are kept and looked up.
fn token_digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}
