//! Webhook signatures (contracts/serve.md "Carrier webhooks", `[sources.signature]`): an HMAC
//! (SHA-256 or SHA-1) of the raw body — or of `{timestamp}.{body}` when a timestamp header is
//! configured — in a header, hex or base64, compared in constant time. Pure: the caller passes
//! the headers, the raw body and the current instant.

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use subtle::ConstantTimeEq;
use watcher_core::time::{Instant, IsoDuration};

/// The tolerance when `timestamp_header` is set without `tolerance`.
pub const DEFAULT_TOLERANCE: &str = "PT5M";

/// The HMAC's hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Algorithm {
    /// HMAC-SHA256.
    #[serde(rename = "hmac-sha256")]
    HmacSha256,
    /// HMAC-SHA1 (older carriers).
    #[serde(rename = "hmac-sha1")]
    HmacSha1,
}

/// How the signature is written in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Encoding {
    /// Hexadecimal, either case.
    #[serde(rename = "hex")]
    Hex,
    /// Standard base64, padded or not.
    #[serde(rename = "base64")]
    Base64,
}

/// `[sources.signature]` as written in the configuration.
#[derive(Debug, Clone, Deserialize)]
pub struct SignatureConfig {
    /// The header carrying the signature (any case).
    pub header: String,
    /// `hmac-sha256` or `hmac-sha1`.
    pub algorithm: Algorithm,
    /// `hex` or `base64`.
    pub encoding: Encoding,
    /// The shared secret (the HMAC key, as UTF-8 bytes).
    pub secret: String,
    /// Optional header with the signing instant: Unix seconds or RFC 3339.
    #[serde(default)]
    pub timestamp_header: Option<String>,
    /// ISO 8601 duration; with `timestamp_header`, requests further from now are refused.
    /// Default [`DEFAULT_TOLERANCE`].
    #[serde(default)]
    pub tolerance: Option<String>,
}

/// A checked signature rule.
#[derive(Clone)]
pub struct Signature {
    header: String,
    algorithm: Algorithm,
    encoding: Encoding,
    secret: Vec<u8>,
    timestamp: Option<(String, IsoDuration)>,
}

impl std::fmt::Debug for Signature {
    // The secret is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signature")
            .field("header", &self.header)
            .field("algorithm", &self.algorithm)
            .field("encoding", &self.encoding)
            .field("timestamp", &self.timestamp)
            .finish_non_exhaustive()
    }
}

/// Why a request's signature is refused (answered 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The header is absent.
    #[error("header {0}: missing; this source's requests must be signed")]
    Missing(String),
    /// The header is not in the configured encoding.
    #[error("header {header}: {reason}")]
    Malformed {
        /// The header.
        header: String,
        /// What is wrong.
        reason: String,
    },
    /// The signature does not match the body (and timestamp).
    #[error("header {0}: the signature does not match the body")]
    Mismatch(String),
    /// The timestamp is outside the tolerance.
    #[error("header {header}: {at} is {seconds} s from now, outside the tolerance {tolerance}")]
    Stale {
        /// The timestamp header.
        header: String,
        /// The instant it names.
        at: Instant,
        /// Distance from now, in whole seconds.
        seconds: i128,
        /// The configured tolerance.
        tolerance: String,
    },
}

