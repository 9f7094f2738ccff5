//! `Content-MD5`: what binds a write's body to its signature.

/// The `Content-MD5` of a body (base64 of its MD5), as S3 and Azure want it. Signed with the
/// request, it binds the body to the signature: a PUT captured from a log or a proxy cannot be
/// replayed with another body (S3 and compatible stores answer `400 BadDigest`, Azure `400
/// Md5Mismatch`, when the body does not match; a changed or missing header breaks the
/// signature).
///
/// ```
/// assert_eq!(sets3lock_wire::content_md5(b"{}"), "mZFLkyvTelC5g8XnyQrpOw==");
/// ```
pub fn content_md5(body: &[u8]) -> String {
    use base64::Engine as _;
    use md5::Digest as _;
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body))
}
