//! How the blocking client finds a host's address: an address written in the URI is used as
//! it is; a name is looked up on the process's one lookup thread, and its answer kept 30 s
//! ([`lookup`](crate::driver::lookup)).
//!
//! ureq resolves the URI before every request, pooled connection or not, and its default
//! resolver runs the lookup on a new thread whenever the request has a time limit (ours always
//! do), so that a hung DNS server cannot hold the request past it: a thread per request (about
//! 0.1 ms a request here, a third of the driver's whole cost on a fast store). For an address
//! such as `127.0.0.1:8333` there is nothing to look up; a name is answered from the cache, or
//! by the shared lookup thread within the request's time limit.
//!
//! ureq's resolver trait is in its `unversioned` module, which may change in a minor release:
//! the crate's `Cargo.toml` pins ureq's minor version for it.

use crate::driver::lookup::{Failed, Lookups};
use std::net::{IpAddr, SocketAddr};
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// Addresses written in the URI as they are, names through the shared lookup thread and its
/// cache; ureq's default resolver only to explain a URI without a scheme or host.
#[derive(Debug, Default)]
pub(crate) struct Resolve(DefaultResolver);

impl Resolver for Resolve {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let found = match written_address(uri) {
            Some(address) => vec![address],
            None => {
                let (Some(scheme), Some(authority)) = (uri.scheme(), uri.authority()) else {
                    // The default resolver says what is wrong with the URI.
                    return self.0.resolve(uri, config, timeout);
                };
                let Some(name) = DefaultResolver::host_and_port(scheme, authority) else {
                    return self.0.resolve(uri, config, timeout);
                };
                let limit = (!timeout.after.is_not_happening()).then(|| *timeout.after);
                match Lookups::shared().resolve(&name, limit) {
                    Ok(found) => found,
                    Err(Failed::TimedOut) => return Err(ureq::Error::Timeout(timeout.reason)),
                    Err(Failed::Io(e)) => return Err(ureq::Error::Io(e)),
                }
            }
        };
        let mut addresses = self.empty();
        // The agent's address family, as the default resolver keeps it; at most 16.
        let family = config.ip_family();
        for wanted in family.keep_wanted(found.into_iter()).take(16) {
            addresses.push(wanted);
        }
        match addresses.is_empty() {
            true => Err(ureq::Error::HostNotFound),
            false => Ok(addresses),
        }
    }
}

/// The socket address `uri` names without a lookup: its host an IP address (IPv6 in
/// brackets), its port given or the scheme's default.
fn written_address(uri: &Uri) -> Option<SocketAddr> {
    let host = uri.host()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let ip: IpAddr = host.parse().ok()?;
    let port = match (uri.port_u16(), uri.scheme_str()) {
        (Some(port), _) => port,
        (None, Some("http")) => 80,
        (None, Some("https")) => 443,
        // Another scheme (a proxy's): left to the default resolver, which knows its ports.
        (None, _) => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    fn address(uri: &str) -> Option<SocketAddr> {
        written_address(&uri.parse().expect("uri"))
    }

    #[test]
    fn an_address_in_the_uri_is_used_as_written() {
        let v4 = "127.0.0.1:8333".parse().ok();
        assert_eq!(address("http://127.0.0.1:8333/b/k?x=1"), v4);
        assert_eq!(address("http://[::1]:10000/a"), "[::1]:10000".parse().ok());
        assert_eq!(address("https://10.0.0.7/b"), "10.0.0.7:443".parse().ok());
        assert_eq!(address("http://10.0.0.7/b"), "10.0.0.7:80".parse().ok());
    }

    #[test]
    fn a_name_is_left_to_the_lookup() {
        assert_eq!(address("https://s3.eu-west-1.amazonaws.com/b/k"), None);
        assert_eq!(address("http://localhost:8333/b/k"), None);
        assert_eq!(address("socks5://127.0.0.1"), None);
    }

    #[test]
    fn an_address_in_the_uri_needs_no_time_to_resolve() {
        // With no time left, ureq's default resolver gives up: it would look the address up on
        // a thread of its own and wait for it. Written in the URI, it needs no lookup.
        let no_time = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::Exact(Duration::ZERO),
            reason: ureq::Timeout::Global,
            per_read: None,
            per_write: None,
        };
        let uri: Uri = "http://127.0.0.1:8333/b/k".parse().expect("uri");
        let config = Config::default();
        let found = Resolve::default().resolve(&uri, &config, no_time);
        let ports = found.map(|a| a.iter().map(|s| s.port()).collect::<Vec<_>>());
        assert_eq!(ports.ok(), Some(vec![8333]));
    }

    #[test]
    fn both_kinds_resolve() {
        let config = Config::default();
        let resolve = |uri: &str| {
            let uri: Uri = uri.parse().expect("uri");
            let found = Resolve::default().resolve(&uri, &config, NextTimeout::default());
            found.map(|a| a.iter().map(|s| s.port()).collect::<Vec<_>>())
        };
        assert_eq!(resolve("http://127.0.0.1:8333/b/k").ok(), Some(vec![8333]));
        // `localhost` through the system's lookup (no packet leaves the machine).
        let local = resolve("http://localhost:8333/b/k").expect("localhost resolves");
        assert!(
            !local.is_empty() && local.iter().all(|p| *p == 8333),
            "{local:?}"
        );
    }
}
