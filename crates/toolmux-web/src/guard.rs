//! The SSRF guard: which addresses `url_fetch` may connect to.
//!
//! A model that can fetch a URL can be talked (by a page it read, say) into fetching
//! `http://169.254.169.254/latest/meta-data/` or an admin page on the local network. So every
//! address a request would reach is checked, not the name in the URL: a name is checked after it
//! is resolved ([`GuardedResolver`], the only resolver the client has), an IP literal before
//! anything is sent ([`check_url`]), and the same two checks run again on every redirect
//! target (the client's redirect policy calls [`check_url`]; the new hop's name goes through
//! the resolver). Checking the resolved address also defeats a public-looking name whose DNS
//! answers a private address, and because the client connects to exactly the addresses the
//! resolver returned, a second answer (DNS rebinding) cannot slip in between check and
//! connect. The client has no proxy, which would resolve names out of the guard's sight.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Hosts and networks the guard lets through although their addresses are refused by
/// default (`urlFetch.allow`): a host name (exactly, any of its addresses), an IP address, or
/// a CIDR network.
#[derive(Clone, Debug, Default)]
pub struct Allowlist {
    hosts: Vec<String>,
    nets: Vec<IpNet>,
}

impl Allowlist {
    /// Parses the entries of `urlFetch.allow`: `10.0.0.0/8`, `fd00::/8`, `10.0.0.5`,
    /// `intranet.example.com`.
    pub fn parse(entries: &[String]) -> Result<Self, crate::WebError> {
        let mut allow = Self::default();
        for entry in entries {
            let entry = entry.trim();
            if let Ok(net) = entry.parse::<IpNet>() {
                allow.nets.push(net);
            } else if let Ok(ip) = entry.trim_matches(['[', ']']).parse::<IpAddr>() {
                allow.nets.push(IpNet::from(ip));
            } else if !entry.is_empty()
                && !entry.contains('/')
                && entry
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            {
                allow.hosts.push(host_key(entry));
            } else {
                return Err(crate::WebError::Allowlist(entry.to_string()));
            }
        }
        Ok(allow)
    }

    fn allows_host(&self, host: &str) -> bool {
        let host = host_key(host);
        self.hosts.contains(&host)
    }

    fn allows_ip(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|net| net.contains(&ip))
    }
}

/// Host names compare case-insensitively and without a final dot.
fn host_key(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Why the guard stopped a request. Its message says what was refused and how to allow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// An address of a kind refused by default.
    Address {
        /// The host name that resolved to it, when the URL had a name.
        host: Option<String>,
        /// The address.
        ip: IpAddr,
        /// What kind of address it is (`a private address`).
        kind: &'static str,
    },
    /// A URL (the first or a redirect target) that is not http or https.
    Scheme(String),
    /// A URL without a host.
    NoHost(String),
    /// More redirects than `urlFetch.maxRedirects`.
    TooManyRedirects(usize),
    /// The machine's own addresses could not be listed, so an address could not be checked
    /// against them (the guard fails closed).
    OwnAddresses {
        /// The address being checked.
        ip: IpAddr,
        /// Why listing failed.
        reason: String,
    },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Address { host, ip, kind } => {
                match host {
                    Some(host) => write!(f, "refused: {host} resolves to {ip}, {kind}")?,
                    None => write!(f, "refused: {ip} is {kind}")?,
                }
                let entry = host.clone().unwrap_or_else(|| ip.to_string());
                write!(
                    f,
                    "; url_fetch does not reach loopback, private, link-local, cloud \
                     metadata, documentation or this machine's own addresses unless allowed: \
                     add \"{entry}\" to `urlFetch.allow` in the configuration to allow it"
                )
            }
            Refused::Scheme(url) => write!(f, "refused: {url} is not an http or https URL"),
            Refused::NoHost(url) => write!(f, "refused: {url} has no host"),
            Refused::TooManyRedirects(max) => write!(
                f,
                "refused: more than {max} redirects (`urlFetch.maxRedirects`)"
            ),
            Refused::OwnAddresses { ip, reason } => write!(
                f,
                "refused: cannot list this machine's own addresses to check {ip} against them: \
                 {reason}"
            ),
        }
    }
}

