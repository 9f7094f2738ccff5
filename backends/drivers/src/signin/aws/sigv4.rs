//! SigV4 for one kind of request: a form POST to STS (`AssumeRole`), signed in its headers.
//! (The lock's own S3 requests are presigned by the wire layer, `sets3lock_wire::s3`; this is the
//! token service's.)

use crate::AwsCredentials;
use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::{Digest as _, Sha256};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mac(key: &[u8], data: &str) -> Vec<u8> {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mut m) => {
            m.update(data.as_bytes());
            m.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

/// The headers that sign a `POST` of `body` (a form) to `host` + `path` for `service` in
/// `region` at `time`: `x-amz-date`, `x-amz-security-token` for temporary credentials, and
/// `authorization`. The request must also carry `host` and the form's `content-type` as given
/// here.
pub(crate) fn sign_form_post(
    credentials: &AwsCredentials,
    host: &str,
    path: &str,
    body: &str,
    service: &str,
    region: &str,
    time: jiff::Timestamp,
) -> Vec<(&'static str, String)> {
    let date_time = time.strftime("%Y%m%dT%H%M%SZ").to_string();
    let date = &date_time[..8];
    let content_type = "application/x-www-form-urlencoded";
    let mut headers = vec![
        ("content-type", content_type.to_owned()),
        ("host", host.to_owned()),
        ("x-amz-date", date_time.clone()),
    ];
    if let Some(token) = credentials.token() {
        headers.push(("x-amz-security-token", token.to_owned()));
    }
    let canonical_headers: String = headers
        .iter()
        .map(|(n, v)| format!("{n}:{}\n", v.trim()))
        .collect();
    let signed_headers = headers
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(";");
    let canonical_request = format!(
        "POST\n{path}\n\n{canonical_headers}\n{signed_headers}\n{}",
        hex(&Sha256::digest(body.as_bytes()))
    );
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{date_time}\n{scope}\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let k_date = mac(format!("AWS4{}", credentials.secret()).as_bytes(), date);
    let k_region = mac(&k_date, region);
    let k_service = mac(&k_region, service);
    let k_signing = mac(&k_service, "aws4_request");
    let signature = hex(&mac(&k_signing, &string_to_sign));
    let authorization = format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
        credentials.key()
    );
    headers.retain(|(n, _)| *n != "host");
    headers.push(("authorization", authorization));
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's published example of a signed request (the "post-x-www-form-urlencoded" case of
    /// the SigV4 test suite: IAM's example credentials, 2015-08-30T12:36:00Z, us-east-1,
    /// service "service", host example.amazonaws.com, body Param1=value1).
    #[test]
    fn the_signature_matches_aws_s_test_suite() {
        let credentials =
            AwsCredentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
        let time: jiff::Timestamp = "2015-08-30T12:36:00Z".parse().expect("time");
        let headers = sign_form_post(
            &credentials,
            "example.amazonaws.com",
            "/",
            "Param1=value1",
            "service",
            "us-east-1",
            time,
        );
        let authorization = &headers
            .iter()
            .find(|(n, _)| *n == "authorization")
            .expect("signed")
            .1;
        // Our canonical headers are content-type;host;x-amz-date (the suite's case signs
        // content-type, host and x-amz-date too), so the suite's signature applies.
        assert_eq!(
            authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"
        );
    }
}
