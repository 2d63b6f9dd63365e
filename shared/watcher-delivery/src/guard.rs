//! Outbound address policy for endpoints taken from fetched cards (serve.md "Outbound"): such an
//! endpoint must not be, or resolve to, a loopback, private, link-local or otherwise non-public
//! address. The check runs in the resolver, on the addresses actually connected to, so a name that
//! resolves differently between a check and the connection cannot slip through.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The host of a `public_only` endpoint is, or resolves to, a non-public address.
#[derive(Debug, thiserror::Error)]
#[error("{host} is or resolves to the non-public address {addr}; endpoints from agent cards must be public (set allow_private_endpoints = true for local use)")]
pub(crate) struct NonPublicAddress {
    pub(crate) host: String,
    pub(crate) addr: IpAddr,
}

/// Whether `ip` is a globally routable unicast address: the one classification of the watcher's
/// outbound policy, used by the resolver at connection time and by the configuration's check of
/// card endpoints at start (`watcher_host::agents`).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240) // reserved
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0064 && s[1] == 0xff9b) // NAT64: reaches IPv4 space we cannot see
        || (s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0 && s[4] == 0 && s[5] == 0))
    // IPv4-compatible
}

/// Checks a URL host that is an IP literal (the resolver is not consulted for those).
pub(crate) fn check_literal_host(url: &reqwest::Url) -> Result<(), NonPublicAddress> {
    let Some(host) = url.host_str() else {
        return Ok(());
    };
    // IPv6 literals come back bracketed; a name does not parse as an address.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let Ok(ip) = bare.parse::<IpAddr>() else {
        return Ok(());
    };
    if is_public(ip) {
        Ok(())
    } else {
        Err(NonPublicAddress {
            host: ip.to_string(),
            addr: ip,
        })
    }
}

/// A resolver that refuses names resolving to any non-public address.
#[derive(Debug, Default)]
pub(crate) struct PublicOnlyResolver;

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
                return Err(Box::new(NonPublicAddress {
                    host,
                    addr: bad.ip(),
                })
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn literal_hosts_are_checked() {
        let bad = reqwest::Url::parse("http://169.254.169.254/latest").unwrap();
        assert!(check_literal_host(&bad).is_err());
        let bad6 = reqwest::Url::parse("http://[::1]:8080/").unwrap();
        assert!(check_literal_host(&bad6).is_err());
        let name = reqwest::Url::parse("https://agent.example/").unwrap();
        assert!(check_literal_host(&name).is_ok());
    }
}
