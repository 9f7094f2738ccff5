//! `sets3lock status`: who holds a lock (like perp's `runlock -c`).

use crate::exit_codes::{CANNOT_LOCK, NO, OK};
use sets3lock::proto::{Holder, LockUrl, TerraformInfo};
use sets3lock::{Client, Options};

pub(crate) fn status(url: &LockUrl, options: &Options, json: bool) -> u8 {
    let result =
        Client::in_store(url.scheme(), url.bucket(), options).and_then(|c| c.status(url.key()));
    match result {
        Err(e) if e.kind() == sets3lock::ErrorKind::Unreachable => {
            say!(
                "{url}: {e} (each request waits up to --timeout, {})",
                crate::output::human(options.request_timeout)
            );
            CANNOT_LOCK
        }
        Err(e) => {
            say!("{url}: {e}");
            CANNOT_LOCK
        }
        Ok(None) => {
            if json {
                out!("{{\"url\":{},\"held\":false}}", quote(&url.to_string()));
            } else {
                out!("{url}: free");
            }
            OK
        }
        Ok(Some((etag, holder))) if holder.is_free() => {
            let token = holder.fence().map_or(0, |f| f.token);
            if json {
                out!(
                    "{{\"url\":{},\"held\":false,\"fenced\":true,\"token\":{token},\"etag\":{}}}",
                    quote(&url.to_string()),
                    quote(etag.as_str())
                );
            } else {
                out!("{url}: free, last token {token} (fenced)");
            }
            OK
        }
        Ok(Some((etag, holder))) => {
            if json {
                out!("{}", holder_json(url, etag.as_str(), &holder));
            } else {
                let resting = matches!(&holder, Holder::Sets3lock(r) if r.cooldown);
                match holder.fence() {
                    _ if resting => out!("{url}: {}", crate::holder::describe(&holder)),
                    Some(f) => out!(
                        "{url}: held, token {}, by {}",
                        f.token,
                        crate::holder::describe(&holder)
                    ),
                    None => out!("{url}: held by {}", crate::holder::describe(&holder)),
                }
                out!(
                    "  ETag {} (sets3lock unlock {url} --etag {})",
                    etag.as_str(),
                    etag.as_str()
                );
            }
            NO
        }
    }
}

/// The holder as a JSON object, the same in `status --json` and `watch --json`: `kind`
/// (`sets3lock`, `terraform`, `go-sets3lock` or `unknown`) and what that kind of record says;
/// Terraform's lock info under `terraform`, with Terraform's field names, for a lock
/// Terraform or OpenTofu wrote and for a sets3lock record written in its format.
pub(crate) fn holder_object(holder: &Holder) -> String {
    match holder {
        Holder::Sets3lock(r) => {
            let mut s = format!(
                "{{\"kind\":\"sets3lock\",\"owner\":{},\"seq\":{},\"host\":{},\"pid\":{},\"lease_ms\":{},\"acquired_ms\":{},\"written_ms\":{}",
                quote(&r.owner.to_string()), r.seq, quote(&r.host), r.pid, r.lease.as_millis(), r.acquired_unix_ms, r.written_unix_ms
            );
            if let Some(v) = &r.value {
                s.push_str(&format!(",\"value\":{}", quote(v)));
            }
            if let Some(tf) = &r.terraform {
                s.push_str(&format!(",\"terraform\":{}", terraform_object(tf)));
            }
            s.push('}');
            s
        }
        Holder::Terraform(tf) => format!(
            "{{\"kind\":\"terraform\",\"terraform\":{}}}",
            terraform_object(tf)
        ),
        Holder::GoSets3lock { id, created_at } => format!(
            "{{\"kind\":\"go-sets3lock\",\"id\":{},\"created_at\":{}}}",
            quote(id),
            quote(created_at)
        ),
        Holder::Unknown { len, preview } => format!(
            "{{\"kind\":\"unknown\",\"len\":{len},\"preview\":{}}}",
            quote(preview)
        ),
    }
}

/// Terraform's seven fields as a JSON object, under their Go names.
fn terraform_object(tf: &TerraformInfo) -> String {
    format!(
        "{{\"ID\":{},\"Operation\":{},\"Info\":{},\"Who\":{},\"Version\":{},\"Created\":{},\"Path\":{}}}",
        quote(&tf.id),
        quote(&tf.operation),
        quote(&tf.info),
        quote(&tf.who),
        quote(&tf.version),
        quote(&tf.created),
        quote(&tf.path)
    )
}

pub(crate) fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn holder_json(url: &LockUrl, etag: &str, holder: &Holder) -> String {
    let mut s = format!(
        "{{\"url\":{},\"held\":true,\"etag\":{},\"holder\":{}",
        quote(&url.to_string()),
        quote(etag),
        holder_object(holder)
    );
    if let Some(f) = holder.fence() {
        s.push_str(&format!(",\"fenced\":true,\"token\":{}", f.token));
    }
    s.push('}');
    s
}
