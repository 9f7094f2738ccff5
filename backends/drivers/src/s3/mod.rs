//! Amazon S3 and S3-compatible stores: requests presigned by the wire layer
//! ([`sets3lock_wire::s3`]) at the server's time, the resend after a time refusal, the
//! addressing, the credentials (found by `signin/aws/`). Replies are read by
//! the core's S3 reply table ([`sets3lock_proto::reply::s3::classify`]).

pub(crate) mod credentials;
pub(crate) mod settings;
pub(crate) mod store;
