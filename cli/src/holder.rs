//! How the command describes a lock holder to people.

use sets3lock::proto::Holder;

/// "host pid N since 2026-11-30T10:00:00Z, lease 60s", or what is known of a foreign holder.
pub(crate) fn describe(holder: &Holder) -> String {
    match holder {
        Holder::Sets3lock(r) => {
            let since = jiff::Timestamp::from_millisecond(r.acquired_unix_ms as i64)
                .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_else(|_| "an unknown time".into());
            let lease = if r.lease.is_zero() {
                "no lease (never expires)".to_string()
            } else {
                format!("lease {:?}", r.lease)
            };
            let token = r
                .fence
                .map(|f| format!(", token {}", f.token))
                .unwrap_or_default();
            let value = r
                .value
                .as_ref()
                .map(|v| format!(", value {v:?}"))
                .unwrap_or_default();
            if r.cooldown {
                let written = jiff::Timestamp::from_millisecond(r.written_unix_ms as i64)
                    .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
                    .unwrap_or_else(|_| "an unknown time".into());
                return format!(
                    "resting (--hold-at-least): not to be taken before its lease of {:?} from {written} runs out; last run by {} pid {}{token}",
                    r.lease, r.host, r.pid
                );
            }
            let terraform = r
                .terraform
                .as_ref()
                .map(|tf| format!(", Terraform lock ID {}", tf.id))
                .unwrap_or_default();
            format!(
                "{} pid {} since {since} ({lease}, owner {}{token}{value}{terraform})",
                r.host, r.pid, r.owner
            )
        }
        Holder::Terraform(tf) => format!(
            "Terraform or OpenTofu: {tf}; it declares no lease, so it is never taken over (it ends when Terraform unlocks it, or with `sets3lock unlock --id {}`)",
            tf.id
        ),
        other => other.to_string(),
    }
}
