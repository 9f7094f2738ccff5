//! One HTTP/1.1 exchange on a non-blocking socket, written by hand: the request the wire layer
//! built goes out as it is (`Connection: close`, one request per connection), and the reply
//! is read until it is complete. Plain `http` only: for `https`, put a TLS connection (rustls'
//! `ClientConnection`) between the socket and these buffers.

use bytes::Bytes;
use mio::net::TcpStream;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;

/// The most of a reply we keep: a lock record is a few hundred bytes; anything longer is
/// someone else's object, described by the reply table, not parsed.
const MAX_REPLY: usize = 64 * 1024;

/// How an exchange ended without a reply.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Nothing was written: the request certainly never reached the store.
    NotSent(String),
    /// Something was written: the request may have been applied.
    Broken(String),
}

/// Where an exchange stands after the socket was ready.
pub(crate) enum Progress {
    /// Still writing or reading.
    Pending,
    /// The reply, complete.
    Reply(http::Response<Bytes>),
    /// No reply will come.
    Failed(Failure),
}

/// One request on its own connection.
pub(crate) struct Exchange {
    pub(crate) stream: TcpStream,
    out: Vec<u8>,
    written: usize,
    reply: Vec<u8>,
}

impl Exchange {
    /// Starts connecting to `addr` to send `request` (the connection completes in the
    /// background; register `stream` for readable and writable events).
    pub(crate) fn start(
        addr: SocketAddr,
        request: &http::Request<Bytes>,
    ) -> Result<Exchange, Failure> {
        let stream = TcpStream::connect(addr).map_err(|e| Failure::NotSent(e.to_string()))?;
        Ok(Exchange {
            stream,
            out: encode(request),
            written: 0,
            reply: Vec::new(),
        })
    }

    /// Writes what the socket takes and reads what it has; says where that leaves us.
    pub(crate) fn advance(&mut self) -> Progress {
        while self.written < self.out.len() {
            match self.stream.write(&self.out[self.written..]) {
                Ok(0) => return Progress::Failed(self.failure("the connection closed")),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Progress::Pending,
                // Not connected yet: mio reports writable once the connection is made.
                Err(e) if e.kind() == ErrorKind::NotConnected => return Progress::Pending,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Progress::Failed(self.failure(&e.to_string())),
            }
        }
        let mut buf = [0u8; 8192];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    return match parse(&self.reply, End::Closed) {
                        Some(Ok(reply)) => Progress::Reply(reply),
                        Some(Err(e)) => Progress::Failed(Failure::Broken(e)),
                        None => Progress::Failed(Failure::Broken("the reply was cut short".into())),
                    };
                }
                Ok(n) => {
                    let room = MAX_REPLY.saturating_sub(self.reply.len());
                    self.reply.extend_from_slice(&buf[..n.min(room)]);
                    // At the cap the body is cut (as the drivers cut it) and the reply is done.
                    let capped = self.reply.len() >= MAX_REPLY;
                    let end = if capped { End::Capped } else { End::Open };
                    if let Some(done) = parse(&self.reply, end) {
                        return match done {
                            Ok(reply) => Progress::Reply(reply),
                            Err(e) => Progress::Failed(Failure::Broken(e)),
                        };
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Progress::Pending,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Progress::Failed(self.failure(&e.to_string())),
            }
        }
    }

    fn failure(&self, why: &str) -> Failure {
        match self.written {
            0 => Failure::NotSent(why.to_owned()),
            _ => Failure::Broken(why.to_owned()),
        }
    }
}

/// The request's bytes: the request line with the URI's path and query, `Host` from its
/// authority, every header the wire layer set, `Connection: close`, the body.
fn encode(request: &http::Request<Bytes>) -> Vec<u8> {
    let target = request.uri().path_and_query().map_or("/", |p| p.as_str());
    let host = request.uri().authority().map_or("", |a| a.as_str());
    let mut out =
        format!("{} {target} HTTP/1.1\r\nhost: {host}\r\n", request.method()).into_bytes();
    for (name, value) in request.headers() {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"connection: close\r\n\r\n");
    out.extend_from_slice(request.body());
    out
}

/// What may still come after the bytes at hand.
#[derive(Clone, Copy, PartialEq)]
enum End {
    /// More may come.
    Open,
    /// The server closed the connection: nothing more.
    Closed,
    /// We read no more (the reply passed `MAX_REPLY`): a longer body is cut here.
    Capped,
}

/// The reply in `buf` if it is complete; `None` while more is needed.
fn parse(buf: &[u8], end: End) -> Option<Result<http::Response<Bytes>, String>> {
    let eof = end != End::Open;
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut head = httparse::Response::new(&mut headers);
    let start = match head.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if eof => return Some(Err("the reply was cut short".into())),
        Ok(httparse::Status::Partial) => return None,
        Err(e) => return Some(Err(format!("not an HTTP reply: {e}"))),
    };
    let status = head.code.unwrap_or(0);
    let mut reply = http::Response::builder().status(status);
    let mut length = None;
    let mut chunked = false;
    for h in head.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
        }
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = h.value.eq_ignore_ascii_case(b"chunked");
        }
        reply = reply.header(h.name, h.value);
    }
    let rest = &buf[start..];
    let body = if matches!(status, 100..=199 | 204 | 304) {
        Some(Vec::new())
    } else if chunked {
        dechunk(rest)
    } else if let Some(n) = length {
        match end {
            End::Capped => Some(rest[..n.min(rest.len())].to_vec()),
            _ => rest.get(..n).map(<[u8]>::to_vec),
        }
    } else {
        eof.then(|| rest.to_vec())
    };
    let body = match body {
        Some(b) => b,
        None if eof => return Some(Err("the reply's body was cut short".into())),
        None => return None,
    };
    Some(reply.body(Bytes::from(body)).map_err(|e| e.to_string()))
}

/// A chunked body, once its last chunk has come.
fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&rest[..line]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_complete_by_its_length_its_last_chunk_or_the_end_of_the_stream() {
        let whole = b"HTTP/1.1 200 OK\r\netag: \"e\"\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(
            parse(&whole[..whole.len() - 1], End::Open).map(|r| r.is_ok()),
            None
        );
        let r = parse(whole, End::Open).expect("complete").expect("valid");
        assert_eq!((r.status().as_u16(), r.body().as_ref()), (200, &b"{}"[..]));
        let chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        let r = parse(chunked, End::Open).expect("complete").expect("valid");
        assert_eq!(r.body().as_ref(), b"{}");
        let unframed = b"HTTP/1.1 412 Precondition Failed\r\n\r\n<Error/>";
        assert!(parse(unframed, End::Open).is_none());
        let r = parse(unframed, End::Closed)
            .expect("complete")
            .expect("valid");
        assert_eq!(r.body().as_ref(), b"<Error/>");
        let not_modified = b"HTTP/1.1 304 Not Modified\r\netag: \"e\"\r\n\r\n";
        assert_eq!(
            parse(not_modified, End::Open)
                .expect("complete")
                .expect("valid")
                .status(),
            304
        );
        assert!(matches!(
            parse(
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n{}",
                End::Closed
            ),
            Some(Err(_))
        ));
        assert!(matches!(
            parse(b"SSH-2.0-OpenSSH\r\n", End::Closed),
            Some(Err(_))
        ));
        // Someone else's big object: the body is cut at the cap, and the reply is done.
        let big = b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\nxyz";
        assert!(parse(big, End::Open).is_none());
        let r = parse(big, End::Capped).expect("complete").expect("valid");
        assert_eq!(r.body().as_ref(), b"xyz");
    }
}
