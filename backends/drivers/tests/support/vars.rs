//! Variables for the credential chains' tests, handed to `Options::from_vars` instead of the
//! process environment, and the guard that no test lets a metadata request leave this machine.

use std::collections::HashMap;

/// A set of variables: only what a test names, and `HOME` pointing nowhere (no user's files).
#[derive(Clone, Debug)]
pub struct Vars(HashMap<String, String>);

impl Vars {
    pub fn new() -> Vars {
        let mut vars = Vars(HashMap::new());
        vars.0
            .insert("HOME".into(), "/nonexistent/sets3lock-test-home".into());
        vars
    }

    pub fn with(mut self, name: &str, value: &str) -> Vars {
        self.0.insert(name.into(), value.into());
        self
    }

    /// The lookup `from_vars` takes; refuses (panics) if a metadata endpoint could be reached
    /// off loopback.
    pub fn lookup(&self) -> impl Fn(&str) -> Option<String> + '_ {
        guard_metadata(&|n| self.0.get(n).cloned());
        |n: &str| self.0.get(n).cloned()
    }
}

fn loopback(url_or_host: &str) -> bool {
    let host = url_or_host
        .split("://")
        .last()
        .unwrap_or("")
        .split('/')
        .next()
        .unwrap_or("");
    let host = host
        .rsplit_once(':')
        .filter(|(h, p)| !h.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        .map(|(h, _)| h)
        .unwrap_or(host);
    matches!(host, "127.0.0.1" | "localhost" | "[::1]") || host.starts_with("127.")
}

/// Panics unless every cloud's metadata service is turned off or pointed at loopback in
/// `var`: AWS (`AWS_EC2_METADATA_DISABLED=true` or `AWS_EC2_METADATA_SERVICE_ENDPOINT`),
/// Azure (`AZURE_IMDS_DISABLED=true` or `AZURE_POD_IDENTITY_AUTHORITY_HOST`), Google
/// (`NO_GCE_CHECK=true` or `GCE_METADATA_HOST`).
pub fn guard_metadata(var: &dyn Fn(&str) -> Option<String>) {
    let off = |name: &str| var(name).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let at_loopback = |name: &str| var(name).is_some_and(|v| loopback(&v));
    // Endpoints that reach a link-local agent unless pointed at loopback.
    for name in [
        "IDENTITY_ENDPOINT",
        "GCE_METADATA_IP",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ] {
        assert!(
            var(name).is_none_or(|v| loopback(&v)),
            "refused: {name} points off this machine"
        );
    }
    assert!(
        var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_none(),
        "refused: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI reaches 169.254.170.2"
    );
    for (cloud, disabled, endpoint) in [
        (
            "AWS",
            "AWS_EC2_METADATA_DISABLED",
            "AWS_EC2_METADATA_SERVICE_ENDPOINT",
        ),
        (
            "Azure",
            "AZURE_IMDS_DISABLED",
            "AZURE_POD_IDENTITY_AUTHORITY_HOST",
        ),
        ("Google", "NO_GCE_CHECK", "GCE_METADATA_HOST"),
    ] {
        assert!(
            off(disabled) || at_loopback(endpoint),
            "refused: this test's variables would let {cloud}'s metadata request leave this machine; set {disabled}=true or point {endpoint} at 127.0.0.1"
        );
    }
}

/// Every variable that turns each cloud's metadata service off.
pub fn no_metadata() -> Vars {
    Vars::new()
        .with("AWS_EC2_METADATA_DISABLED", "true")
        .with("AZURE_IMDS_DISABLED", "true")
        .with("NO_GCE_CHECK", "true")
}

#[test]
fn the_guard_refuses_a_metadata_endpoint_off_loopback() {
    assert!(loopback("http://127.0.0.1:9"));
    assert!(loopback("127.0.0.1:9"));
    assert!(loopback("localhost"));
    assert!(!loopback("http://169.254.169.254"));
    assert!(!loopback("metadata.google.internal"));
    let refused = std::panic::catch_unwind(|| {
        let v = no_metadata().with("AWS_EC2_METADATA_DISABLED", "false");
        let _ = v.lookup();
    });
    assert!(refused.is_err());
    let _ = no_metadata().lookup();
}