impl Signature {
    /// Checks `config`.
    ///
    /// # Errors
    /// The field at fault (`header`, `secret`, `timestamp_header`, `tolerance`) and why.
    pub fn compile(config: &SignatureConfig) -> Result<Signature, (String, String)> {
        let header_ok = |h: &str| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        };
        if !header_ok(&config.header) {
            return Err((
                "header".into(),
                format!("{:?} is not an HTTP header name", config.header),
            ));
        }
        if config.secret.is_empty() {
            return Err(("secret".into(), "must not be empty".into()));
        }
        let timestamp = match (&config.timestamp_header, &config.tolerance) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err((
                    "tolerance".into(),
                    "needs `timestamp_header` (the tolerance applies to the signed timestamp)"
                        .into(),
                ))
            }
            (Some(h), tolerance) => {
                if !header_ok(h) {
                    return Err((
                        "timestamp_header".into(),
                        format!("{h:?} is not an HTTP header name"),
                    ));
                }
                let t = IsoDuration::parse(tolerance.as_deref().unwrap_or(DEFAULT_TOLERANCE))
                    .map_err(|e| ("tolerance".to_owned(), e))?;
                Some((h.clone(), t))
            }
        };
        Ok(Signature {
            header: config.header.clone(),
            algorithm: config.algorithm,
            encoding: config.encoding,
            secret: config.secret.as_bytes().to_vec(),
            timestamp,
        })
    }

    /// The signature header's name.
    pub fn header(&self) -> &str {
        &self.header
    }

    /// The HMAC of `message` with the secret (raw bytes).
    pub fn mac(&self, message: &[u8]) -> Vec<u8> {
        match self.algorithm {
            Algorithm::HmacSha256 => {
                let mut m = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&self.secret)
                    .expect("HMAC takes a key of any length");
                m.update(message);
                m.finalize().into_bytes().to_vec()
            }
            Algorithm::HmacSha1 => {
                let mut m = <Hmac<sha1::Sha1> as KeyInit>::new_from_slice(&self.secret)
                    .expect("HMAC takes a key of any length");
                m.update(message);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    /// The header value a sender would put for `body` (and `timestamp`, as sent), in the
    /// configured encoding, without a prefix. For tests and documentation.
    pub fn sign(&self, body: &[u8], timestamp: Option<&str>) -> String {
        let mac = self.mac(&signed_message(body, timestamp));
        match self.encoding {
            Encoding::Hex => hex::encode(mac),
            Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(mac),
        }
    }

    /// Verifies a request: `header(name)` looks a header up (case-insensitively), `body` is the
    /// raw body, `now` the watcher's clock.
    ///
    /// # Errors
    /// [`SignatureError`]: missing, malformed, mismatched, or a timestamp outside the tolerance.
    pub fn verify<'h>(
        &self,
        header: impl Fn(&str) -> Option<&'h str>,
        body: &[u8],
        now: Instant,
    ) -> Result<(), SignatureError> {
        let sent = header(&self.header)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| SignatureError::Missing(self.header.clone()))?;
        let provided = self.decode(strip_prefix(sent))?;
        let timestamp = match &self.timestamp {
            None => None,
            Some((name, tolerance)) => {
                let text = header(name)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| SignatureError::Missing(name.clone()))?;
                let at = read_timestamp(text).map_err(|reason| SignatureError::Malformed {
                    header: name.clone(),
                    reason,
                })?;
                let distance = (now.as_nanos() - at.as_nanos()).abs();
                if distance > tolerance.as_nanos() {
                    return Err(SignatureError::Stale {
                        header: name.clone(),
                        at,
                        seconds: distance / 1_000_000_000,
                        tolerance: tolerance.to_string(),
                    });
                }
                Some(text)
            }
        };
        let expected = self.mac(&signed_message(body, timestamp));
        // Constant time: a timing difference must not reveal how much of a guess was right.
        if bool::from(expected.as_slice().ct_eq(provided.as_slice())) {
            Ok(())
        } else {
            Err(SignatureError::Mismatch(self.header.clone()))
        }
    }

    fn decode(&self, text: &str) -> Result<Vec<u8>, SignatureError> {
        let malformed = |reason: String| SignatureError::Malformed {
            header: self.header.clone(),
            reason,
        };
        match self.encoding {
            Encoding::Hex => {
                hex::decode(text).map_err(|e| malformed(format!("is not hexadecimal ({e})")))
            }
            Encoding::Base64 => base64::engine::general_purpose::STANDARD
                .decode(text)
                .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text))
                .map_err(|e| malformed(format!("is not base64 ({e})"))),
        }
    }
}

/// `{timestamp}.{body}` when signed with a timestamp, else the body.
fn signed_message(body: &[u8], timestamp: Option<&str>) -> Vec<u8> {
    match timestamp {
        None => body.to_vec(),
        Some(t) => {
            let mut m = Vec::with_capacity(t.len() + 1 + body.len());
            m.extend_from_slice(t.as_bytes());
            m.push(b'.');
            m.extend_from_slice(body);
            m
        }
    }
}

/// Drops a `name=` prefix (`sha256=…`, EasyPost's `hmac-sha256-hex=…`): a token of letters,
/// digits, `-`, `_` or `.` followed by `=` and more than padding. Base64's own `=` are trailing
/// padding, so they are never taken for a prefix.
fn strip_prefix(value: &str) -> &str {
    match value.split_once('=') {
        Some((name, rest))
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !rest.trim_end_matches('=').is_empty() =>
        {
            rest
        }
        _ => value,
    }
}

