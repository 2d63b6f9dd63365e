//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>, "traceparent Header"): the trace a
//! push or a `POST /v1/facts` carried, kept with the expectations it raised, and sent again as
//! the parent of the lapse task's `SendMessage` (docs/howto/tracing.md).
//!
//! Pure parsing and formatting: the random ids a new trace or a new span needs are the caller's
//! (the runtime's [`TraceParent::root`] and [`TraceParent::child`] take them as arguments).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Header name (lower case, as HTTP/2 sends it; HTTP header names are case-insensitive).
pub const TRACEPARENT_HEADER: &str = "traceparent";

/// The header API Gateway, ALB and Lambda give the AWS X-Ray trace in:
/// `Root=1-{8 hex}-{24 hex};Parent={16 hex};Sampled={0|1}`.
pub const XRAY_HEADER: &str = "x-amzn-trace-id";

/// One `traceparent` value, version `00`: a 16-byte trace id, an 8-byte parent (span) id and the
/// trace flags (bit 0: `sampled`). Neither id is all zeros (the spec makes such a header
/// invalid).
///
/// Serialized as its header form (`00-{32 hex}-{16 hex}-{2 hex}`), the way stores keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: [u8; 16],
    parent_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// A context from its parts, `None` when either id is all zeros.
    pub fn new(trace_id: [u8; 16], parent_id: [u8; 8], flags: u8) -> Option<Self> {
        (trace_id != [0; 16] && parent_id != [0; 8]).then_some(TraceParent {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// A new trace (sampled) from random `trace_id` and `span_id`; an all-zero draw is replaced
    /// by 1 so that the answer is always valid.
    pub fn root(trace_id: u128, span_id: u64) -> Self {
        TraceParent {
            trace_id: trace_id.max(1).to_be_bytes(),
            parent_id: span_id.max(1).to_be_bytes(),
            flags: 1,
        }
    }

    /// The same trace and flags with `span_id` (random, one per outgoing request) as the parent
    /// id: what a caller sends on a request it makes within this trace.
    pub fn child(&self, span_id: u64) -> Self {
        TraceParent {
            parent_id: span_id.max(1).to_be_bytes(),
            ..*self
        }
    }

    /// Reads a `traceparent` header value (trace-context §3.2). `None` for anything the spec
    /// says to ignore: version `ff` or not two lowercase hex digits; version `00` not exactly
    /// 55 characters; a later version shorter than 55 characters or whose 56th is not `-`
    /// (only its first four fields are read); ids or flags not lowercase hex of the right
    /// length; an all-zero trace id or parent id. Leading and trailing blanks (OWS) are
    /// allowed.
    pub fn parse(header: &str) -> Option<Self> {
        let h = header.trim_matches([' ', '\t']);
        let version = u8::from_str_radix(hex_field(h.get(0..2)?)?, 16).ok()?;
        match version {
            0xff => return None,
            0 if h.len() != 55 => return None,
            _ if h.len() < 55 || (h.len() > 55 && h.as_bytes()[55] != b'-') => return None,
            _ => {}
        }
        let b = h.as_bytes();
        if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let trace_id = hex_bytes::<16>(h.get(3..35)?)?;
        let parent_id = hex_bytes::<8>(h.get(36..52)?)?;
        let [flags] = hex_bytes::<1>(h.get(53..55)?)?;
        Self::new(trace_id, parent_id, flags)
    }

    /// Reads an AWS X-Ray trace header (`X-Amzn-Trace-Id`, or Lambda's `_X_AMZN_TRACE_ID`):
    /// `Root=1-5759e988-bd862e3fe1be46a994272793` is trace id
    /// `5759e988bd862e3fe1be46a994272793` (the epoch seconds then the 96-bit random part, as
    /// AWS's W3C mapping gives it). `Parent` (16 hex) becomes the parent id when present and
    /// valid, `span_id` (random) otherwise; `Sampled=0` clears the sampled flag, any other or
    /// none sets it. `None` without a valid `Root` (version `1`, 8 and 24 hex digits).
    pub fn from_xray(header: &str, span_id: u64) -> Option<Self> {
        let mut root = None;
        let mut parent = None;
        let mut sampled = true;
        for part in header.split(';') {
            let Some((key, value)) = part.trim().split_once('=') else {
                continue;
            };
            match key {
                "Root" => {
                    let mut pieces = value.split('-');
                    let (Some("1"), Some(time), Some(random), None) =
                        (pieces.next(), pieces.next(), pieces.next(), pieces.next())
                    else {
                        return None;
                    };
                    if time.len() != 8 || random.len() != 24 {
                        return None;
                    }
                    root = Some(hex_bytes::<16>(&format!("{time}{random}"))?);
                }
                "Parent" => parent = hex_bytes::<8>(value),
                "Sampled" => sampled = value != "0",
                _ => {}
            }
        }
        let parent = parent
            .filter(|p| *p != [0; 8])
            .unwrap_or(span_id.max(1).to_be_bytes());
        Self::new(root?, parent, u8::from(sampled))
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The parent (span) id as 16 lowercase hex digits.
    pub fn parent_id_hex(&self) -> String {
        hex(&self.parent_id)
    }

    /// The trace id's 16 bytes.
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The parent id's 8 bytes.
    pub fn parent_id(&self) -> [u8; 8] {
        self.parent_id
    }

    /// The trace flags (bit 0: sampled).
    pub fn flags(&self) -> u8 {
        self.flags
    }
}

impl std::fmt::Display for TraceParent {
    /// The header value: `00-{trace id}-{parent id}-{flags}`, lowercase hex.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.parent_id),
            self.flags
        )
    }
}

impl Serialize for TraceParent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TraceParent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        TraceParent::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not a traceparent")))
    }
}

