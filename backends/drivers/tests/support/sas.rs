//! A service SAS for an Azure container, minted the way the Azure documentation lays out its
//! string to sign (version 2020-12-06 and later): what an operator hands out instead of the
//! account key, with only the permissions given.

use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};

/// A container SAS (`sr=c`) with `permissions` (`r`, `rw`, `rwd`, ...), valid from five
/// minutes ago for ten minutes, signed with the account key `key_b64`.
pub fn service_sas(account: &str, key_b64: &str, container: &str, permissions: &str) -> String {
    let format = |t: jiff::Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let now = jiff::Timestamp::now();
    let start = format(now - jiff::SignedDuration::from_mins(5));
    let expiry = format(now + jiff::SignedDuration::from_mins(10));
    let version = "2023-11-03";
    let resource = format!("/blob/{account}/{container}");
    // sp, st, se, resource, si, sip, spr, sv, sr, snapshot, ses, rscc, rscd, rsce, rscl, rsct
    let fields = [
        permissions,
        &start,
        &expiry,
        &resource,
        "",
        "",
        "http,https",
        version,
        "c",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
    ];
    let key = base64::engine::general_purpose::STANDARD
        .decode(key_b64)
        .expect("a base64 key");
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).expect("any key length");
    mac.update(fields.join("\n").as_bytes());
    let sig = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("sv", version)
        .append_pair("st", &start)
        .append_pair("se", &expiry)
        .append_pair("sr", "c")
        .append_pair("sp", permissions)
        .append_pair("spr", "http,https")
        .append_pair("sig", &sig);
    query.finish()
}
