//! The core's tests, one binary (linked once): scenarios driven against the mock, the reply
//! tables cell by cell, URLs, handles, watching and slots. The simulation and the exhaustive
//! exploration are binaries of their own (`--test simulation`, `--test exhaustive`), for
//! their long runs.

mod scenario;

mod api;
mod edges;
mod fenced;
mod handles;
mod handoff;
mod hold_at_least;
mod limits;
mod messages;
mod pacing;
mod protocol;
mod recovery;
mod reply_table;
mod reply_table_azure;
mod reply_table_gcs;
mod slots;
mod stores;
mod terraform;
mod urls;
mod vectors;
mod waiting;
mod watch;
