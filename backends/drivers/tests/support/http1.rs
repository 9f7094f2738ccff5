//! Just enough HTTP/1.1 for the test servers: one request or response at a time, bodies
//! framed by Content-Length.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

pub struct Message {
    pub start: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Message {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one message; `None` at a clean end of the connection.
pub async fn read(reader: &mut (impl AsyncBufRead + Unpin)) -> Option<Message> {
    let mut start = String::new();
    if reader.read_line(&mut start).await.ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let mut message = Message {
        start: start.trim_end().to_owned(),
        headers,
        body: Vec::new(),
    };
    let length: usize = message
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    message.body = body;
    Some(message)
}