impl std::error::Error for Refused {}

/// The cloud metadata endpoints: AWS, GCP, Azure, OpenStack and DigitalOcean
/// (169.254.169.254), AWS over IPv6 (fd00:ec2::254), ECS task metadata (169.254.170.2),
/// Alibaba (100.100.100.200) and Oracle (192.0.0.192). Named apart so the message says what
/// they are; every one of them is in a refused range anyway.
const METADATA: [IpAddr; 5] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V4(Ipv4Addr::new(192, 0, 0, 192)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)),
];

const METADATA_KIND: &str = "a cloud metadata address";
const UNSPECIFIED: &str = "the unspecified address";
const LOOPBACK: &str = "a loopback address";
const DOCUMENTATION: &str = "a documentation (TEST-NET) address";
const BENCHMARKING: &str = "a reserved (benchmarking) address";
const OWN: &str = "an address of this machine (one of its network interfaces)";

/// What kind of refused address `ip` is by its range alone, or `None` for an ordinary (public)
/// address. The guard also refuses this machine's own addresses ([`own_addresses`]), whatever
/// their range.
pub fn refused_kind(ip: IpAddr) -> Option<&'static str> {
    if METADATA.contains(&ip) {
        return Some(METADATA_KIND);
    }
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => {
            // An IPv4 address wrapped in IPv6 (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`,
            // 6to4 `2002::/16`) reaches the IPv4 address: judge that one.
            if let Some(v4) = carried_v4(v6) {
                return refused_kind(IpAddr::V4(v4));
            }
            let s = v6.segments();
            if (s[0] == 0x2001 && s[1] == 0x0db8) || (s[0] == 0x3fff && s[1] & 0xf000 == 0) {
                // 2001:db8::/32 and 3fff::/20 (RFC 3849, RFC 9637).
                return Some(DOCUMENTATION);
            }
            if s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0 {
                return Some(BENCHMARKING);
            }
            if v6.is_unspecified() {
                Some(UNSPECIFIED)
            } else if v6.is_loopback() {
                Some(LOOPBACK)
            } else if v6.is_unique_local() {
                Some("a private (unique local) address")
            } else if v6.is_unicast_link_local() || (s[0] & 0xffc0) == 0xfec0 {
                Some("a link-local address")
            } else if v6.is_multicast() {
                Some("a multicast address")
            } else if s[0..6] == [0, 0, 0, 0, 0, 0] {
                // IPv4-compatible (`::a.b.c.d`), deprecated and never public.
                Some("a reserved address")
            } else {
                None
            }
        }
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if a == 0 {
        Some(UNSPECIFIED)
    } else if ip.is_loopback() {
        Some(LOOPBACK)
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if a == 100 && (b & 0xc0) == 64 {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if ip.is_broadcast() || a >= 240 {
        Some("a reserved address")
    } else if a == 192 && b == 0 && c == 0 {
        Some("a reserved (IETF protocol) address")
    } else if a == 198 && (b & 0xfe) == 18 {
        Some(BENCHMARKING)
    } else if (a, b, c) == (192, 0, 2) || (a, b, c) == (198, 51, 100) || (a, b, c) == (203, 0, 113)
    {
        // TEST-NET-1, -2 and -3 (RFC 5737): never on the internet, so a machine using one
        // is using it for itself.
        Some(DOCUMENTATION)
    } else {
        None
    }
}

/// The addresses of this machine's network interfaces (`getifaddrs`), read again on every
/// call: an interface can come up or change address while toolmux runs, and reading the list
/// is one netlink round trip, nothing next to the fetch it guards.
#[cfg(unix)]
pub fn own_addresses() -> std::io::Result<Vec<IpAddr>> {
    let interfaces = nix::ifaddrs::getifaddrs().map_err(std::io::Error::from)?;
    Ok(interfaces
        .filter_map(|interface| {
            let address = interface.address?;
            if let Some(v4) = address.as_sockaddr_in() {
                Some(IpAddr::V4(v4.ip()))
            } else {
                address.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
            }
        })
        .collect())
}

/// Elsewhere there is no `getifaddrs`: only the ranges are refused.
#[cfg(not(unix))]
pub fn own_addresses() -> std::io::Result<Vec<IpAddr>> {
    Ok(Vec::new())
}

/// The IPv4 address an IPv6 address carries and reaches (mapped, NAT64, 6to4), as
/// [`refused_kind`] reads them.
fn carried_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if s[0] == 0x0064 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        Some(v4(s[6], s[7]))
    } else if s[0] == 0x2002 {
        Some(v4(s[1], s[2]))
    } else {
        None
    }
}

