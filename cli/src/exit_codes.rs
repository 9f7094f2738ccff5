//! Every exit status the command uses, in one place (setlock's conventions).

/// The program ran and exited 0, or an operator command succeeded.
pub(crate) const OK: u8 = 0;
/// `status`: the lock is held. `doctor`: the store cannot protect a lock. `unlock`: the lock
/// is held under another ETag (nothing deleted).
pub(crate) const NO: u8 = 1;
/// Usage error: unknown flag, malformed URL or duration, missing program.
pub(crate) const USAGE: u8 = 100;
/// The lock could not be had (held, timed out), the program could not be started, or the store
/// failed (missing bucket, denied, unreachable). With `-x`, 0 when the lock is held elsewhere.
pub(crate) const CANNOT_LOCK: u8 = 111;
/// The lock was lost or expired while the program ran: the program was stopped.
pub(crate) const LOST: u8 = 112;

/// The status for a program that died of signal `n`.
pub(crate) fn signalled(n: i32) -> u8 {
    u8::try_from(128 + n).unwrap_or(255)
}
