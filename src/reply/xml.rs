//! The XML error document S3 and Azure send with a refusal: its `<Code>` and `<Message>`.

/// An XML error document's `<Code>` and `<Message>` (S3's, and Azure's when its
/// `x-ms-error-code` header is missing).
///
/// ```
/// let e = sets3lock_proto::reply::XmlErrorBody::parse(
///     b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>gone &amp; done</Message></Error>");
/// assert_eq!(e.code.as_deref(), Some("NoSuchKey"));
/// assert_eq!(e.message.as_deref(), Some("gone & done"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XmlErrorBody {
    /// The error code.
    pub code: Option<String>,
    /// The message for people.
    pub message: Option<String>,
}

impl XmlErrorBody {
    /// Extracts the code and message from an error body. Tolerant: a body that is not an XML
    /// error document yields neither.
    ///
    /// ```
    /// assert_eq!(sets3lock_proto::reply::XmlErrorBody::parse(b"oops"), Default::default());
    /// ```
    pub fn parse(body: &[u8]) -> XmlErrorBody {
        let body = &body[..body.len().min(16 * 1024)];
        let text = String::from_utf8_lossy(body);
        XmlErrorBody {
            code: element(&text, "Code", 64)
                .filter(|c| c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')),
            message: element(&text, "Message", 300),
        }
    }
}

/// The text of the first `<name>…</name>` element, unescaped, trimmed, at most `max` chars.
pub(crate) fn element(text: &str, name: &str, max: usize) -> Option<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = text.find(&open)? + open.len();
    let len = text[start..].find(&close)?;
    let raw = text[start..start + len].trim();
    let value: String = unescape(raw).chars().take(max).collect();
    (!value.is_empty()).then_some(value)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}
