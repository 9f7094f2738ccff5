//! The command under test: the real binary, run with one server's credentials and nothing
//! else from the AWS environment (a `TestCommand` harness in the manner of ripgrep's).

use super::Server;
use std::process::{Command, Output, Stdio};

/// Runs the binary with the server's credentials and nothing else from the AWS environment.
pub struct TestCommand {
    pub cmd: Command,
}

impl TestCommand {
    pub fn new(s: &Server) -> TestCommand {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sets3lock"));
        for (k, _) in std::env::vars() {
            if k.starts_with("AWS_") {
                cmd.env_remove(k);
            }
        }
        cmd.env("AWS_ACCESS_KEY_ID", &s.access_key)
            .env("AWS_SECRET_ACCESS_KEY", &s.secret)
            .env("AWS_ENDPOINT_URL", &s.endpoint)
            .env("AWS_REGION", "us-east-1")
            .env("HOME", std::env::temp_dir())
            // No metadata service off this machine, whatever a test leaves out.
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AZURE_IMDS_DISABLED", "true")
            .env("NO_GCE_CHECK", "true");
        TestCommand { cmd }
    }

    /// Without the server's keys: the rest of the AWS chain signs.
    pub fn without_keys(mut self) -> TestCommand {
        self.cmd
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY");
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(
        mut self,
        args: I,
    ) -> TestCommand {
        self.cmd.args(args);
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> TestCommand {
        self.cmd.env(k, v);
        self
    }

    pub fn output(mut self) -> Output {
        self.cmd
            .stdin(Stdio::null())
            .output()
            .expect("run sets3lock")
    }

    /// Runs it with a stdout nobody reads (`sets3lock status ... | head -0`).
    pub fn output_into_a_closed_pipe(mut self) -> Output {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        self.cmd
            .stdin(Stdio::null())
            .stdout(writer)
            .output()
            .expect("run sets3lock")
    }

    pub fn spawn(mut self) -> std::process::Child {
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sets3lock")
    }
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// One clear line on stderr, naming what is wrong.
pub fn one_line(o: &Output, mentions: &str) {
    let err = stderr(o);
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "expected one line, got: {err}"
    );
    assert!(
        err.to_lowercase().contains(&mentions.to_lowercase()),
        "{err:?} should mention {mentions:?}"
    );
}
