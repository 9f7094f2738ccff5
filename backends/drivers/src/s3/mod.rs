//! Amazon S3 and S3-compatible stores: SigV4 presigning (rusty-s3), the server's clock and the
//! resend after a time refusal, the addressing, credentials and profiles. Replies are read by
//! the core's S3 reply table ([`sets3lock_proto::reply::s3::classify`]).

pub(crate) mod credentials;
pub(crate) mod profile;
pub(crate) mod settings;
pub(crate) mod sign;
pub(crate) mod store;
