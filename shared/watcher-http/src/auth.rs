//! Bearer-token credentials (serve.md "Routes"): sources report facts, agents push, operators
//! read, teachers write lessons. Every credential belongs to one tenant.

use std::collections::HashMap;

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

/// Token → principal.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    tokens: HashMap<String, Principal>,
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
        if self.tokens.contains_key(token) {
            return Err(format!(
                "the token of {} {:?} is already used by another party",
                principal.role.noun(),
                principal.id
            ));
        }
        self.tokens.insert(token.to_string(), principal);
        Ok(())
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
            if let Some(p) = self.tokens.get(token) {
                return Ok(p);
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