/// A signing timestamp: Unix seconds (digits) or RFC 3339.
fn read_timestamp(text: &str) -> Result<Instant, String> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let secs: i64 = text
            .parse()
            .map_err(|e| format!("{text:?} is not Unix seconds ({e})"))?;
        return Instant::from_nanos(i128::from(secs) * 1_000_000_000);
    }
    Instant::parse(text).map_err(|e| format!("not Unix seconds nor RFC 3339: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(toml_text: &str) -> Signature {
        let c: SignatureConfig = toml::from_str(toml_text).expect("toml");
        Signature::compile(&c).expect("valid")
    }

    fn now() -> Instant {
        Instant::parse("2026-09-10T20:15:00Z").unwrap()
    }

    #[test]
    fn rfc_4231_test_case_2_and_a_sha1_vector() {
        // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?".
        let s = sig("header = \"X-Sig\"\nalgorithm = \"hmac-sha256\"\nencoding = \"hex\"\nsecret = \"Jefe\"");
        assert_eq!(
            s.sign(b"what do ya want for nothing?", None),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // RFC 2202 §3 test case 2 (HMAC-SHA1), same key and data.
        let s = sig(
            "header = \"X-Sig\"\nalgorithm = \"hmac-sha1\"\nencoding = \"hex\"\nsecret = \"Jefe\"",
        );
        assert_eq!(
            s.sign(b"what do ya want for nothing?", None),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
    }

    #[test]
    fn good_bad_and_missing_signatures() {
        let s = sig("header = \"X-Hmac-Signature\"\nalgorithm = \"hmac-sha256\"\nencoding = \"hex\"\nsecret = \"shared-secret\"");
        let body = br#"{"a":1}"#;
        let good = s.sign(body, None);
        let check = |v: Option<&str>| {
            s.verify(
                |h| (h == "X-Hmac-Signature").then_some(v).flatten(),
                body,
                now(),
            )
        };
        assert_eq!(check(Some(&good)), Ok(()));
        assert_eq!(check(Some(&good.to_uppercase())), Ok(()));
        assert_eq!(check(Some(&format!("hmac-sha256-hex={good}"))), Ok(()));
        assert_eq!(check(Some(&format!("sha256={good}"))), Ok(()));
        let mut bad = good.clone();
        bad.replace_range(0..1, if good.starts_with('0') { "1" } else { "0" });
        assert_eq!(
            check(Some(&bad)),
            Err(SignatureError::Mismatch("X-Hmac-Signature".into()))
        );
        assert_eq!(
            check(Some(&good[..10])),
            Err(SignatureError::Mismatch("X-Hmac-Signature".into()))
        );
        assert!(matches!(
            check(Some("zz")),
            Err(SignatureError::Malformed { .. })
        ));
        assert_eq!(
            check(None),
            Err(SignatureError::Missing("X-Hmac-Signature".into()))
        );
        // Another body with the same signature.
        assert!(s
            .verify(|_| Some(good.as_str()), b"{\"a\":2}", now())
            .is_err());
    }

    #[test]
    fn base64_with_padding_is_not_taken_for_a_prefix() {
        let s = sig("header = \"aftership-hmac-sha256\"\nalgorithm = \"hmac-sha256\"\nencoding = \"base64\"\nsecret = \"k\"");
        let good = s.sign(b"{}", None);
        assert!(
            good.ends_with('='),
            "a SHA-256 MAC in base64 is padded: {good}"
        );
        assert_eq!(s.verify(|_| Some(good.as_str()), b"{}", now()), Ok(()));
        let prefixed = format!("sha256={good}");
        assert_eq!(s.verify(|_| Some(prefixed.as_str()), b"{}", now()), Ok(()));
    }

    #[test]
    fn a_timestamp_is_signed_and_must_be_within_the_tolerance() {
        let s = sig("header = \"X-Sig\"\nalgorithm = \"hmac-sha256\"\nencoding = \"hex\"\nsecret = \"s\"\ntimestamp_header = \"X-Timestamp\"\ntolerance = \"PT5M\"");
        let body = b"{}";
        let ts_ok = (now().as_nanos() / 1_000_000_000 - 299).to_string();
        let ts_stale = (now().as_nanos() / 1_000_000_000 - 301).to_string();
        let run = |sig: String, ts: String| {
            let headers = std::collections::HashMap::from([("X-Sig", sig), ("X-Timestamp", ts)]);
            s.verify(|name| headers.get(name).map(String::as_str), body, now())
        };
        assert_eq!(run(s.sign(body, Some(&ts_ok)), ts_ok.clone()), Ok(()));
        // Signed without the timestamp: refused.
        assert!(matches!(
            run(s.sign(body, None), ts_ok),
            Err(SignatureError::Mismatch(_))
        ));
        assert!(matches!(
            run(s.sign(body, Some(&ts_stale)), ts_stale.clone()),
            Err(SignatureError::Stale { seconds: 301, .. })
        ));
        // From the future, too.
        let future = "2026-09-10T20:21:00Z".to_owned();
        assert!(matches!(
            run(s.sign(body, Some(&future)), future),
            Err(SignatureError::Stale { .. })
        ));
        let rfc = "2026-09-10T22:14:00+02:00".to_owned();
        assert_eq!(run(s.sign(body, Some(&rfc)), rfc), Ok(()));
    }

    #[test]
    fn bad_configurations_name_the_field() {
        let bad = |t: &str| {
            let c: SignatureConfig = toml::from_str(t).expect("toml");
            Signature::compile(&c).unwrap_err().0
        };
        assert_eq!(bad("header = \"X Sig\"\nalgorithm = \"hmac-sha256\"\nencoding = \"hex\"\nsecret = \"s\""), "header");
        assert_eq!(
            bad("header = \"X\"\nalgorithm = \"hmac-sha256\"\nencoding = \"hex\"\nsecret = \"\""),
            "secret"
        );
        assert_eq!(bad("header = \"X\"\nalgorithm = \"hmac-sha256\"\nencoding = \"hex\"\nsecret = \"s\"\ntolerance = \"PT5M\""), "tolerance");
        assert_eq!(bad("header = \"X\"\nalgorithm = \"hmac-sha256\"\nencoding = \"hex\"\nsecret = \"s\"\ntimestamp_header = \"T\"\ntolerance = \"5 minutes\""), "tolerance");
        assert!(toml::from_str::<SignatureConfig>(
            "header = \"X\"\nalgorithm = \"md5\"\nencoding = \"hex\"\nsecret = \"s\""
        )
        .is_err());
    }
}