/// `Some` field of a stored record read leniently: a value that is not a valid `traceparent`
/// reads as `None` (the trace is an aid, never a reason to refuse a record).
///
/// # Errors
/// Only when the field is not a string or null.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TraceParent>, D::Error> {
    let text = Option::<String>::deserialize(d)?;
    Ok(text.as_deref().and_then(TraceParent::parse))
}

/// `text` when it is lowercase hex digits only.
fn hex_field(text: &str) -> Option<&str> {
    text.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        .then_some(text)
}

/// `N` bytes from exactly `2 * N` lowercase hex digits.
fn hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = hex_field(text)?;
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const S: &str = "00f067aa0ba902b7";

    #[test]
    fn the_specs_example_round_trips() {
        let header = format!("00-{T}-{S}-01");
        let tp = TraceParent::parse(&header).expect("valid");
        assert_eq!(tp.trace_id_hex(), T);
        assert_eq!(tp.parent_id_hex(), S);
        assert_eq!(tp.flags(), 1);
        assert_eq!(tp.to_string(), header);
        assert_eq!(serde_json::to_value(tp).unwrap(), serde_json::json!(header));
        let back: TraceParent = serde_json::from_value(serde_json::json!(header)).unwrap();
        assert_eq!(back, tp);
        assert_eq!(
            TraceParent::parse(&format!(" 00-{T}-{S}-00\t"))
                .unwrap()
                .flags(),
            0
        );
    }

    #[test]
    fn invalid_headers_are_ignored() {
        let zeros_t = "0".repeat(32);
        let zeros_s = "0".repeat(16);
        for bad in [
            format!("ff-{T}-{S}-01"),
            format!("00-{zeros_t}-{S}-01"),
            format!("00-{T}-{zeros_s}-01"),
            format!("00-{}-{S}-01", &T[..31]),
            format!("00-{T}0-{S}-01"),
            format!("00-{T}-{}-01", &S[..15]),
            format!("00-{T}-{S}-1"),
            format!("00-{T}-{S}-01-extra"),
            format!("00-{}-{S}-01", T.to_uppercase()),
            format!("0g-{T}-{S}-01"),
            format!("00_{T}-{S}-01"),
            format!("01-{T}-{S}-01x"),
            String::new(),
            "00".into(),
            "é".repeat(30),
        ] {
            assert_eq!(TraceParent::parse(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_four_fields() {
        let tp = TraceParent::parse(&format!("01-{T}-{S}-01-what-comes-next")).unwrap();
        assert_eq!(
            (tp.trace_id_hex(), tp.parent_id_hex()),
            (T.into(), S.into())
        );
        // Always written as version 00.
        assert_eq!(tp.to_string(), format!("00-{T}-{S}-01"));
        assert_eq!(TraceParent::parse(&format!("01-{T}-{S}-01")), Some(tp));
    }

    #[test]
    fn an_xray_root_maps_to_the_w3c_trace_id() {
        let tp = TraceParent::from_xray("Root=1-5759e988-bd862e3fe1be46a994272793", 7).unwrap();
        assert_eq!(tp.trace_id_hex(), "5759e988bd862e3fe1be46a994272793");
        assert_eq!(tp.parent_id_hex(), "0000000000000007");
        assert_eq!(tp.flags(), 1);
        let tp = TraceParent::from_xray(
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0",
            7,
        )
        .unwrap();
        assert_eq!(tp.parent_id_hex(), "53995c3f42cd8ad8");
        assert_eq!(tp.flags(), 0);
        for bad in [
            "Root=2-5759e988-bd862e3fe1be46a994272793",
            "Root=1-5759e98-bd862e3fe1be46a994272793",
            "Root=1-5759e988-bd862e3fe1be46a99427279",
            "Root=1-5759e988-bd862e3fe1be46a994272793-1",
            "Parent=53995c3f42cd8ad8",
            "Root=1-00000000-000000000000000000000000",
            "",
        ] {
            assert_eq!(TraceParent::from_xray(bad, 7), None, "{bad:?}");
        }
    }

    #[test]
    fn new_ids_are_never_zero() {
        let tp = TraceParent::root(0, 0);
        assert_eq!(tp.trace_id_hex(), format!("{}1", "0".repeat(31)));
        assert_eq!(tp.child(0).parent_id_hex(), format!("{}1", "0".repeat(15)));
        let child = TraceParent::root(u128::MAX, 5).child(9);
        assert_eq!(child.trace_id_hex(), "f".repeat(32));
        assert_eq!(child.parent_id_hex(), "0000000000000009");
        assert_eq!(TraceParent::new([0; 16], [1; 8], 1), None);
    }

    #[test]
    fn a_stored_invalid_value_reads_as_none() {
        #[derive(Deserialize)]
        struct R {
            #[serde(default, deserialize_with = "lenient")]
            trace: Option<TraceParent>,
        }
        let r: R = serde_json::from_str(r#"{"trace":"ff-nonsense"}"#).unwrap();
        assert_eq!(r.trace, None);
        let r: R = serde_json::from_str("{}").unwrap();
        assert_eq!(r.trace, None);
    }
}