/// What kind of refused address `ip` is, this machine's own addresses `own` included.
/// Loopback, unspecified and metadata keep their names (loopback is an interface too); any
/// other own address is named as one, whatever its range, so the message says what it is.
fn refused_kind_here(ip: IpAddr, own: &[IpAddr]) -> Option<&'static str> {
    let by_range = refused_kind(ip);
    if matches!(by_range, Some(METADATA_KIND | UNSPECIFIED | LOOPBACK)) {
        return by_range;
    }
    let carried = match ip {
        IpAddr::V6(v6) => carried_v4(v6).map(IpAddr::V4),
        IpAddr::V4(_) => None,
    };
    if own.contains(&ip) || carried.is_some_and(|v4| own.contains(&v4)) {
        return Some(OWN);
    }
    by_range
}

/// Checks one address against the defaults, this machine's own addresses and the allowlist.
fn check_ip(allow: &Allowlist, host: Option<&str>, ip: IpAddr) -> Result<(), Refused> {
    if allow.allows_ip(ip) {
        return Ok(());
    }
    let own = own_addresses().map_err(|e| Refused::OwnAddresses {
        ip,
        reason: e.to_string(),
    })?;
    match refused_kind_here(ip, &own) {
        Some(kind) => Err(Refused::Address {
            host: host.map(str::to_string),
            ip,
            kind,
        }),
        None => Ok(()),
    }
}

/// Checks what can be checked of a URL before connecting: its scheme, and its host when it is
/// an IP literal (the client connects to a literal without asking the resolver). A name is
/// checked by [`GuardedResolver`] once it resolves.
pub fn check_url(allow: &Allowlist, url: &Url) -> Result<(), Refused> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refused::Scheme(url.to_string()));
    }
    match url.host() {
        None => Err(Refused::NoHost(url.to_string())),
        Some(url::Host::Ipv4(ip)) => check_ip(allow, None, IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => check_ip(allow, None, IpAddr::V6(ip)),
        Some(url::Host::Domain(_)) => Ok(()),
    }
}

