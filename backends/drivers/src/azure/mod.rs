//! Azure Blob Storage (`az://container/key`, feature `azure`): the Blob REST API with its own
//! conditional headers (`If-None-Match: *`, `If-Match`), signed with Shared Key, carried by a
//! SAS token, or with an Entra ID bearer token (over https), `x-ms-version` pinned. Replies are read by the core's Azure reply table
//! ([`sets3lock_proto::reply::azure::classify`]).

pub(crate) mod settings;
pub(crate) mod store;
