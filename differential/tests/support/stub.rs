//! The token services both resolvers talk to, on loopback: STS (`AssumeRole`,
//! `AssumeRoleWithWebIdentity`), the SSO portal (`GetRoleCredentials`) and SSO-OIDC
//! (`CreateToken`). Each hands out credentials whose access key spells how they were asked
//! for, so that two resolvers that took different paths get different keys:
//!
//! - `ROLE.<role>[.EXT.<external id>].IN.<signing region>.BY.<caller's key>` (AssumeRole);
//! - `WEB.<role>.TOKEN.<web identity token>` (AssumeRoleWithWebIdentity);
//! - `SSO.<account>.<role>.WITH.<bearer token>` (the portal);
//! - SSO-OIDC refreshes a token into `refreshed-<refresh token>`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

/// A running stub: `http://127.0.0.1:PORT`.
pub struct Stub {
    pub url: String,
}

impl Stub {
    pub fn start() -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || serve(stream));
            }
        });
        Stub { url }
    }
}

struct Request {
    method: String,
    path: String,
    query: HashMap<String, String>,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

fn read(stream: &TcpStream) -> Option<Request> {
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut start = String::new();
    reader.read_line(&mut start).ok()?;
    let mut parts = start.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(Request {
        method,
        path: path.to_owned(),
        query: url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect(),
        headers,
        body,
    })
}

fn serve(mut stream: TcpStream) {
    let Some(request) = read(&stream) else { return };
    let (status, content_type, body) = answer(&request);
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A key made only of characters every SigV4 scope and header takes.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' => c,
            _ => '_',
        })
        .collect()
}

fn in_an_hour() -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(1))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn sts_answer(action: &str, key: &str) -> String {
    format!(
        "<{action}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><{action}Result><Credentials><AccessKeyId>{key}</AccessKeyId><SecretAccessKey>secret-of-{key}</SecretAccessKey><SessionToken>session-of-{key}</SessionToken><Expiration>{}</Expiration></Credentials><AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/x/y</Arn><AssumedRoleId>AROAEXAMPLE:y</AssumedRoleId></AssumedRoleUser></{action}Result><ResponseMetadata><RequestId>00000000-0000-0000-0000-000000000000</RequestId></ResponseMetadata></{action}Response>",
        in_an_hour()
    )
}

fn answer(r: &Request) -> (u16, &'static str, String) {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&r.body).into_owned().collect();
    let role = |form: &HashMap<String, String>| {
        let arn = form.get("RoleArn").cloned().unwrap_or_default();
        clean(arn.rsplit('/').next().unwrap_or(&arn))
    };
    match (
        r.method.as_str(),
        r.path.as_str(),
        form.get("Action").map(String::as_str),
    ) {
        ("POST", "/", Some("AssumeRole")) => {
            // `Credential=KEY/DATE/REGION/sts/aws4_request`.
            let auth = r.headers.get("authorization").cloned().unwrap_or_default();
            let scope = auth
                .split("Credential=")
                .nth(1)
                .and_then(|s| s.split(',').next())
                .unwrap_or("");
            let mut scope = scope.split('/');
            let caller = scope.next().unwrap_or("").to_owned();
            let region = scope.nth(1).unwrap_or("").to_owned();
            let external = form
                .get("ExternalId")
                .map(|e| format!(".EXT.{}", clean(e)))
                .unwrap_or_default();
            let key = format!("ROLE.{}{external}.IN.{region}.BY.{caller}", role(&form));
            (200, "text/xml", sts_answer("AssumeRole", &key))
        }
        ("POST", "/", Some("AssumeRoleWithWebIdentity")) => {
            let token = clean(
                form.get("WebIdentityToken")
                    .map(String::as_str)
                    .unwrap_or(""),
            );
            let key = format!("WEB.{}.TOKEN.{token}", role(&form));
            (
                200,
                "text/xml",
                sts_answer("AssumeRoleWithWebIdentity", &key),
            )
        }
        ("GET", "/federation/credentials", _) => {
            let q = |n: &str| clean(r.query.get(n).map(String::as_str).unwrap_or(""));
            let bearer = clean(
                r.headers
                    .get("x-amz-sso_bearer_token")
                    .map(String::as_str)
                    .unwrap_or(""),
            );
            let key = format!("SSO.{}.{}.WITH.{bearer}", q("account_id"), q("role_name"));
            let expires = jiff::Timestamp::now().as_millisecond() + 3_600_000;
            let body = format!(
                r#"{{"roleCredentials":{{"accessKeyId":"{key}","secretAccessKey":"secret-of-{key}","sessionToken":"session-of-{key}","expiration":{expires}}}}}"#
            );
            (200, "application/json", body)
        }
        ("POST", "/token", _) => {
            let json: serde_json::Value =
                serde_json::from_slice(&r.body).unwrap_or(serde_json::Value::Null);
            let refresh = json["refreshToken"].as_str().unwrap_or("");
            let body = format!(
                r#"{{"accessToken":"refreshed-{refresh}","tokenType":"Bearer","expiresIn":3600,"refreshToken":"next-{refresh}"}}"#
            );
            (200, "application/json", body)
        }
        _ => (
            400,
            "text/plain",
            format!("the stub does not answer {} {}", r.method, r.path),
        ),
    }
}