/// The client's only resolver: the system's (`getaddrinfo` on the blocking pool, as reqwest's
/// own default), with every refused address dropped; a name left with none is refused with
/// the first address that was. A host in the allowlist by name keeps all its addresses.
#[derive(Clone, Debug)]
pub struct GuardedResolver {
    pub(crate) allow: Arc<Allowlist>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = Arc::clone(&self.allow);
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if allow.allows_host(&host) {
                return Ok(Box::new(found.into_iter()) as Addrs);
            }
            let mut refused = None;
            let kept: Vec<SocketAddr> = found
                .into_iter()
                .filter(|addr| match check_ip(&allow, Some(&host), addr.ip()) {
                    Ok(()) => true,
                    Err(e) => {
                        refused.get_or_insert(e);
                        false
                    }
                })
                .collect();
            match refused {
                Some(refused) if kept.is_empty() => Err(Box::new(refused) as _),
                _ => Ok(Box::new(kept.into_iter()) as Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(ip: &str) -> Option<&'static str> {
        refused_kind(ip.parse().expect("an address"))
    }

    #[test]
    fn every_internal_range_is_refused_and_public_addresses_are_not() {
        for ip in [
            "127.0.0.1",
            "127.0.0.2",
            "10.0.0.5",
            "172.16.3.4",
            "192.168.1.1",
            "169.254.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:5",
            "2002:a00:5::1",
            // Documentation and benchmarking ranges (D23).
            "192.0.2.2",
            "198.51.100.7",
            "203.0.113.255",
            "198.18.0.1",
            "198.19.255.254",
            "2001:db8::1",
            "2001:db8:ffff::1",
            "3fff:fff::1",
            "2001:2::1",
            "::ffff:192.0.2.2",
        ] {
            assert!(kind(ip).is_some(), "{ip} should be refused");
        }
        for ip in [
            "93.184.215.14",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "192.0.3.1",
            "198.51.101.1",
            "203.0.114.1",
            "198.20.0.1",
            "2001:db9::1",
            "3fff:1000::1",
        ] {
            assert_eq!(kind(ip), None, "{ip} is public");
        }
        assert_eq!(kind("169.254.169.254"), Some("a cloud metadata address"));
        assert_eq!(kind("fd00:ec2::254"), Some("a cloud metadata address"));
    }

    #[test]
    fn this_machines_own_addresses_are_named_as_such_except_loopback() {
        let own = own_addresses().expect("the interfaces");
        assert!(!own.is_empty());
        for ip in &own {
            let kind = refused_kind_here(*ip, &own).expect("refused");
            if ip.is_loopback() {
                assert_eq!(kind, LOOPBACK);
            } else {
                assert_eq!(kind, OWN, "{ip}");
            }
        }
        // A public address becomes refused when an interface has it, also wrapped in IPv6.
        let public: IpAddr = "93.184.215.14".parse().expect("ip");
        assert_eq!(refused_kind_here(public, &[]), None);
        assert_eq!(refused_kind_here(public, &[public]), Some(OWN));
        let mapped: IpAddr = "::ffff:93.184.215.14".parse().expect("ip");
        assert_eq!(refused_kind_here(mapped, &[public]), Some(OWN));
    }

    #[test]
    fn the_allowlist_takes_networks_addresses_and_names() {
        let allow = Allowlist::parse(&[
            "10.0.0.0/8".into(),
            "127.0.0.1".into(),
            "[::1]".into(),
            "Intranet.Example.".into(),
        ])
        .expect("parses");
        assert!(allow.allows_ip("10.9.8.7".parse().expect("ip")));
        assert!(allow.allows_ip("127.0.0.1".parse().expect("ip")));
        assert!(!allow.allows_ip("127.0.0.2".parse().expect("ip")));
        assert!(allow.allows_ip("::1".parse().expect("ip")));
        assert!(allow.allows_host("INTRANET.example."));
        assert!(!allow.allows_host("intranet.example.com"));
        assert!(Allowlist::parse(&["http://x/".into()]).is_err());
    }

    #[test]
    fn a_refusal_says_what_and_how_to_allow_it() {
        let message = check_url(
            &Allowlist::default(),
            &Url::parse("http://10.0.0.5/admin").expect("url"),
        )
        .expect_err("refused")
        .to_string();
        assert!(
            message.starts_with("refused: 10.0.0.5 is a private address"),
            "{message}"
        );
        assert!(message.contains("urlFetch.allow"), "{message}");
        let scheme = check_url(
            &Allowlist::default(),
            &Url::parse("file:///etc/passwd").expect("url"),
        );
        assert!(matches!(scheme, Err(Refused::Scheme(_))));
    }
}
